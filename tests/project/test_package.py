"""The artifact an adopter installs: `python -m build` makes the sdist and the wheel (the wheel built from the
sdist, so the sdist holds what the wheel needs), `twine check` passes both, and the wheel, installed into a fresh
virtualenv outside the checkout, runs every `ray-tpu-gke` command in projects of their own: `--help` of each, and
`plan`, `diagram`, `policy`, `verify` (against the stand-in kubectl of tests/data/verify/) and, in the Ray lane
(`make test-ray`), `compare --local` (a local Ray cluster in the workloads interpreter, $WORKLOADS_PYTHON) for real.

One build and one virtualenv for the module (`installed`). The virtualenv gets the wheel alone (`--no-deps`); its
dependencies come from this interpreter's site-packages through a .pth line, which adds that folder to sys.path but
runs none of its own .pth files (site.addpackage), so neither the editable install nor the checkout's .pth reach
it: `import plan` fails there, and `ray_tpu_gke` is the wheel's. Slow (a build, a venv): `-m "not installed_wheel"`
deselects it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import ROOT, clean_env, fresh_venv, git, pip_into, workloads_python
from stand_in_cluster import kubectl_on_path

pytestmark = pytest.mark.installed_wheel

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
COMMANDS = ("plan", "verify", "compare", "diagram", "policy")
# What the checkout holds beside the sources: never part of an artifact, and too big or too local to copy.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv*", "venv", "__pycache__", "*.pyc", "build", "dist", "*.egg-info",
                                     ".pytest_cache", ".ruff_cache", ".mypy_cache", "compare-report")


def _run(args: list[str], cwd: Path, timeout: int = 600, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, Path]:
    """`python -m build` of a copy of the checkout (the build writes its egg-info beside the sources): the sdist, and
    the wheel build makes from the unpacked sdist."""
    base = tmp_path_factory.mktemp("package")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    done = _run([sys.executable, "-m", "build", "--outdir", str(base / "dist"), str(source)], cwd=base)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = {path.suffix: path for path in (base / "dist").iterdir()}
    assert set(found) == {".gz", ".whl"}, found
    assert found[".whl"].name == f"ray_tpu_gke-{VERSION}-py3-none-any.whl"
    assert found[".gz"].name == f"ray_tpu_gke-{VERSION}.tar.gz"
    return {"sdist": found[".gz"], "wheel": found[".whl"], "base": base}


@pytest.fixture(scope="module")
def installed(artifacts):
    """The wheel in a fresh venv outside the checkout, and a team's repository of its own (a git repository on
    `main`) holding copies of the two Python examples, the example comparison jobs (bench-jobs) and this repository's
    project (its Pulumi.yaml, program and stacks: a project of the stack-file schema)."""
    base = artifacts["base"]
    venv = base / "venv"
    python = fresh_venv(venv, clean_env())
    install = pip_into(python, "--no-deps", "--no-index", str(artifacts["wheel"]), cwd=base, env=clean_env())
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=base).stdout.strip())
    (site / "ray-tpu-gke-dependencies.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    team = base / "team"
    for example in ("existing-cluster", "own-config", "bench-jobs"):
        shutil.copytree(ROOT / "examples" / example, team / example, ignore=NOT_SOURCES)
    platform = team / "platform"
    platform.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, platform / name)
    shutil.copytree(ROOT / "stacks", platform / "stacks")
    git(team, "init", "-q", "-b", "main")
    git(team, "add", "-A")
    git(team, "commit", "-q", "-m", "the team's platform")
    return venv, site, team


def console(venv: Path, folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return _run([str(venv / "bin" / "ray-tpu-gke"), *args], cwd=folder, timeout=300, **env)


# --- the artifacts ---------------------------------------------------------------------------------------------------

def test_twine_check_passes_both_artifacts(artifacts):
    done = _run([sys.executable, "-m", "twine", "check", "--strict", str(artifacts["sdist"]),
                 str(artifacts["wheel"])], cwd=artifacts["base"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def _sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}


def test_the_sdist_holds_the_sources_the_wheel_is_built_from(artifacts):
    names = _sdist_names(artifacts["sdist"])
    folders = {"ray_tpu_gke": "components", "ray_tpu_gke_tools/policy": "policy",
               "ray_tpu_gke_tools/workloads": "workloads", "ray_tpu_gke_tools": "plan"}
    with zipfile.ZipFile(artifacts["wheel"]) as wheel:
        shipped = [n for n in wheel.namelist() if ".dist-info/" not in n]
    # Two top-level packages, the library and the toolchain: no `plan`, `policy` or `workloads` of their own.
    assert {name.split("/")[0] for name in shipped} == {"ray_tpu_gke", "ray_tpu_gke_tools"}, shipped
    for name in shipped:  # each file of the wheel, where the sdist has it
        prefix = next(p for p in folders if name.startswith(p + "/"))
        assert folders[prefix] + name[len(prefix):] in names, name
    # Every source module of the shipped folders is in both; no test module, stack or venv is.
    for folder in folders.values():
        for path in (ROOT / folder).rglob("*.py"):
            assert path.relative_to(ROOT).as_posix() in names, path
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "PKG-INFO"} <= names
    assert not any(n.startswith(("tests/", "stacks/", ".venv")) for n in names)


def test_the_wheel_declares_the_console_script_and_the_dependencies(artifacts):
    with zipfile.ZipFile(artifacts["wheel"]) as wheel:
        info = f"ray_tpu_gke-{VERSION}.dist-info"
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    assert re.search(r"^ray-tpu-gke = ray_tpu_gke_tools\.cli:entry$", entry_points, re.M), entry_points
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    requires = re.findall(r"^Requires-Dist: (\S+)", metadata, re.M)
    assert {re.split(r"[<>=!~ ;]", d)[0] for d in declared} <= {re.split(r"[<>=!~ ;(]", r)[0] for r in requires}
    assert re.search(rf"^Version: {re.escape(VERSION)}$", metadata, re.M)


# --- the installed wheel -------------------------------------------------------------------------------------------

def test_the_venv_runs_the_wheel_and_nothing_of_the_checkout(installed):
    venv, site, team = installed
    probe = ("import importlib.util, ray_tpu_gke, ray_tpu_gke_tools, ray_tpu_gke.workload.slice_checks; "
             "print(ray_tpu_gke.__file__); print(ray_tpu_gke_tools.__file__); "
             "print(ray_tpu_gke.workload.slice_checks.__file__); print(importlib.util.find_spec('plan')); "
             "print(importlib.util.find_spec('policy')); print(importlib.util.find_spec('workloads')); "
             "print(ray_tpu_gke.__version__)")
    done = _run([str(venv / "bin" / "python"), "-c", probe], cwd=team)
    assert done.returncode == 0, done.stderr
    library, tools, checks, plan, policy, workloads, version = done.stdout.split()
    for path in (library, tools, checks):
        assert Path(path).is_relative_to(site), path
    assert plan == policy == workloads == "None"
    assert (site / "ray_tpu_gke_tools" / "workloads" / "train.py").is_file()  # what compare --local copies
    assert version == VERSION
    assert (site / "ray_tpu_gke_tools" / "policy" / "PulumiPolicy.yaml").is_file()
    assert (site / "ray_tpu_gke" / "catalog" / "data" / "prices.yaml").is_file()


def _package_files(record: str) -> set[str]:
    """The modules and data a RECORD lists, without what an installer adds (bytecode, the dist-info, scripts)."""
    names = {line.split(",")[0] for line in record.splitlines() if line}
    return {n for n in names if n.startswith(("ray_tpu_gke/", "ray_tpu_gke_tools/")) and "__pycache__" not in n}


def test_the_sdist_installs_what_the_wheel_holds(artifacts, tmp_path):
    """pip builds and installs the sdist itself (what it does where no wheel is offered): the files it installs are
    the wheel's, and the console script it writes runs."""
    venv = tmp_path / "venv"
    python = fresh_venv(venv, clean_env())
    install = pip_into(python, "--no-deps", str(artifacts["sdist"]), cwd=tmp_path, env=clean_env())
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path).stdout.strip())
    installed = _package_files((site / f"ray_tpu_gke-{VERSION}.dist-info" / "RECORD").read_text())
    with zipfile.ZipFile(artifacts["wheel"]) as wheel:
        packaged = _package_files(wheel.read(f"ray_tpu_gke-{VERSION}.dist-info/RECORD").decode())
    assert installed == packaged and any(n.endswith("cli.py") for n in installed)
    (site / "ray-tpu-gke-dependencies.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    done = _run([str(venv / "bin" / "ray-tpu-gke"), "--help"], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr


def test_every_command_answers_help(installed):
    venv, _, team = installed
    top = console(venv, team, "--help")
    assert top.returncode == 0, top.stderr
    assert all(command in top.stdout for command in COMMANDS)
    for command in COMMANDS:
        done = console(venv, team, command, "--help")
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert done.stdout.startswith("usage:") and "Traceback" not in done.stderr, command


def test_outside_a_project_the_script_says_so(installed):
    venv, _, team = installed
    lost = console(venv, team, "plan", "dev")  # the team's repository root holds no Pulumi.yaml
    assert lost.returncode == 1
    assert lost.stderr.strip().startswith("error: no Pulumi.yaml in ") and "Traceback" not in lost.stderr


def test_plan_prices_the_existing_cluster_example(installed):
    from ray_tpu_gke.catalog import prices

    venv, _, team = installed
    folder = team / "existing-cluster"
    text = console(venv, folder, "plan", "dev")
    assert text.returncode == 0, text.stderr
    assert "Previewing update (dev)" in text.stdout and "tpu-existing-cluster-dev" in text.stdout
    assert "TPU capacity" in text.stdout and "ct6e-standard-4t" in text.stdout and "ray/train:tpu" in text.stdout
    assert "PREEMPTIBLE-TPU-V6E-per-project-region" in text.stdout

    done = console(venv, folder, "plan", "dev", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["project"] == "tpu-existing-cluster" and plan["stack"] == "dev"
    assert plan["versions"]["rayObjects"]["train"]["rayVersion"] == "2.60.0"  # the version set, as a stack's
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

    manifests = console(venv, folder, "plan", "dev", "--manifests")
    assert manifests.returncode == 0 and "kind: RayCluster" in manifests.stdout

    bad = folder / "Pulumi.bad.yaml"
    bad.write_text((folder / "Pulumi.dev.yaml").read_text() + "  tpu-existing-cluster:topology: 3x3\n")
    invalid = console(venv, folder, "plan", "bad")
    bad.unlink()
    assert invalid.returncode == 2 and "Traceback" not in invalid.stderr
    assert 'TpuSlicePools(v6e-16).args.slice.topology: "3x3" is not a v6e topology' in invalid.stderr


def test_plan_diffs_the_example_against_git(installed):
    venv, _, team = installed
    folder = team / "existing-cluster"
    stack = folder / "Pulumi.dev.yaml"
    committed = stack.read_text()
    stack.write_text(committed + "  tpu-existing-cluster:topology: 2x4\n")
    try:
        gated = console(venv, folder, "plan", "dev", "--diff-against", "main", "--format", "json", "--fail-on-risk")
    finally:
        stack.write_text(committed)
    assert gated.returncode == 3, gated.stderr  # the gate failed, and the diff is printed all the same
    diff = json.loads(gated.stdout)
    ops = {c["urn"].rsplit("::", 1)[-1]: c["op"] for c in diff["changes"]}
    assert ops["v6e-16-0"] == "replace"  # a new machine type: GKE replaces the pool, the slice is lost


def test_plan_and_the_policy_pack_on_the_own_config_example(installed, tmp_path):
    venv, _, team = installed
    folder = team / "own-config"
    dev = console(venv, folder, "plan", "dev", "--json")
    assert dev.returncode == 0, dev.stderr
    plan = json.loads(dev.stdout)
    assert plan["project"] == "tpu-own-config"
    assert {i["name"] for i in plan["cost"]["items"]} == {"v6e-8", "v6e-16", "system"}
    # prod's reserved slice has no list price: the plan still prints, names the missing rate, carries no amounts.
    prod = console(venv, folder, "plan", "prod", "--json")
    assert prod.returncode == 0, prod.stderr
    assert [m["capacity"] for m in json.loads(prod.stdout)["cost"]["missing"]] == ["reservation"]
    pack = console(venv, folder, "plan", "dev", "--policy-pack")
    assert pack.returncode in (0, 1) and "Traceback" not in pack.stderr
    assert "policy violation" in pack.stdout.lower(), pack.stdout[-2000:]
    # `ray-tpu-gke policy` over the saved plan: the same pack, the same verdict.
    saved = tmp_path / "plan.json"
    saved.write_text(dev.stdout)
    policy = console(venv, tmp_path, "policy", str(saved))
    assert policy.returncode == pack.returncode, policy.stdout + policy.stderr
    assert "policy violation" in policy.stdout.lower() and "Traceback" not in policy.stderr
    listed = console(venv, tmp_path, "policy", "--list")
    assert listed.returncode == 0 and "cost-monthly-budget" in listed.stdout, listed.stdout


def test_plan_json_of_a_stack_file_project_carries_the_version_set(installed):
    venv, _, team = installed
    done = console(venv, team / "platform", "plan", "dev", "--json")
    assert done.returncode == 0, done.stderr
    versions = json.loads(done.stdout)["versions"]
    assert versions["gke"]["releaseChannel"] and versions["kuberay"]["apiVersion"] == "ray.io/v1"


def test_diagram_of_a_stack_file_project(installed):
    venv, _, team = installed
    done = console(venv, team / "platform", "diagram", "dev", "--markdown")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("```mermaid\nflowchart") and "v6e" in done.stdout


def _fake_kubectl(folder: Path, state: dict) -> dict[str, str]:
    """The stand-in kubectl on PATH, answering from `state`: the environment for the console script."""
    path = folder / "cluster.json"
    path.write_text(json.dumps(state))
    return {"PATH": kubectl_on_path(folder), "FAKE_KUBECTL_STATE": str(path)}


def test_verify_a_stack_file_project_against_the_stand_in_kubectl(installed, tmp_path):
    import stand_in_cluster as test_verify

    venv, _, team = installed
    env = _fake_kubectl(tmp_path, test_verify.healthy("staging"))
    args = ("verify", "staging", "--context", test_verify.CONTEXT, "--poll", "0", "--json")
    done = console(venv, team / "platform", *args, **env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert {"nodes", "pods", "smoke"} <= {c["name"] for c in report["checks"]}, report["checks"]
    broken = test_verify.healthy("staging")
    lost = "gke-v6e-16-0-3"  # a host of the v6e-16 slice: its pool fails
    broken["nodes"] = [n for n in broken["nodes"] if n["metadata"]["name"] != lost]
    Path(env["FAKE_KUBECTL_STATE"]).write_text(json.dumps(broken))
    failed = console(venv, team / "platform", *args, "--skip-smoke", **env)
    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    checks = {(c["subject"], c["name"]): c for c in json.loads(failed.stdout)["checks"]}
    assert checks[("node pool v6e-16-0", "nodes")]["status"] == "fail"


def expected_of_project(folder: Path, stack: str):
    """What verify expects of a project's cluster, planned in this process by the checkout's toolchain."""
    from plan import planned
    from plan import project as projects
    from plan.verify import expected

    here = Path.cwd()
    projects.use(projects.load(folder))
    os.chdir(folder)
    try:
        found = planned.load(stack)
        return expected.stack_plan(found.plan, found.config)
    finally:
        projects.use(None)
        os.chdir(here)


def test_verify_diagram_and_compare_on_the_existing_cluster_example(installed, tmp_path):
    """A program that configures the library itself: verify checks the live cluster against what its plan
    registered, diagram draws it, compare names in one line what a comparison needs that it lacks."""
    import stand_in_cluster as test_verify

    venv, _, team = installed
    folder = team / "existing-cluster"
    plan = expected_of_project(folder, "dev")
    state = test_verify.cluster_as_planned(plan, {("ray", "train"): "rayproject/ray:2.60.0-py311"})
    env = _fake_kubectl(tmp_path, state)
    done = console(venv, folder, "verify", "dev", "--context", test_verify.CONTEXT, "--poll", "0", "--json", **env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    checks = {(c["subject"], c["name"]): c["status"] for c in json.loads(done.stdout)["checks"]}
    assert checks[("node pool v6e-16-0", "nodes")] == "pass"
    assert checks[("RayCluster ray/train group tpu", "smoke")] == "pass"

    chart = console(venv, folder, "diagram", "dev")
    assert chart.returncode == 0, chart.stderr
    assert "existing: not created here" in chart.stdout and "v6e-16" in chart.stdout
    assert "worker group <b>tpu</b>" in chart.stdout

    compare = console(venv, folder, "compare", "dev", "--local")
    assert compare.returncode == 2 and len(compare.stderr.strip().splitlines()) == 1, compare.stderr
    refused = compare.stderr.strip()
    assert refused.startswith("error: program tpu-existing-cluster registers no GPU pool (WorkerPool"), refused
    assert "no RayJob on a TPU slice" in refused and "no TPU slice" not in refused and "Traceback" not in refused


# The cheapest real comparison: both sides run the plain-Python example job (no framework, no Ray Train), a few
# steps, no failure injected; what is measured is the toolchain's own path (plan, sides, the local Ray cluster,
# the report), not a model.
PLAIN_JOB = "python ../bench-jobs/plain_job.py --steps 6"


@pytest.mark.local_ray  # `make test-ray`: the wheel's `compare --local` starts a local Ray cluster
def test_compare_runs_locally_on_the_own_config_programs_bench_environment(installed, tmp_path):
    """A program of its own (own-config's bench environment: RayTpuPlatform with a TPU slice, a GPU pool and a
    RayJob template on each) compared locally from the installed wheel: its sides are what its plan registered."""
    from ray_tpu_gke.catalog import prices

    venv, _, team = installed
    folder = team / "own-config"
    out = tmp_path / "report"
    done = console(venv, folder, "compare", "bench", "--local", "--out", str(out), "--inject-failure", "0",
                   "--report-every", "3", "--entrypoint", f"bench-tpu={PLAIN_JOB}",
                   "--entrypoint", f"bench-h100={PLAIN_JOB}", WORKLOADS_PYTHON=workloads_python())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    document = json.loads((out / "report.json").read_text())
    assert document["mode"] == "local" and document["problems"] == []
    sides = {s["name"]: s for s in document["sides"]}
    assert list(sides) == ["bench-tpu", "bench-h100"]
    assert sides["bench-tpu"]["accelerator"] == "v6e 2x4, 8 chips"
    assert sides["bench-h100"]["accelerator"] == "8 x nvidia-h100-80gb on a3-highgpu-8g"
    # Each side at the list price of its hardware in the environment's region: 8 v6e chips, one a3-highgpu-8g node.
    table = prices.load_table()
    chip = prices.find_rate("tpu", "v6e", "onDemand", "us-central1", [], table).hourly
    node = prices.find_rate("gpu", "a3-highgpu-8g", "onDemand", "us-central1", [], table).hourly
    assert sides["bench-tpu"]["hourlyUsd"] == pytest.approx(float(8 * chip))
    assert sides["bench-h100"]["hourlyUsd"] == pytest.approx(float(node))
    assert all(side["steps"] == 6 for side in sides.values())
