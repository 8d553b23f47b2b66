"""A stack of one's own is routine (issue #25): a copy of this checkout gains a stack file, `Pulumi.teamx.yaml`: a
team's environment unlike the repository's own (its own program and image, a CPU pool beside its slice, a fixed-size
slice the policy pack advises against, versioning off), and `make snapshots` records its plan. The suite's tests of that
stack then pass there, with the expectations taken from its config: nothing in tests/ names it.

The copy runs the same pytest as this one, the way `make snapshots` and `make test` would, restricted by `-k` to the
new stack's tests and the tests that look at every stack at once. About a minute: a pytest collection, a plan and,
where Checkov is installed, a CIS scan of the one stack.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from helpers import ROOT, checkov_path

STACK = "teamx"
STACK_FILE = """\
# teamx: a team's own environment, added as the README's "new environment" checklist says.
config:
  gcp:project: acme-teamx
  gcp:region: us-east5
  ray-tpu-gke:team: teamx
  ray-tpu-gke:costCenter: teamx
  ray-tpu-gke:cluster:
    name: ray-teamx
    location: us-east5-b
    deletionProtection: false
    masterAuthorizedNetworks:
      - cidrBlock: 198.51.100.0/24
        displayName: teamx-office
  ray-tpu-gke:storage:
    versioning: false
  ray-tpu-gke:tpuSlices:
    - name: v6e-8
      generation: v6e
      topology: 2x4
  ray-tpu-gke:cpuPools:
    - name: prep
      machineType: n2-standard-8
      count: 2
  ray-tpu-gke:rayJobs:
    - name: finetune
      namespace: teamx
      image: europe-docker.pkg.dev/acme-teamx/images/trainer:7
      entrypoint: python -m teamx.finetune --epochs 3
      workerGroups:
        - name: tpu
          slice: v6e-8
        - name: prep
          cpuPool: prep
          replicas: 2
  ray-tpu-gke:monitoring:
    sliceHealth:
      enabled: false  # the in-cluster slice check runs in the repository's workloads image, not teamx's
  ray-tpu-gke:pricing:
    monthlyBudget: 20000
"""
# The tests that read every stack together, beside those parametrized by stack.
ACROSS_STACKS = ("every_snapshot_has_a_stack", "every_stack_is_valid")
# A few of the new stack's tests that must have run and passed (not merely been deselected).
MUST_PASS = (
    f"test_plan_matches_snapshot[{STACK}]",
    f"test_stack_plans_pass[{STACK}]",
    f"test_pack_passes_every_stack[{STACK}]",
    f"test_every_pod_of_every_stack_has_valid_labels_and_fits_its_node[{STACK}]",
    f"test_the_repositorys_workloads_run_in_the_workloads_image[{STACK}]",
    f"test_jobs_that_run_a_workload_of_the_repository_give_valid_arguments[{STACK}]",
    "test_every_snapshot_has_a_stack",
)
CIS = f"test_findings_are_exactly_the_listed_ones[{STACK}]"


def checkout_copy(target: Path) -> Path:
    """The files pytest sees in this checkout (tracked, and new ones not ignored), as they are now."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is left out, as pytest would not see it
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    checkov = checkov_path()
    if checkov:
        env["CHECKOV"] = checkov
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900)


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """{test name: (outcome, its message)}: a skip's reason is in the report, not in `pytest -q`'s output."""
    found = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        kinds = [child for child in case if child.tag in ("failure", "error", "skipped")]
        found[case.get("name")] = (kinds[0].tag, kinds[0].get("message", "")) if kinds else ("passed", "")
    return found


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_a_new_stack_file_and_its_snapshot_pass_the_suite(tmp_path):
    copy = checkout_copy(tmp_path / "checkout")
    (copy / "stacks" / f"Pulumi.{STACK}.yaml").write_text(STACK_FILE)
    assert not (copy / "tests" / "snapshots" / STACK).exists()

    # `make snapshots`, for the one stack it adds (the others' snapshots are rewritten unchanged).
    recorded = pytest_in(copy, "tests/plan/test_snapshots.py", "-k", STACK, "--update-snapshots")
    assert recorded.returncode == 0, recorded.stdout[-4000:] + recorded.stderr[-2000:]
    assert {p.name for p in (copy / "tests" / "snapshots" / STACK).iterdir()} >= {"platform.json", "cluster.json"}

    junit = tmp_path / "junit.xml"
    run = pytest_in(copy, "tests", "-k", " or ".join((STACK, *ACROSS_STACKS)), "-W", "always::UserWarning",
                    f"--junitxml={junit}")
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    seen = outcomes(junit)
    assert {name: seen.get(name, ("",))[0] for name in MUST_PASS} == dict.fromkeys(MUST_PASS, "passed")
    cis, reason = seen.get(CIS, ("", ""))
    assert cis == "passed" or (cis == "skipped" and "checkov not found" in reason), (cis, reason, run.stdout[-3000:])
    # The advisory finding (a fixed-size slice outside production) is reported, not a failure.
    assert f"{STACK}: 1 advisory policy finding" in run.stdout and "cost-tpu-autoscaling" in run.stdout
