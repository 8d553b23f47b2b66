"""Is a side input-bound? The default training job's token files (workloads.token_files: written once, one file per
shard of steps and process, read back through Ray Data), the reading of Ray Data's iterator statistics into the wait
share, and the report's `input` object, rows and verdict (plan/compare/input_wait.py). Pure: no Ray; the local Ray
modules (tests/workloads/test_workloads_train.py, tests/compare/test_compare_local.py) check the same fields
measured."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from helpers import ROOT
from ray_tpu_gke.workload import lm_config
from compare_runs import COLLECTED, RESULT, RUN, gpu_run, job_log, tpu_run

from plan.compare import input_wait, markdown, report

sys.path.insert(0, str(ROOT))
from workloads import lm, token_files  # noqa: E402  (no Ray, no JAX)

# What Ray 2.60 prints for an iterator (ray/data/_internal/stats.py IterStatsSummary.to_string; figures by `fmt`:
# seconds above 1, else milliseconds above 0.001, else microseconds).
STATS = """Operator 1 ReadNumpy: 4 tasks executed, 4 blocks produced in 0.02s

Dataset iterator time breakdown:
* Total time overall: 12.5s
    * Total time in Ray Data iterator initialization code: 120.5ms
    * Total time user thread is blocked by Ray Data iter_batches: 3.25s
    * Total time spent waiting for the first batch after starting iteration: 750.0ms
    * Total execution time for user thread: 9.1s
* Batch iteration time breakdown (summed across prefetch threads):
    * In ray.get(): 10.5us min, 2.5ms max, 1.0ms avg, 20.1ms total
"""


def test_ray_datas_iterator_figures_are_read_in_seconds_whatever_their_unit():
    assert token_files.iterator_times(STATS) == {"iterS": 12.5, "blockedS": 3.25, "firstBatchS": pytest.approx(0.75)}
    small = STATS.replace("3.25s", "512.0us").replace("750.0ms", "20.0us")
    assert token_files.iterator_times(small)["blockedS"] == pytest.approx(512e-6)


def test_a_line_ray_data_leaves_out_is_zero_once_the_iteration_ended_and_unknown_before():
    ended = "\n".join(line for line in STATS.splitlines() if "blocked" not in line and "first batch" not in line)
    assert token_files.iterator_times(ended) == {"iterS": 12.5, "blockedS": 0.0, "firstBatchS": 0.0}
    running = "\n".join(line for line in STATS.splitlines() if "Total time overall" not in line)
    assert token_files.iterator_times(running)["iterS"] is None
    assert token_files.waiting(token_files.iterator_times(running), 0.0)["waitShare"] is None


def test_the_wait_share_leaves_out_the_first_batch_and_the_loops_own_pauses():
    times = token_files.iterator_times(STATS)
    found = token_files.waiting(times, paused_s=2.0)
    assert found["waitShare"] == pytest.approx((3.25 - 0.75) / (12.5 - 0.75 - 2.0))
    assert found["pausedS"] == 2.0 and found["blockedS"] == 3.25
    assert token_files.waiting(times, paused_s=0.0)["waitShare"] == pytest.approx(2.5 / 11.75)


def test_the_token_files_hold_each_processs_rows_of_every_step_and_are_written_once(tmp_path):
    model = lm_config.config_for(layers=1, seq_len=16)
    steps, batch, processes = 23, 8, 2
    folder = token_files.corpus(str(tmp_path), steps=steps, seed=3, batch_size=batch, processes=processes,
                                model=model)
    paths = token_files.write(folder, steps=steps, batch_size=batch, processes=processes, seed=3, model=model)
    assert len(paths) == token_files.shards(steps) * processes == 6
    # The order the splitter deals them out: shard by shard, process by process.
    assert [p.rsplit("/", 1)[1] for p in paths[:3]] == [
        "shard-000000-process-000.npy", "shard-000000-process-001.npy", "shard-000001-process-000.npy"]
    rows = {p: np.load(p) for p in paths}
    share = batch // processes
    assert rows[paths[0]].shape == (token_files.STEPS_PER_FILE * share, model.seq_len + 1)
    assert rows[paths[-1]].shape == ((steps - 20) * share, model.seq_len + 1)  # the last shard stops at `steps`
    for step in (0, 9, 10, 22):  # a process's rows of a step are its slice of workloads.lm's global batch
        shard, offset = divmod(step, token_files.STEPS_PER_FILE)
        got = np.concatenate([rows[paths[shard * processes + p]][offset * share:(offset + 1) * share]
                              for p in range(processes)])
        assert np.array_equal(got, lm.step_tokens(step, batch, 3, model))
    before = {p: (tmp_path / p).stat().st_mtime_ns for p in paths}
    assert token_files.write(folder, steps=steps, batch_size=batch, processes=processes, seed=3, model=model) == paths
    assert {p: (tmp_path / p).stat().st_mtime_ns for p in paths} == before  # kept, not written again
    assert not list(folder.glob("*.partial.npy"))


@pytest.mark.parametrize("share, bound", [(0.38, True), (0.10, True), (0.099, False), (0.0, False)])
def test_the_verdict_names_the_share_and_whether_it_is_input_bound(share, bound):
    text = input_wait.verdict(share, 0.120, 0.080)
    assert text.startswith(("input-bound: " if bound else "not input-bound: ") + f"{share * 100:.0f} % of step time")
    assert text.endswith("(a step takes 120 ms on the job's data, 80 ms on synthetic data)")
    assert input_wait.verdict(None, 0.1, None).startswith("not measured")


MEASURED = {"waitShare": 0.38, "blockedS": 4.0, "iterS": 11.0, "firstBatchS": 0.5, "pausedS": 0.0,
            "syntheticStepTimeS": 0.004, "source": "Ray Data"}


def test_each_side_of_the_report_carries_its_input_wait_and_verdict():
    runs = [tpu_run(log=job_log(input=MEASURED)), gpu_run(input=dict(MEASURED, waitShare=0.02))]
    document = report.build("compare", "live", RUN, runs, COLLECTED)
    tpu, gpu = document["sides"]
    assert {k: tpu["input"][k] for k in MEASURED} == MEASURED
    assert tpu["input"]["stepTimeS"] == tpu["stepTimeS"]["p50"]
    assert tpu["input"]["verdict"].startswith("input-bound: 38 % of step time waiting on data")
    assert gpu["input"]["verdict"].startswith("not input-bound: 2 % of step time waiting on data")
    assert document["complete"] is True  # a measure of its own, not one the contract requires
    text = markdown.render(document, [])
    assert "| input wait (Ray Data: blocked / iterator time) | 38.0 % | 2.0 % |" in text
    assert "| step time on synthetic data (p50) | 4 ms | 4 ms |" in text
    assert "- bench-tpu: input-bound: 38 % of step time waiting on data" in text


def test_a_job_that_reports_no_input_statistics_is_not_measured_and_a_rehearsal_says_where_it_measured():
    document = report.build("compare", "live", RUN, [tpu_run(), gpu_run()], COLLECTED)
    assert "input" not in RESULT
    assert document["sides"][0]["input"]["waitShare"] is None
    assert document["sides"][0]["input"]["verdict"].startswith("not measured")
    assert "| input wait (Ray Data: blocked / iterator time) | not measured | not measured |" in markdown.render(
        document, [])
    runs = [tpu_run(log=job_log(platform="cpu", simulated=True, input=MEASURED), pods_ready_at=None),
            gpu_run(platform="cpu", simulated=True, input=MEASURED)]
    text = markdown.render(report.build("compare", "local", RUN, runs, COLLECTED), [])
    assert "- bench-tpu in this rehearsal (the CPU standing in, data on this machine's disk): input-bound" in text
