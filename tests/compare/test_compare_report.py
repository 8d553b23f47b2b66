"""The comparison's report builder (plan/compare/report.py): percentiles, cost per job from node lifetimes and the
plan's price, start-up phases, recovery, refusal of a result that is not the side's accelerator, agreement, and the
files it writes. Pure: SideRuns built by hand around the job log in tests/data/compare/ (a TPU job of 20 steps that
lost a worker at step 12 and resumed from the checkpoint of step 10)."""

from __future__ import annotations

import json
import statistics

import pytest

from compare_runs import COLLECTED, LOG, RESULT, RUN, T, gpu_run, job_log, side_plan, tpu_run

from ray_tpu_gke import bench
from plan.compare import markdown, output, report
from plan.compare.agreement import fingerprint_agreement, relative_difference
from plan.compare.report import NodeSpan, SideRun


# --- arithmetic ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0, 4.0], [0.5], [3.0, 1.0, 2.0], [0.01 * (i % 7) + 0.001 * i
                                                                                       for i in range(57)]])
def test_percentiles_interpolate_linearly_between_ranks(values):
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    assert report.percentile(values, 50) == pytest.approx(cuts[49])
    assert report.percentile(values, 95) == pytest.approx(cuts[94])
    assert report.percentile(values, 0) == min(values) and report.percentile(values, 100) == max(values)


def test_step_times_leave_the_compiling_steps_out():
    stats = report.step_time_stats(RESULT["stepTimesS"], RESULT["compiledSteps"])
    steady = [t for i, t in enumerate(RESULT["stepTimesS"]) if i not in (0, 12)]
    assert stats["steps"] == 20 and stats["compiledSteps"] == 2
    assert stats["p50"] == pytest.approx(statistics.median(steady))
    assert stats["p95"] < 0.02 < 2.25  # the 2.25 s compiling steps would dominate a p95 that kept them
    assert report.step_time_stats([2.0], [0]) is None


def test_cost_per_job_is_the_price_times_every_nodes_billed_lifetime():
    nodes = [NodeSpan("lost", T + 2.0, T + 50.0, T + 100.0),  # removed: billed creation -> removal
             NodeSpan("replacement", T + 101.0, T + 130.0, None),  # still up: billed until the collection
             NodeSpan("already-up", T - 3600.0, T - 3500.0, T + 10.0)]  # existed before: billed from the request
    billed = report.billed_nodes(nodes, T, COLLECTED)
    assert [b["seconds"] for b in billed] == [98.0, 99.0, 10.0]
    assert [b["until"] for b in billed] == ["removed", "collection", "removed"]
    assert report.cost_per_job(207.0, 21.6) == pytest.approx(207.0 / 3600 * 21.6)


def test_relative_difference_is_symmetric():
    assert relative_difference(1.0, 1.02) == relative_difference(1.02, 1.0) == pytest.approx(0.02 / 1.02)
    assert relative_difference(0.0, 0.0) == 0.0


# --- one side ------------------------------------------------------------------------------------------------------

def test_a_live_tpu_side_from_its_log_and_the_clusters_timestamps():
    side, missing = report.side_report(tpu_run(), "live", RUN, COLLECTED)
    assert missing == []
    assert side["startup"] == pytest.approx({"capacityWaitS": 50.0, "podStartS": 30.0, "rayStartS": 10.0,
                                             "firstStepS": 2.25})
    assert side["wallS"] == pytest.approx(RESULT["finishedAt"] - T)
    assert side["steps"] == 20 and side["compileS"] == 2.1 and side["finalLoss"] == RESULT["finalLoss"]
    billed = COLLECTED - (T + 2.0)  # the node is still up at the collection
    assert side["billing"]["billedNodeS"] == pytest.approx(billed)
    assert side["billing"]["stillUp"] == ["gke-v6e-8-a"]
    assert side["costPerJobUsd"] == pytest.approx(billed / 3600 * 21.6)
    assert side["costPer1kStepsUsd"] == pytest.approx(side["costPerJobUsd"] / 20 * 1000)
    assert side["hourlyUsd"] == 21.6
    restart = RESULT["restarts"][0]
    # Why steps were redone: the last registered checkpoint (10); the log's saves are 5, 10 (before the failure at 12).
    assert side["recovery"].pop("why") == ("the job resumes from the last checkpoint Ray Train had registered (step "
                                           "10), so every step after it that ran before the failure (injected when "
                                           "step 12 was reported) ran again")
    assert side["recovery"] == pytest.approx({
        "injectedAtStep": 12, "injectedAt": T + 93.0, "target": "pod bench-tpu-rc-tpu-worker-x",
        "recoveryS": restart["resumedAt"] - (T + 93.0), "detectS": restart["failureSeenAt"] - (T + 93.0),
        "stepsRedone": 2, "fromStep": 10, "resumedAt": restart["resumedAt"]})
    assert sum(side["timeBreakdownS"].values()) == pytest.approx(side["wallS"])
    assert side["timeBreakdownS"]["compiledStepsS"] == pytest.approx(4.5)
    assert side["timeBreakdownS"]["checkpointsS"] == pytest.approx(1.4)


def test_locally_the_phases_are_capacity_ray_start_and_first_step():
    run = tpu_run(pods_ready_at=None, log=job_log(platform="cpu", simulated=True))
    side, missing = report.side_report(run, "local", RUN, COLLECTED)
    assert missing == []
    assert set(side["startup"]) == {"capacityWaitS", "rayStartS", "firstStepS"}
    assert side["startup"]["rayStartS"] == pytest.approx(40.0)  # nodes ready (T+50) -> the loop (T+90)


def test_a_gpu_side_that_ran_on_the_cpu_is_refused():
    side, missing = report.side_report(gpu_run(platform="cpu", simulated=False), "live", RUN, COLLECTED)
    assert side["refused"] == ("the job ran on cpu, not gpu, and is not marked simulated: its numbers are not a gpu "
                               "measurement")
    measures = [m for m, _ in missing]
    assert measures[0] == "result"
    for measure in ("steps", "stepTimeS", "compileS", "finalLoss", "costPer1kStepsUsd"):
        assert measure in measures
    assert "stepTimeS" not in side and "finalLoss" not in side
    assert side["platform"] == "cpu"  # what the job said is still shown
    # What the cluster saw still holds: the job's wall time (RayJob endTime) and what its node cost.
    assert side["wallS"] == pytest.approx(108.0) and side["costPerJobUsd"] > 0


def test_a_simulated_result_does_not_count_in_a_live_comparison():
    side, missing = report.side_report(tpu_run(log=job_log(platform="cpu", simulated=True)), "live", RUN, COLLECTED)
    assert "simulated on cpu in a live comparison" in side["refused"]


def test_a_result_of_another_run_is_refused():
    side, _ = report.side_report(tpu_run(log=job_log(run="compare-older")), "live", RUN, COLLECTED)
    assert side["refused"].startswith("the result is for run 'compare-older'")


def test_a_job_that_never_got_its_nodes_lacks_every_measure_but_the_price():
    run = SideRun(side=side_plan(), job="compare/bench-tpu-x", requested_at=T, log="", outcome="timeout: 600 s",
                  inject_step=12, injection_problem="step 12 was never reported (pending)")
    side, missing = report.side_report(run, "live", RUN, COLLECTED)
    reasons = dict(missing)
    assert reasons["finished"] == "the job did not finish: timeout: 600 s"
    assert reasons["startup.capacityWaitS"] == "no worker node became Ready"
    assert reasons["costPerJobUsd"] == "no worker node of the side was seen"
    assert reasons["recovery"] == "step 12 was never reported (pending)"
    assert side["hourlyUsd"] == 21.6 and "costPerJobUsd" not in side


def test_a_recovery_that_never_happens_is_missing():
    log = "\n".join(line for line in job_log(restarts=[]).splitlines() if '"restart"' not in line)
    side, missing = report.side_report(tpu_run(log=log), "live", RUN, COLLECTED)
    assert dict(missing)["recovery"] == ("no restart was reported after the failure injected at step 12 (pod "
                                         "bench-tpu-rc-tpu-worker-x); the job SUCCEEDED")
    assert side["recovery"] == {"injectedAtStep": 12}


def test_no_price_in_the_plan_is_a_missing_cost_not_a_zero():
    run = tpu_run(side=side_plan(node_hourly=None, problem="the plan's cost has no item for v6e-8"))
    side, missing = report.side_report(run, "live", RUN, COLLECTED)
    assert dict(missing)["costPerJobUsd"] == "the plan's cost has no item for v6e-8"
    assert "hourlyUsd" not in side and "costPerJobUsd" not in side


# --- agreement and the whole report --------------------------------------------------------------------------------

def test_two_agreeing_sides_make_a_complete_report():
    document = report.build("compare", "live", RUN, [tpu_run(), gpu_run()], COLLECTED)
    assert document["problems"] == [] and document["complete"] is True
    agreement = document["agreement"]
    assert agreement["between"] == ["bench-tpu", "bench-gpu"]
    assert agreement["relativeDifference"] == pytest.approx(0.004 / 1.004)
    assert agreement["agree"] is True and agreement["fingerprint"]["sameSha256"] is True
    gpu = document["sides"][1]
    assert gpu["billing"]["stillUp"] == []  # removed at T+170: billed until then
    assert gpu["costPerJobUsd"] == pytest.approx((170.0 - 1.0) / 3600 * 8.00333)


def test_final_losses_beyond_the_tolerance_disagree():
    document = report.build("compare", "live", RUN, [tpu_run(), gpu_run(finalLoss=RESULT["finalLoss"] * 1.1)],
                            COLLECTED, tolerance=0.02)
    assert document["agreement"]["agree"] is False and document["complete"] is False
    assert document["problems"] == ["agreement of bench-tpu and bench-gpu: the final losses differ by 9.09%, more "
                                    "than the tolerance of 2.00%"]


def test_fingerprints_from_different_seeds_or_predictions_disagree():
    values = RESULT["fingerprint"]["values"]
    other = {"seed": 0, "values": [v + 0.05 for v in values], "sha256": "x"}
    pair = fingerprint_agreement(RESULT["fingerprint"], other, 0.02)
    assert pair["agree"] is False and pair["maxAbsDifference"] == pytest.approx(0.05)
    close = {"seed": 0, "values": [v + 1e-4 for v in values], "sha256": "y"}
    assert fingerprint_agreement(RESULT["fingerprint"], close, 0.02)["agree"] is True
    seeded = fingerprint_agreement(RESULT["fingerprint"], {**close, "seed": 1}, 0.02)
    assert seeded == {"seeds": [0, 1], "sameSha256": False, "checked": True, "tolerance": 0.02, "agree": False,
                      "reason": "the sides used different seeds"}


def test_a_refused_side_leaves_the_agreement_unmeasured():
    document = report.build("compare", "live", RUN, [tpu_run(), gpu_run(platform="cpu")], COLLECTED)
    assert document["agreement"] is None
    assert ("agreement of bench-tpu and bench-gpu: no accepted result with a final loss from bench-gpu"
            in document["problems"])
    assert document["problems"][0].startswith("bench-gpu: result: the job ran on cpu, not gpu")


def test_the_report_files(tmp_path):
    runs = [tpu_run(log=job_log(platform="cpu", simulated=True), pods_ready_at=None),
            gpu_run(platform="cpu", simulated=True)]
    document = report.build("compare", "local", RUN, runs, COLLECTED)
    assert document["complete"] is True and document["simulated"] is True
    written = output.write(document, tmp_path)
    assert sorted(p.name for p in written) == ["cost.png", "report.json", "report.md", "step-times.png", "time.png"]
    for chart in ("cost.png", "step-times.png", "time.png"):
        assert (tmp_path / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "report.json").read_text()) == document
    text = (tmp_path / "report.md").read_text()
    assert text.splitlines()[0] == markdown.REHEARSAL
    assert text.splitlines()[2] == f"# Comparison `{RUN}` of stack `compare` (local, simulated)"
    assert "| cost per 1,000 steps (real price x simulated node time) | " in text
    assert "| ran on | cpu (simulated) | cpu (simulated) |" in text
    assert "Simulated: the times say how the pipeline behaves" in text
    assert "pod and image start" not in text  # not a local phase
    assert output.say(document, tmp_path, stream=open(tmp_path / "stderr", "w")) == 0


def test_a_failed_job_is_said_with_the_exception_its_log_ends_with():
    log = job_log(drop=True) + '\nTraceback (most recent call last):\n  File "train.py"\nray.exceptions.RaySystemError: lost\n'
    side, missing = report.side_report(tpu_run(log=log, succeeded=False, outcome="FAILED (exit 1)"), "live", RUN,
                                       COLLECTED)
    assert dict(missing)["finished"] == "the job did not finish: FAILED (exit 1) (ray.exceptions.RaySystemError: lost)"


def test_an_incomplete_report_says_each_problem_on_one_line(tmp_path):
    runs = [tpu_run(log=job_log(drop=True), succeeded=False, outcome="FAILED"), gpu_run()]
    document = report.build("compare", "live", RUN, runs, COLLECTED)
    output.write(document, tmp_path)
    with open(tmp_path / "stderr", "w") as stream:
        assert output.say(document, tmp_path, stream) == 1
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert lines[:2] == ["bench-tpu: result: the job's log holds no result document",
                         "bench-tpu: finished: the job did not finish: FAILED"]
    assert lines[-1] == f"report incomplete, {len(document['problems'])} problem(s): {tmp_path / 'report.md'}"
    assert "## Missing or failed" in (tmp_path / "report.md").read_text()
    assert markdown.seconds(None) == "–"  # a measure not obtained is shown as such, never as 0


def test_job_logs_are_read_from_the_first_brace_of_each_line():
    log = bench.read(LOG + "\n(RayTrainWorker pid=1) {\"event\": \"step\", \"time\": 5.0, \"step\": 99} "
                             "[repeated 2x across cluster]\n")
    assert log.result["side"] == "bench-tpu"
    assert [e["event"] for e in log.events[:3]] == ["start", "step", "step"]
    assert log.last_step == 99  # text after the object (Ray's log deduplication) is ignored
    assert len(log.of("restart")) == 1 and len(log.of("checkpoint")) == 4
    assert bench.read('{"event": "step"}\n{"event": "nonsense", "time": 1}').events == []


# --- against the chip's limit, and what a simulated report may say ---------------------------------------------------

FLOPS = 4.0e12  # a job's declared model FLOPs per step (the result document's flopsPerStep)


def test_a_live_side_reaches_a_fraction_of_its_chips_peak():
    run = tpu_run(log=job_log(flopsPerStep=FLOPS, tokensPerStep=2048))
    side, _ = report.side_report(run, "live", RUN, COLLECTED)
    p50 = side["stepTimeS"]["p50"]
    assert side["flopsPerStep"] == FLOPS and side["peakFlopsPerS"] == 918e12 and side["mfuDevices"] == 8
    assert side["mfu"] == pytest.approx(FLOPS / (p50 * 8 * 918e12))
    # Throughput two ways, reconciled: per steady step from the batch, and the job's own over its last attempt.
    throughput = side["throughput"]
    assert throughput["steadyExamplesPerS"] == pytest.approx(RESULT["batchSize"] / p50)
    assert throughput["steadyTokensPerS"] == pytest.approx(2048 / p50)
    assert throughput["jobExamplesPerS"] == RESULT["examplesPerS"] and "compiling step included" in throughput["basis"]


def test_a_job_without_declared_flops_or_a_simulated_one_has_no_mfu():
    undeclared, _ = report.side_report(tpu_run(), "live", RUN, COLLECTED)
    assert undeclared["flopsPerStep"] is None and undeclared["mfu"] is None and undeclared["peakFlopsPerS"] == 918e12
    simulated, _ = report.side_report(tpu_run(log=job_log(platform="cpu", simulated=True, flopsPerStep=FLOPS),
                                              pods_ready_at=None), "local", RUN, COLLECTED)
    assert simulated["flopsPerStep"] == FLOPS and simulated["mfu"] is None


def test_a_live_report_opens_with_its_findings_and_mfu_beside_each_step_time(tmp_path):
    runs = [tpu_run(log=job_log(flopsPerStep=FLOPS)), gpu_run(flopsPerStep=FLOPS)]
    document = report.build("compare", "live", RUN, runs, COLLECTED)
    text = markdown.render(document, [])
    lines = text.splitlines()
    assert lines[0].startswith("# Comparison") and lines[2].startswith("- Per 1,000 steps: ")
    tpu, gpu = document["sides"]
    assert f"(MFU {tpu['mfu']:.1%})" in lines[3] and f"(MFU {gpu['mfu']:.1%})" in lines[3]
    assert f"(MFU {tpu['mfu']:.1%} at p50)" in text  # in the table's step-time row too
    assert text.index("- Per 1,000 steps") < text.index("| stands for |")
    assert markdown.REHEARSAL not in text


def test_a_simulated_report_says_it_is_a_rehearsal_and_states_no_ratio(tmp_path):
    runs = [tpu_run(log=job_log(platform="cpu", simulated=True, flopsPerStep=FLOPS), pods_ready_at=None),
            gpu_run(platform="cpu", simulated=True, flopsPerStep=FLOPS)]
    document = report.build("compare", "local", RUN, runs, COLLECTED)
    output.write(document, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert text.splitlines()[0] == markdown.REHEARSAL
    assert "nothing about a TPU's or a GPU's speed or cost" in text.splitlines()[0]
    for ratio in ("x what", "x)", "between the slowest and the fastest", "winner", "faster", "cheaper"):
        assert ratio not in text, ratio
    assert f"Agreement ({markdown.SAME_CPU}): the sides agree" in text
    # The sentence names the metric the agreement compared (these fixtures declare none: the final loss).
    assert f"their {document['agreement']['metric']} values differ by" in text and "final losses" not in text
    assert "| MFU (FLOPs / (p50 x devices run on x bf16 dense peak)) | none (simulated) | none (simulated) |" in text
    assert "per steady step (batch / p50)" in text and "compiling step included (the job's)" in text
    assert "steps redone: the job resumes from the last checkpoint Ray Train had registered" in text


def test_every_chart_title_of_a_simulated_report_says_so(monkeypatch, tmp_path):
    from plan.compare import charts

    titles = []
    real = charts.title
    monkeypatch.setattr(charts, "title", lambda report, text: titles.append(real(report, text)) or titles[-1])
    simulated = report.build("compare", "local", RUN, [tpu_run(log=job_log(platform="cpu", simulated=True),
                                                               pods_ready_at=None),
                                                       gpu_run(platform="cpu", simulated=True)], COLLECTED)
    charts.draw(simulated, tmp_path)
    assert len(titles) == 3 and all(t.startswith("SIMULATED") for t in titles)
    live = report.build("compare", "live", RUN, [tpu_run(), gpu_run()], COLLECTED)
    titles.clear()
    charts.draw(live, tmp_path)
    assert len(titles) == 3 and not any("SIMULATED" in t for t in titles)


def _timeline() -> dict:
    return {"offered": [{"t": 0, "rps": 2}, {"t": 1, "rps": 30}], "windows": {"burst": [0.5, 2.0]},
            "replicas": [{"t": 0, "running": 1, "target": 1}, {"t": 1.5, "running": 1, "target": 2}]}


@pytest.mark.parametrize("simulated", [True, False])
def test_the_serving_and_llm_charts_titles_say_simulated_first_as_the_training_charts_do(monkeypatch, tmp_path,
                                                                                        simulated):
    from plan.compare.llm import charts as llm_charts
    from plan.compare.serving import charts as serving_charts

    titles = []
    real = serving_charts.title
    monkeypatch.setattr(serving_charts, "title", lambda report, text: titles.append(real(report, text)) or titles[-1])
    side = {"name": "serve-tpu", "kind": "tpu", "accelerator": "v6e 2x4, 8 chips"}
    serving = {"simulated": simulated, "patterns": {"burst": {}},
               "serving": [{**side, "latenciesMs": {"burst": [12.0, 40.0]}, "timeline": _timeline()}]}
    llm = {"simulated": simulated, "llm": [{**side, "name": "llm-tpu", "samplesMs": {"ttft": [80.0, 95.0],
                                                                                   "itl": [9.0, 11.0]},
                                           "sweep": [{"outputTokensPerS": 40.0, "ttftMs": {"p50": 90.0},
                                                      "tpotMs": {"p50": 10.0}}],
                                           "autoscale": _timeline()}]}
    drawn = serving_charts.draw(serving, tmp_path) + llm_charts.draw(llm, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(drawn) and len(drawn) == 5
    assert len(titles) == 5 and all(t.startswith("SIMULATED") == simulated for t in titles), titles


def test_axis_labels_are_wrapped_and_turned_when_there_are_many_sides():
    from plan.compare import charts

    plt = charts.pyplot()
    fig, ax = plt.subplots()
    long = ["bench-a100\nGPU 8 x nvidia-a100-80gb on a2-ultragpu-8g"] * 4
    charts.axis_labels(ax, long)
    ticks = ax.get_xticklabels()
    assert all(max(len(line) for line in t.get_text().split("\n")) <= charts.LABEL_WIDTH for t in ticks)
    assert all(t.get_rotation() == 30 for t in ticks)
    plt.close(fig)
