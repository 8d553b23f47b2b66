"""Shared test helpers: plans of the committed stacks (each computed once per session) and small config builders."""

from __future__ import annotations

import copy
import functools
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from plans import program_plan

from plan import harness, stackfile, steps
from ray_tpu_gke.spec.config import parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError

ROOT = Path(__file__).resolve().parent.parent

# Pulumi type tokens as a plan names its steps (`<package>:<module>/<name>:<Name>`), written out here, apart from the
# library's components/catalog/resource_types.py, for the tests to pick steps by.
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
METRIC_DESCRIPTOR = "gcp:monitoring/metricDescriptor:MetricDescriptor"
CRONJOB = "kubernetes:batch/v1:CronJob"
RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAY_JOB = "kubernetes:ray.io/v1:RayJob"
RAY_SERVICE = "kubernetes:ray.io/v1:RayService"
STACKS = stackfile.stacks()


@functools.lru_cache(maxsize=None)
def _plan(stack: str, preview: bool) -> harness.Plan:
    values, secrets = stackfile.load(stack)
    return program_plan(stack, values, secrets, preview=preview)  # the plan `plan_output` prints, too


def plan_of(stack: str, preview: bool = False) -> dict:
    """The plan JSON of a committed stack (a fresh copy: tests may change it)."""
    return copy.deepcopy(_plan(stack, preview).to_json())


def config_of(stack: str):
    values, _ = stackfile.load(stack)
    return parse_stack_config(values, stack)


def steps_of_type(plan: dict, type_: str) -> list[dict]:
    return list(steps.steps_of_type(plan["steps"], type_))


def minimal_values(**overrides: Any) -> dict[str, Any]:
    """A small valid config map (one single-host v6e slice, one RayCluster); keyword overrides replace keys."""
    values = {
        "gcp:project": "acme-ml-test",
        "gcp:region": "us-east5",
        "ray-tpu-gke:cluster": {"name": "ray-tpu", "location": "us-east5-b", "deletionProtection": False},
        "ray-tpu-gke:tpuSlices": [{"name": "v6e-4", "generation": "v6e", "topology": "2x2"}],
        "ray-tpu-gke:rayClusters": [
            {"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}
        ],
    }
    for key, value in overrides.items():
        values[f"ray-tpu-gke:{key}" if ":" not in key else key] = value
    return values


def module_from_file(path: Path, name: str) -> types.ModuleType:
    """A Python file that is no module of a package (a script, a plugin's entry point) loaded as module NAME."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def maintained_cluster(**maintenance: Any) -> dict[str, Any]:
    """minimal_values' cluster with these maintenance settings (`window`, `exclusions`)."""
    return {**minimal_values()["ray-tpu-gke:cluster"], "maintenance": maintenance}


def run(values: dict[str, Any], stack: str = "test", preview: bool = False) -> dict:
    return harness.run_program(stack, values, preview=preview).to_json()



def prod_plan(channels: list[str], **monitoring) -> harness.Plan:
    """The prod stack's plan with these notification channels (whatever the committed stack file lists)."""
    values, secrets = stackfile.load("prod")
    values["ray-tpu-gke:monitoring"] = {**values.get("ray-tpu-gke:monitoring", {}), **monitoring,
                                        "notificationChannels": channels}
    return harness.run_program("prod", values, secrets)


# --- what a refused config reports ---------------------------------------------------------------------------------

def problems(source: dict[str, Any] | Path, stack: str = "test", *, refused: bool = True, one_line: bool = False,
             stack_keys: bool = False) -> list[str]:
    """The problem lines of the ConfigError a config is refused with: config values as `parse_stack_config` reads
    them, or a stack file (a Path) as the plan loads it (`stackfile.load_checked`). `refused=False`: a valid config
    gives []. `one_line`: every problem is one line; `stack_keys`: every problem names a stack key (`ray-tpu-gke:`,
    `gcp:`), never a component argument path (`.args`)."""
    def load() -> None:
        if isinstance(source, Path):
            stackfile.load_checked(stack, config_file=source)
        else:
            parse_stack_config(source, stack)

    if refused:
        with pytest.raises(ConfigError) as error:
            load()
        found = [str(p) for p in error.value.problems]
    else:
        try:
            load()
        except ConfigError as refusal:
            found = [str(p) for p in refusal.problems]
        else:
            return []
    for line in found:
        assert not one_line or ("\n" not in line and len(line.splitlines()) == 1), line
        assert not stack_keys or (".args" not in line and line.startswith(("ray-tpu-gke:", "gcp:"))), line
    return found


def one_problem(values: dict[str, Any], key: str | None = None, **checks: bool) -> str:
    """The one problem line a config is refused with (`problems`' checks apply); `key`: the key path it names."""
    found = problems(values, **checks)
    assert len(found) == 1, found
    assert key is None or found[0].startswith(f"{key}: "), found
    return found[0]


# --- a hang turned into a failure ------------------------------------------------------------------------------------

# Seconds before a read counts as hung: far above the milliseconds a stack file's read takes (docs/benchmarks.md),
# far below the minutes of an unguarded alias bomb, so a machine busy with other work cannot fail them.
HANG_GUARD_S = 60


@contextmanager
def deadline(seconds: float = HANG_GUARD_S):
    """Turns a hang into a failure (SIGALRM; the tests run in the main thread). An outer timer, such as
    pytest-timeout's (pytest.ini), is put back afterwards with the time it has left."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))

# --- a copy of the project in a git repository of its own, for the diff's end-to-end tests --------------------------

PROJECT_FILES = ("Pulumi.yaml", "__main__.py", "components", "plan", "policy", "stacks")
GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.com", GIT_COMMITTER_NAME="test",
               GIT_COMMITTER_EMAIL="test@example.com", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def project_repo(repo: Path) -> Path:
    """`repo` holding a copy of the project, as a new git repository on `main` with nothing committed yet."""
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    return repo


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what a calling `make`, venv or shell would leak into a child: nothing that
    puts the checkout or another venv on its path."""
    leaks = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return dict({k: v for k, v in os.environ.items() if k not in leaks}, **extra)


# --- a virtualenv for an installed copy of the package ------------------------------------------------------------

def fresh_venv(folder: Path, env: dict[str, str]) -> str:
    """A new virtualenv at FOLDER, and its python. Without a pip of its own: ensurepip spends ~3 s installing one, and
    `pip_into` installs with this interpreter's pip instead (the files it writes are the same)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True,
                   env=env)
    return str(folder / "bin" / "python")


def pip_into(python: str, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`pip install ARGS` into the environment of PYTHON, by this interpreter's pip (`pip --python`, pip >= 22.3)."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--disable-pip-version-check",
                           *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# --- the workloads interpreter (Ray 2.60 and JAX, in a virtualenv of their own) ------------------------------------

def venv_python(variable: str, folder: str, what: str, requirements: str) -> str:
    """$VARIABLE, else the checkout's FOLDER/bin/python; without either the calling test is skipped, saying which
    make target builds it."""
    configured = os.environ.get(variable)
    if configured:
        if not os.access(configured, os.X_OK):
            pytest.fail(f"{variable}={configured} is not an executable")
        return configured
    local = ROOT / folder / "bin" / "python"
    if not os.access(local, os.X_OK):
        pytest.skip(f"no {what} virtualenv: set {variable} to its python, or run `make test-tools`, which builds "
                    f"{folder} from {requirements}")
    return str(local)


def workloads_python() -> str:
    """The workloads interpreter: Ray and JAX (`make test` and `make test-ray` build it)."""
    return venv_python("WORKLOADS_PYTHON", ".venv-workloads", "workloads", "requirements-workloads.txt")


def run_workloads_script(script: str, tmp_path_factory, what: str, timeout: float) -> dict:
    """The script half of a local Ray test module (`python SCRIPT OUT.json` in the workloads interpreter), and the
    JSON document it wrote; the test fails with the script's last stderr when it wrote none or outran `timeout`.

    Each timeout in these modules guards against a hang, not a slow run: a loaded two-core machine has taken more
    than 300 s for a multislice recovery and 290 s for two short fits."""
    python = workloads_python()
    out = tmp_path_factory.mktemp(Path(script).stem) / "seen.json"
    try:
        run = subprocess.run([python, str(script), str(out)], cwd=ROOT, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired as hung:
        printed = hung.stderr or b""  # bytes whatever `text` says (subprocess.run, POSIX)
        printed = printed.decode(errors="replace") if isinstance(printed, bytes) else printed
        pytest.fail(f"{what} did not end within {timeout:.0f} s:\n{printed[-6000:]}")
    if run.returncode != 0 or not out.exists():
        pytest.fail(f"{what} failed ({run.returncode}):\n{run.stderr[-6000:]}")
    return json.loads(out.read_text())



def checkov_path() -> str | None:
    """Checkov: $CHECKOV, else the checkout's .venv-checkov (`make test-tools`), else one on PATH; None without."""
    configured = os.environ.get("CHECKOV")
    if configured:
        if not (Path(configured).is_file() and os.access(configured, os.X_OK)):
            pytest.fail(f"CHECKOV={configured} is not an executable")
        return configured
    local = ROOT / ".venv-checkov" / "bin" / "checkov"
    if local.is_file():
        return str(local)
    return shutil.which("checkov")

# --- a stand-in kubectl in-process ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _script_module(script: str) -> types.ModuleType:
    loader = importlib.machinery.SourceFileLoader(f"stand_in_{abs(hash(script))}", script)
    module = types.ModuleType(loader.name)
    loader.exec_module(module)
    return module


class InProcessKubectl:
    """plan.verify.kubectl's `subprocess` in a test (monkeypatch it in): each `kubectl ARGS` that Kubectl.run starts
    is `main(ARGS)` of the stand-in script (tests/data/*/kubectl) run in this process, with its stdin, stdout, stderr
    and exit status as a child's would be. Kubectl.run's own code is unchanged; a run makes tens to hundreds of calls,
    and an interpreter each added only its start-up. Where the stand-in is a real executable on PATH behind the same
    Kubectl.run: tests/plan/test_verify.py (`on_path`) and tests/project/test_package.py."""

    TimeoutExpired = subprocess.TimeoutExpired

    def __init__(self, script: Path):
        self.script = str(script)

    def run(self, argv, input=None, capture_output=False, text=False, timeout=None):
        assert argv[0] == "kubectl" and capture_output and text and timeout, argv
        streams = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), io.StringIO(), io.StringIO()
        try:
            code = _script_module(self.script).main(list(argv[1:]))
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
        finally:
            sys.stdin, sys.stdout, sys.stderr = streams
        return subprocess.CompletedProcess(list(argv), code, out, err)
