"""The local comparison end to end (`make compare`, shortened): the compare stack's sides on a real local Ray cluster
in .venv-workloads, CPU standing in for the TPU slice and the GPU pools; the TPU side runs the stack's own
`workloads.train` and loses a node when its job reports step 12 (a replacement added), the A100 side runs a team's
own job instead (`--entrypoint bench-a100=...`: examples/bench-jobs/plain_job.py, plain Python that reports through
`ray_tpu_gke.bench` and nothing else, with an argument parser of its own that refuses any flag it does not know, run
from its own folder by a shell command line), and the H100 side a job that fails after reporting its result
(tests/data/compare/failing_job.py), whose log and result document the report folder keeps. One run for the module
(its tests share it, so they run on one pytest-xdist worker, like the other Ray tests' shared clusters); skipped,
saying so, only when there is no workloads interpreter ($WORKLOADS_PYTHON or .venv-workloads/bin/python)."""

from __future__ import annotations

import json

import pytest

from compare_runs import by_name, compare_locally
from helpers import ROOT, workloads_python
from plan.compare import __main__ as compare_cli
from plan.compare import sides
from ray_tpu_gke import bench

pytestmark = pytest.mark.local_ray

STEPS, INJECT, EVERY = 20, 12, 10
# A shell command line, run in the folder the command runs in (here the checkout's root); its `python` is the
# workloads interpreter. The job's own parser would refuse --run, --side or any flag it does not know.
OWN_JOB = "cd examples/bench-jobs && python plain_job.py --steps 20"
FAILING_JOB = "python tests/data/compare/failing_job.py"
# Two different programs (a transformer language model and a linear fit): their evaluation losses are not expected to
# agree, so the tolerance admits any difference, and the tests check what was compared.
TOLERANCE = 1.0


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    python = workloads_python()
    out = tmp_path_factory.mktemp("compare") / "report"
    done, document = compare_locally(out, python, "--steps", str(STEPS), "--report-every", str(EVERY),
                                     "--inject-failure", f"bench-tpu={INJECT}", "--entrypoint", f"bench-a100={OWN_JOB}",
                                     "--entrypoint", f"bench-h100={FAILING_JOB}", "--sides",
                                     "bench-tpu,bench-a100,bench-h100", "--tolerance", str(TOLERANCE), timeout=1800)
    return done, document, out


def test_make_compare_locally_writes_a_simulated_report_incomplete_only_for_the_failed_job(compared):
    done, document, out = compared
    assert done.returncode == 1 and document["problems"] == [
        "bench-h100: finished: the job did not finish: FAILED (exit 1) (AssertionError: the evaluation diverged "
        "after training)"], done.stderr[-4000:]
    assert document["mode"] == "local" and document["simulated"] is True
    assert sorted(p.name for p in out.iterdir()) == ["cost.png", "logs", "report.json", "report.md", "results",
                                                     "step-times.png", "time.png"]
    # The jobs ran in the folder the command ran in, with the workloads interpreter as their `python`.
    assert document["localRun"]["workdir"] == str(ROOT) and document["localRun"]["python"] == workloads_python()
    for side in document["sides"][:2]:
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
    # Beside the analytic count of the model it declared: XLA's count of the tiny model, element-wise work and the
    # whole masked attention included, is more than 10 % over it, and flagged.
    check = side["flopsCheck"]
    assert check["analyticFlopsPerStep"] == pytest.approx(bench.from_model(result["model"],
                                                                           result["tokensPerStep"])["total"])
    assert check["gap"] > 0.10 and check["flagged"] is True


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


def test_a_job_with_its_own_strict_parser_runs_unchanged_and_its_mfu_would_count_its_one_device(compared):
    _, document, out = compared
    side = by_name(document)["bench-a100"]
    assert side["outcome"] == "SUCCEEDED" and side["steps"] == 20
    log = (out / side["logFile"]).read_text()
    assert "unrecognized arguments" not in log
    # The comparison's settings reached it through the environment: its result is this run's, this side's, seeded.
    result = json.loads((out / side["resultFile"]).read_text())
    assert (result["run"], result["side"], result["simulated"], result["seed"]) == (document["run"], "bench-a100",
                                                                                    True, 0)
    # It ran on 1 device of a side that stands for 8 GPUs: MFU (none, simulated) would divide by 1, and it says so.
    assert (side["mfuDevices"], side["sideDevices"], side["mfu"]) == (1, 8, None)
    text = (out / "report.md").read_text()
    assert f"- bench-a100: {side['devicesNote']}." in text
    assert "none (simulated) (over the 1 device(s) the job ran on; the side stands for 8)" in text


def test_a_failed_jobs_log_and_result_stay_in_the_report_folder(compared):
    _, document, out = compared
    side = by_name(document)["bench-h100"]
    assert side["outcome"] == "FAILED (exit 1)"
    log = (out / side["logFile"]).read_text()
    assert "AssertionError: the evaluation diverged after training" in log
    assert side["logTail"][-1] == "AssertionError: the evaluation diverged after training"
    kept = json.loads((out / "results" / document["run"] / "bench-h100.json").read_text())
    assert kept["evaluation"] == "diverged" and side["resultFile"] == f"results/{document['run']}/bench-h100.json"
    text = (out / "report.md").read_text()
    assert "### bench-h100: the job's last log lines (kept: `logs/bench-h100.log`" in text
    assert "AssertionError: the evaluation diverged after training\n```" in text


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
        assert lost["from"] < recovery["injectedAt"] <= replacement["from"]  # the replacement came after the loss


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
