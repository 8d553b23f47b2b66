"""Each committed stack's plan JSON is compared with its snapshot on every run, concern by concern
(tests/snapshots/<stack>/<concern>.json, plan/snapshot_files.py).

After an intended change: `make snapshots` (pytest --update-snapshots), then review `git diff tests/snapshots`.
"""

import json

import pytest

import snapshot_files
from helpers import ROOT, STACKS, _plan, plan_of
from plan import harness, stackfile


@pytest.mark.parametrize("stack", STACKS)
def test_plan_matches_snapshot(stack, request):
    plan = _plan(stack, False).to_json()
    texts = snapshot_files.split(plan)
    joined = snapshot_files.join(texts)  # the concerns hold the plan, every step once
    assert sorted(map(snapshot_files.dumps, joined["steps"])) == sorted(map(snapshot_files.dumps, plan["steps"]))
    assert snapshot_files.dumps({**joined, "steps": plan["steps"]}) == _plan(stack, False).dumps()
    if request.config.getoption("--update-snapshots"):
        snapshot_files.record(stack, texts)
    recorded = snapshot_files.recorded(stack)
    assert recorded, f"no snapshot for {stack}: run `make snapshots`"
    assert sorted(recorded) == sorted(texts), f"plan of {stack} changed: review, then `make snapshots`"
    for concern, text in texts.items():
        assert text == recorded[concern], f"plan of {stack} changed ({concern}): review, then `make snapshots`"


def test_every_snapshot_has_a_stack():
    assert snapshot_files.stacks() == STACKS


def test_plan_is_deterministic():
    values, secrets = stackfile.load("prod")
    again = harness.run_program("prod", values, secrets).dumps()
    assert again == _plan("prod", False).dumps()


def test_plan_json_shape():
    plan = plan_of("staging")
    assert plan["project"] == "ray-tpu-gke" and plan["stack"] == "staging"
    assert plan["changeSummary"] == {"create": len(plan["steps"])}
    first = plan["steps"][0]
    assert first["op"] == "create" and first["newState"]["type"] == "pulumi:pulumi:Stack"
    assert set(first["newState"]) == {"type", "name", "custom", "parent", "provider", "dependencies", "inputs",
                                      "options"}
    assert set(first["newState"]["options"]) == {"protect", "ignoreChanges", "deleteBeforeReplace",
                                                  "replaceOnChanges"}
    components = [s for s in plan["steps"] if not s["newState"]["custom"]]
    assert {s["newState"]["type"] for s in components} >= {"ray-tpu-gke:index:RayTpuPlatform",
                                                           "ray-tpu-gke:index:GkeCluster"}
    text = json.dumps(plan)
    assert ".0," not in text.replace("10.0.0", "")  # whole numbers are integers, not floats


def test_large_plan_is_byte_identical_across_processes():
    """Memory addresses (and str hashes) differ between processes; the step order must not depend on them. This
    process, with everything the suite has loaded and run before, against a fresh interpreter."""
    import hashlib
    import subprocess
    import sys

    from benchmarks import synthetic

    script = ("import sys, hashlib; sys.setrecursionlimit(10000); from benchmarks import synthetic; "
              "from plan import harness; "
              "print(hashlib.sha256(harness.run_program('big', synthetic.values(16)).dumps().encode()).hexdigest())")
    fresh = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip()
    here = hashlib.sha256(harness.run_program("big", synthetic.values(16)).dumps().encode()).hexdigest()
    assert len(fresh) == 64 and fresh == here
