"""The local comparison end to end (`make compare`, shortened): the compare stack's two sides on a real local Ray
cluster in .venv-workloads, CPU standing in for the TPU slice and the GPU pool; the TPU side runs the stack's own
`workloads.train` and loses a node when its job reports step 12 (a replacement added), the GPU side runs a team's own
job instead (`--entrypoint bench-a100=...`: examples/bench-jobs/plain_job.py, plain Python that reports through
`ray_tpu_gke.bench` and nothing else), and the report is written. One run for the module (its tests share it, so they
run on one pytest-xdist worker, like the other Ray tests' shared clusters); skipped, saying so, only when there is no
workloads interpreter ($WORKLOADS_PYTHON or .venv-workloads/bin/python)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, workloads_python
from plan.compare import __main__ as compare_cli
from plan.compare import sides

pytestmark = pytest.mark.local_ray

STEPS, INJECT, EVERY = 30, 12, 10
OWN_JOB = "python examples/bench-jobs/plain_job.py --steps 20"
# Two different programs (a transformer language model and a linear fit): their evaluation losses are not expected to
# agree, so the tolerance admits any difference, and the tests check what was compared.
TOLERANCE = 1.0


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    python = workloads_python()
    out = tmp_path_factory.mktemp("compare") / "report"
    done = subprocess.run([sys.executable, "-m", "plan.compare", "compare", "--local", "--out", str(out), "--steps",
                           str(STEPS), "--report-every", str(EVERY), "--inject-failure", f"bench-tpu={INJECT}",
                           "--entrypoint", f"bench-a100={OWN_JOB}", "--tolerance", str(TOLERANCE)],
                          cwd=ROOT, env={**os.environ, "WORKLOADS_PYTHON": python}, capture_output=True, text=True,
                          timeout=1800)
    written = out / "report.json"
    if not written.exists():
        pytest.fail(f"no report (exit {done.returncode}):\n{done.stderr[-6000:]}")
    return done, json.loads(written.read_text()), out


def by_name(document: dict) -> dict:
    return {s["name"]: s for s in document["sides"]}


def test_make_compare_locally_writes_a_complete_simulated_report(compared):
    done, document, out = compared
    assert document["problems"] == [] and done.returncode == 0, done.stderr[-4000:]
    assert document["mode"] == "local" and document["simulated"] is True
    assert sorted(p.name for p in out.iterdir()) == ["cost.png", "report.json", "report.md", "step-times.png",
                                                     "time.png"]
    for side in document["sides"]:
        assert (side["platform"], side["simulated"]) == ("cpu", True)
        assert set(side["startup"]) == {"capacityWaitS", "rayStartS", "firstStepS"}
        assert all(value > 0 for value in side["startup"].values())
        assert 0 < side["stepTimeS"]["p50"] <= side["stepTimeS"]["p95"]
        assert side["wallS"] > 0 and side["costPerJobUsd"] > 0 and side["finalLoss"] is not None
    lines = (out / "report.md").read_text().splitlines()
    assert lines[0].startswith("Rehearsal: ") and any("(local, simulated)" in line for line in lines[:5])


def test_the_stack_job_is_the_transformer_language_model_with_xla_flops(compared):
    _, document, _ = compared
    side = result = by_name(document)["bench-tpu"]  # the job's own fields, as the report carries them
    assert side["steps"] == STEPS and side["compileS"] > 0 and side["compileEvents"] > 0
    assert result["model"]["name"].startswith("decoder-only transformer") and result["model"]["parameters"] > 0
    assert result["framework"] == "jax" and result["tokensPerS"] > 0 and result["evalMetric"]["name"] == "evalLoss"
    assert result["tokensPerS"] == pytest.approx(result["examplesPerS"] * result["model"]["seqLen"])
    assert result["flopsPerStep"] > 0 and result["flopsSource"].startswith("XLA cost analysis")
    # More than the 6 x parameters x tokens of the matrix products alone: attention and the optimiser add to it.
    assert result["flopsPerStep"] > 6 * result["model"]["parameters"] * result["model"]["tokensPerStep"] * 0.5


def test_a_teams_own_job_outside_workloads_is_a_side_like_any_other(compared):
    _, document, _ = compared
    side = result = by_name(document)["bench-a100"]
    assert result["framework"] == "python" and result["flopsPerStep"] > 0 and result["flopsSource"] == "declared"
    assert side["steps"] == 20 and side["compileS"] == 0 and "recovery" not in side  # no failure asked for it
    assert side["checkpoints"]["saves"] == 20 // EVERY
    # The agreement compares the evaluation metric both jobs declared, each job's own value.
    agreement = document["agreement"]
    tpu = by_name(document)["bench-tpu"]
    assert agreement["metric"] == "evalLoss" and agreement["tolerance"] == TOLERANCE
    assert agreement["values"] == [tpu["evalMetric"]["value"], result["evalMetric"]["value"]]
    assert tpu["evalMetric"]["value"] != result["evalMetric"]["value"]
    assert agreement["fingerprint"]["comparable"] is False  # predictions on different inputs: not compared


def test_each_side_recovered_from_its_checkpoint_on_a_replacement_node(compared):
    _, document, _ = compared
    for side in [by_name(document)["bench-tpu"]]:  # the side a failure was injected into
        recovery = side["recovery"]
        assert recovery["injectedAtStep"] >= INJECT and recovery["recoveryS"] > 0
        # Resumed from the last checkpoint before the failure, and the steps after it done again.
        assert recovery["fromStep"] % EVERY == 0 and recovery["fromStep"] <= recovery["injectedAtStep"]
        assert recovery["stepsRedone"] >= recovery["injectedAtStep"] - recovery["fromStep"]
        assert len(side["stepTimesS"]) == STEPS + recovery["stepsRedone"]
        assert len(side["compiledSteps"]) == 2  # each attempt compiles its first step
        lost, replacement = side["billing"]["nodes"]
        assert lost["until"] == replacement["until"] == "removed"
        assert lost["to"] <= recovery["injectedAt"] + 60 and replacement["from"] >= recovery["injectedAt"]


def test_local_costs_are_the_plans_prices_for_the_real_hardware(compared):
    _, document, _ = compared
    plan, values = compare_cli.load_plan("compare")
    for planned in sides.default_run_sides(sides.sides(plan, values)):  # a run without --sides
        side = by_name(document)[planned.name]
        assert side["hourlyUsd"] == pytest.approx(planned.hourly)
        billed = sum(node["seconds"] for node in side["billing"]["nodes"])
        assert side["costPerJobUsd"] == pytest.approx(billed / 3600 * planned.node_hourly)
        assert side["costPer1kStepsUsd"] == pytest.approx(side["costPerJobUsd"] / side["steps"] * 1000)



def test_the_stack_jobs_side_says_how_long_its_loop_waited_for_ray_data_and_a_plain_job_says_not_measured(compared):
    _, document, out = compared
    tpu, own = by_name(document)["bench-tpu"]["input"], by_name(document)["bench-a100"]["input"]
    # Measured by Ray Data in the job (its dataset shard's statistics), the rehearsal's pauses after each step out.
    assert tpu["source"].startswith("Ray Data") and tpu["pausedS"] > 0
    assert 0 <= tpu["firstBatchS"] <= tpu["blockedS"] < tpu["iterS"] and 0 <= tpu["waitShare"] < 1
    assert 0 < tpu["syntheticStepTimeS"] and tpu["stepTimeS"] == by_name(document)["bench-tpu"]["stepTimeS"]["p50"]
    assert tpu["verdict"].startswith(("input-bound: ", "not input-bound: "))
    assert f"{tpu['waitShare'] * 100:.0f} % of step time waiting on data" in tpu["verdict"]
    assert own["waitShare"] is None and own["verdict"].startswith("not measured")  # plain Python, no Ray Data
    text = (out / "report.md").read_text()
    assert f"| input wait (Ray Data: blocked / iterator time) | {tpu['waitShare'] * 100:.1f} % | not measured |" in text
    assert f"- bench-tpu in this rehearsal (the CPU standing in, data on this machine's disk): {tpu['verdict']}." in text
