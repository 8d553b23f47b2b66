"""The toolchain a newcomer meets: `make` accepts exactly the Pythons pyproject.toml's `requires-python` names (and
refuses any other in one line, before creating a venv), and `python -m plan` runs from any directory of the checkout
(the venv's site-packages lists the checkout in a .pth file) while a current directory still comes first, as
`--diff-against` needs for the revision it plans in a git worktree. Fast, no network: no venv gets a package here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from decimal import Decimal
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from helpers import ROOT, plan_of

MAKE = shutil.which("make")
MAJOR, MINOR, MICRO = sys.version_info[:3]
ME = f"{MAJOR}.{MINOR}.{MICRO}"
PTH = "ray-tpu-gke-checkout.pth"

pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what a calling `make` or a user's shell would leak into the child."""
    leaks = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PYTHONPATH", "PYTHONHOME")
    return dict({k: v for k, v in os.environ.items() if k not in leaks}, **extra)


def make(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([MAKE, "--no-print-directory", *args], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def checkout(tmp_path):
    """A copy of the files the Makefile reads, with `requires-python` set to the range given."""
    for name in ("Makefile", "pyproject.toml", "requirements.txt", "requirements-checkov.txt"):
        shutil.copy2(ROOT / name, tmp_path / name)

    def with_range(spec: str) -> Path:
        path = tmp_path / "pyproject.toml"
        text, count = re.subn(r'(?m)^requires-python = ".*"$', f'requires-python = "{spec}"', path.read_text())
        assert count == 1, "pyproject.toml has no requires-python line"
        path.write_text(text)
        return tmp_path

    return with_range


def test_this_python_is_in_the_supported_range():
    text = (ROOT / "pyproject.toml").read_text()
    spec = re.search(r'(?m)^requires-python = "(.*)"$', text).group(1)
    assert SpecifierSet(spec).contains(ME), (spec, ME)
    done = make("check-python", f"PYTHON={sys.executable}", cwd=ROOT)
    assert done.returncode == 0 and not done.stderr, done.stderr


@pytest.mark.parametrize("spec", [
    f">={MAJOR}.{MINOR}", f">{ME}", f"<{MAJOR}.{MINOR}", f"=={MAJOR}.{MINOR}.*", f"!={MAJOR}.{MINOR}.*", f"=={ME}",
    f">={MAJOR}.{MINOR},<{MAJOR}.{MINOR + 1}", f">={MAJOR}.{MINOR}, !={ME}", f"~={MAJOR}.{MINOR}",
    f"~={MAJOR}.{MINOR}.{MICRO + 1}", f"<={MAJOR}.{MINOR}", f">={MAJOR}.{MINOR}.{MICRO + 1}",
])
def test_make_reads_the_range_from_pyproject(checkout, spec):
    """Change requires-python and the Makefile's guard follows it, with the same answer as packaging's."""
    done = make("check-python", f"PYTHON={sys.executable}", cwd=checkout(spec))
    assert (done.returncode == 0) == SpecifierSet(spec).contains(ME), (spec, ME, done.stderr)


@pytest.mark.parametrize("target", ["plan", "test"])
def test_make_refuses_an_unsupported_python_before_creating_a_venv(checkout, target):
    folder = checkout(f">{ME}")
    done = make(target, f"PYTHON={sys.executable}", cwd=folder)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert ours == [f"{sys.executable} is Python {ME}; this project needs Python >{ME} (pyproject.toml "
                    f"requires-python): run make with PYTHON=/path/to/a/supported/python3"], done.stderr
    assert "Traceback" not in done.stderr and "-m venv" not in done.stdout
    assert not (folder / ".venv").exists() and not (folder / ".venv-checkov").exists()


def test_venv_set_up_lists_the_checkout(tmp_path):
    """The Makefile's recipe, on a bare venv: the .pth names this checkout, so `plan` imports from anywhere."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_env())
    (venv / ".requirements-installed").touch()  # as if installed: nothing to download
    done = make(f"VENV={venv}", f"{venv}/.checkout-on-path", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    probe = "import importlib.util; print(importlib.util.find_spec('plan').origin)"
    found = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env(),
                           capture_output=True, text=True, check=True)
    assert Path(found.stdout.strip()) == ROOT / "plan" / "__init__.py"


def venv_lists_checkout() -> bool:
    path = Path(sysconfig.get_path("purelib")) / PTH
    return path.is_file() and Path(path.read_text().strip()).resolve() == ROOT


@pytest.mark.parametrize("folder", ["stacks", "tests"])
def test_plan_runs_from_a_subdirectory(folder):
    assert venv_lists_checkout(), f"{sys.prefix} has no {PTH} naming {ROOT}: let `make plan` or `make test` set it up"
    done = subprocess.run([sys.executable, "-m", "plan", "dev", "--json"], cwd=ROOT / folder, env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan.pop("cost")["currency"] == "USD"  # the CLI adds the estimate and the version set; the rest is the
    assert plan.pop("versions")["gke"]["releaseChannel"]  # harness's plan
    assert plan == plan_of("dev")


def test_current_directory_comes_before_the_checkout(tmp_path):
    """`--diff-against` runs `python -m plan` with cwd (and PYTHONPATH) = a worktree: its own `plan` must win."""
    assert venv_lists_checkout(), f"{sys.prefix} has no {PTH} naming {ROOT}: let `make plan` or `make test` set it up"
    package = tmp_path / "plan"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("print(__file__)\n")
    for env in (clean_env(), clean_env(PYTHONPATH=str(tmp_path))):
        done = subprocess.run([sys.executable, "-m", "plan"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=True)
        assert Path(done.stdout.strip()).resolve() == (package / "__main__.py").resolve()


def test_ci_output_ends_with_the_test_suite():
    """CI reads pytest's closing summary: `make test` is .ci/run's last command, after the Debian Python's plan."""
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert commands[-1] == "make test"
    debian = next(i for i, line in enumerate(commands) if re.search(r"\bmake plan PYTHON=\S+ VENV=\S+", line))
    assert debian < len(commands) - 1


# --- the console script, installed with the package, in projects of its own ----------------------------------------

def _console(venv: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in clean_env().items() if k not in ("VIRTUAL_ENV",)}
    return subprocess.run([str(venv / "bin" / "ray-tpu-gke"), *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`pip install` of a copy of the sources into a fresh venv outside the repository, as tests/test_library.py
    does (dependencies from this .venv's site-packages through a .pth), and the two examples copied into a git
    repository of their own: a team's repository using the package."""
    base = tmp_path_factory.mktemp("toolchain")
    source = base / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("components", "plan", "policy", "workloads"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps",
                              "--disable-pip-version-check", str(source)], env=clean_env(), capture_output=True,
                             text=True, timeout=600)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True, env=clean_env()).stdout.strip())
    (site / "ray-tpu-gke-dependencies.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    team = base / "team"
    for example in ("existing-cluster", "own-config"):
        shutil.copytree(ROOT / "examples" / example, team / example, ignore=shutil.ignore_patterns("__pycache__"))
    from helpers import git

    git(team, "init", "-q", "-b", "main")
    git(team, "add", "-A")
    git(team, "commit", "-q", "-m", "the team's platform")
    return venv, site, team


def test_console_script_is_installed_and_nothing_of_the_checkout_is(installed):
    venv, site, team = installed
    assert (venv / "bin" / "ray-tpu-gke").is_file()
    assert (site / "ray_tpu_gke_tools" / "policy" / "PulumiPolicy.yaml").is_file()
    assert not (site / "plan").exists() and not (site / "policy").exists()
    done = _console(venv, team, "--help")
    assert done.returncode == 0
    assert all(command in done.stdout for command in ("plan", "verify", "compare", "diagram", "policy"))
    lost = _console(venv, team, "plan", "dev")  # the repository root holds no Pulumi.yaml
    assert lost.returncode == 1
    assert lost.stderr.strip().startswith("error: no Pulumi.yaml in ") and "Traceback" not in lost.stderr


def test_console_script_plans_and_prices_the_existing_cluster_example(installed):
    from ray_tpu_gke.catalog import prices

    venv, _, team = installed
    folder = team / "existing-cluster"
    text = _console(venv, folder, "plan", "dev")
    assert text.returncode == 0, text.stderr
    assert "Previewing update (dev)" in text.stdout and "tpu-existing-cluster-dev" in text.stdout
    assert "TPU capacity" in text.stdout and "ct6e-standard-4t" in text.stdout and "ray/train:tpu" in text.stdout
    assert "PREEMPTIBLE-TPU-V6E-per-project-region" in text.stdout

    done = _console(venv, folder, "plan", "dev", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["project"] == "tpu-existing-cluster" and plan["stack"] == "dev"
    pools = {s["newState"]["name"]: s["newState"]["inputs"] for s in plan["steps"]
             if s["newState"]["type"] == "gcp:container/nodePool:NodePool"}
    assert pools["v6e-16-0"]["nodeConfig"]["serviceAccount"] == "tpu-nodes@acme-ml.iam.gserviceaccount.com"
    # The slice (16 spot v6e chips) and the program's own system pool (e2-standard-8, 1 to 3 nodes) at list prices;
    # the cluster is not the program's, so neither its system pool default nor a GKE fee is counted.
    table = prices.load_table()
    chip = prices.find_rate("tpu", "v6e", "spot", "us-east5", [], table).hourly
    node = prices.find_rate("cpu", "e2-standard-8", "onDemand", "us-east5", [], table).hourly
    cost = plan["cost"]
    assert {(i["name"], i["kind"]) for i in cost["items"]} == {("v6e-16", "tpuSlice"), ("system", "cpuPool")}
    assert Decimal(str(cost["total"]["hourly"])) == 16 * chip + node
    assert cost.get("fees", []) == []

    manifests = _console(venv, folder, "plan", "dev", "--manifests")
    assert manifests.returncode == 0 and "kind: RayCluster" in manifests.stdout

    bad = folder / "Pulumi.bad.yaml"
    bad.write_text((folder / "Pulumi.dev.yaml").read_text() + "  tpu-existing-cluster:topology: 3x3\n")
    invalid = _console(venv, folder, "plan", "bad")
    bad.unlink()
    assert invalid.returncode == 2 and "Traceback" not in invalid.stderr
    assert 'TpuSlicePools(v6e-16).args.slice.topology: "3x3" is not a v6e topology' in invalid.stderr

    refused = _console(venv, folder, "verify", "dev", "--context", "none")
    assert refused.returncode == 1 and "`ray-tpu-gke plan` serves it" in refused.stderr


def test_console_script_diffs_the_example_against_git(installed):
    venv, _, team = installed
    folder = team / "existing-cluster"
    stack = folder / "Pulumi.dev.yaml"
    committed = stack.read_text()
    stack.write_text(committed + "  tpu-existing-cluster:topology: 2x4\n")
    try:
        done = _console(venv, folder, "plan", "dev", "--diff-against", "main", "--format", "json")
        gated = _console(venv, folder, "plan", "dev", "--diff-against", "main", "--fail-on-risk")
    finally:
        stack.write_text(committed)
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)
    ops = {c["urn"].rsplit("::", 1)[-1]: c["op"] for c in diff["changes"]}
    assert ops["v6e-16-0"] == "replace"  # a new machine type: GKE replaces the pool, the slice is lost
    assert gated.returncode == 3, gated.stderr


def test_console_script_plans_the_own_config_example_and_runs_the_policy_pack(installed):
    venv, _, team = installed
    folder = team / "own-config"
    dev = _console(venv, folder, "plan", "dev", "--json")
    assert dev.returncode == 0, dev.stderr
    plan = json.loads(dev.stdout)
    assert plan["project"] == "tpu-own-config"
    assert {i["name"] for i in plan["cost"]["items"]} == {"v6e-8", "v6e-16", "system"}
    # prod's reserved slice has no list price: the plan still prints, names the missing rate, carries no amounts.
    prod = _console(venv, folder, "plan", "prod", "--json")
    assert prod.returncode == 0, prod.stderr
    assert [m["capacity"] for m in json.loads(prod.stdout)["cost"]["missing"]] == ["reservation"]
    policy = _console(venv, folder, "plan", "dev", "--policy-pack")
    assert policy.returncode in (0, 1) and "Traceback" not in policy.stderr
    assert "policy violation" in policy.stdout.lower(), policy.stdout[-2000:]


def test_console_script_in_this_repository_is_python_m_plan():
    """This repository is one project of the toolchain: `ray-tpu-gke plan` in it prints `python -m plan`'s JSON."""
    script = Path(sys.executable).parent / "ray-tpu-gke"
    assert script.is_file(), f"{sys.prefix} has no ray-tpu-gke: `make` reinstalls the package when pyproject changes"
    mine = subprocess.run([str(script), "plan", "dev", "--json"], cwd=ROOT / "stacks", env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    theirs = subprocess.run([sys.executable, "-m", "plan", "dev", "--json"], cwd=ROOT, env=clean_env(),
                            capture_output=True, text=True, timeout=300)
    assert mine.returncode == theirs.returncode == 0, mine.stderr + theirs.stderr
    assert json.loads(mine.stdout) == json.loads(theirs.stdout)
