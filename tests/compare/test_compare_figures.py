"""Figures a team can decide on: MFU over the devices the job ran on (said when they are not the side's), the job's
FLOPs per step beside the analytic count (a gap over 10 % flagged), the peak's precision named, the compile row's
source, no fingerprint read as "not checked", and a failed job's log and result kept with the report.

The jobs here are small programs that report through `ray_tpu_gke.bench` as a PyTorch job does (`framework:
"torch"`), run as subprocesses: the workloads interpreter has no PyTorch, and what is checked is what the report
makes of what a job reports, not PyTorch itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from plan.compare import markdown, output, report
from plan.compare.report import NodeSpan, SideRun
from plan.compare.sides import SidePlan
from ray_tpu_gke import bench, catalog

RUN = "figures-20270115080000"
# A GPT-2-small-shaped model (Radford et al. 2019, table 2), a stated input: the analytic count is computed from it.
MODEL = {"parameters": 124_000_000, "layers": 12, "heads": 12, "dModel": 768, "seqLen": 1024}
BATCH = 8
# A job in the shape of a PyTorch training script: its own argument parser (it refuses any other flag), the
# comparison's settings from the environment, `framework: torch`, and the FLOPs it declares as a share of the analytic
# count (`--flops-share`), as a counter that misses an operation would.
JOB = textwrap.dedent(
    """
    import argparse
    from ray_tpu_gke import bench

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--flops-share", type=float, default=1.0)
    parser.add_argument("--compile-s", type=float)
    parser.add_argument("--fail", action="store_true")
    args = parser.parse_args()
    model = MODEL
    tokens = BATCH * model["seqLen"]
    run = bench.start(kind="gpu", platform="gpu", devices=args.devices, device_kind="NVIDIA A100-SXM4-80GB",
                      framework="torch", framework_version="2.9.0", steps=args.steps, batch_size=BATCH)
    if args.compile_s is not None:
        run.compiled(args.compile_s)  # torch.compile's time, as the job measured it
    for step in range(1, args.steps + 1):
        run.step(step, loss=1.0 / step, examples=BATCH, tokens=tokens, step_s=0.02 + 0.001 * step)
    count = bench.from_model(model, tokens)["total"]
    run.finish(metric=0.5, flops_per_step=args.flops_share * count, flops_source="FlopCounterMode x workers",
               extra={"model": {**model, "tokensPerStep": tokens}, "note": "kept with the report"})
    if args.fail:
        raise AssertionError("the evaluation diverged")
    """
).replace("MODEL", repr(MODEL)).replace("BATCH", str(BATCH))


def a100_side(name="bench-a100") -> SidePlan:
    """A side that stands for 8 A100 80GB on one node, as the compare stack's bench-a100."""
    return SidePlan(name=name, namespace="compare", kind="gpu", group="gpu", item="a100-8",
                    accelerator="8 x nvidia-a100-80gb on a2-ultragpu-8g", hosts=1, replicas=1, units_per_node=8,
                    entrypoint="python job.py", manifest={}, capacity="onDemand", node_hourly=23.57,
                    gpu_accelerator="nvidia-a100-80gb")


def run_job(tmp_path, side: str, *flags: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    told = bench.environment(run=RUN, side=side, result_dir=str(tmp_path / "job-results"), seed=0)
    return subprocess.run([sys.executable, str(script), *flags], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **told})


def side_run(side: SidePlan, done: subprocess.CompletedProcess) -> SideRun:
    log = done.stdout + done.stderr
    first = bench.read(log).events[0]["time"]
    return SideRun(side=side, job=f"compare/{side.name}", requested_at=first - 30.0,
                   nodes=[NodeSpan("gke-a100-8-a", first - 29.0, first - 10.0, None)], nodes_ready_at=first - 10.0,
                   pods_ready_at=first - 5.0, log=log, outcome="SUCCEEDED" if done.returncode == 0 else
                   f"FAILED (exit {done.returncode})", succeeded=done.returncode == 0, ended_at=first + 5.0)


def build(runs: list[SideRun]) -> dict:
    """The live report of these runs, collected when the last one ended."""
    return report.build("compare", "live", RUN, runs, collected_at=max(r.ended_at for r in runs))


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    """A torch job that ran on 1 device, reported on a side that stands for 8 GPUs, live."""
    tmp_path = tmp_path_factory.mktemp("one-device")
    done = run_job(tmp_path, "bench-a100", "--devices", "1", "--flops-share", "0.98", "--compile-s", "0.5")
    assert done.returncode == 0, done.stderr
    document = build([side_run(a100_side(), done)])
    return document, markdown.render(document, [])


def test_mfu_divides_by_the_one_device_the_job_ran_on_and_the_report_says_so(one_device):
    document, text = one_device
    side = document["sides"][0]
    peak = catalog.peak("gpu", "nvidia-a100-80gb").bf16_flops_per_s
    p50 = 0.024  # the steady steps 2..6 took 0.022..0.026 s
    assert side["stepTimeS"]["p50"] == pytest.approx(p50)
    assert (side["devices"], side["mfuDevices"], side["sideDevices"]) == (1, 1, 8)
    assert side["mfu"] == pytest.approx(side["flopsPerStep"] / (p50 * 1 * peak))
    assert side["mfu"] == pytest.approx(8 * side["flopsPerStep"] / (p50 * 8 * peak))  # not divided by the side's 8
    assert side["devicesNote"].startswith("the job ran on 1 device(s), the side stands for 8: MFU divides by the 1")
    mfu_row = next(line for line in text.splitlines() if line.startswith("| MFU "))
    assert mfu_row == (f"| MFU (FLOPs / (p50 x devices run on x bf16 dense peak)) | {side['mfu']:.1%} (over the 1 "
                       "device(s) the job ran on; the side stands for 8) |")
    assert f"- bench-a100: {side['devicesNote']}." in text
    # The peak names its precision; the compile row its source, torch's, never jax.monitoring.
    assert side["peakPrecision"] == "bf16 dense" and "| peak per device (bf16 dense, catalogue) | 312 TFLOP/s |" in text
    assert side["compileSource"] == "torch, measured by the job" and "jax.monitoring" not in text
    assert "| compile | 500.00 ms (torch, measured by the job) |" in text


def test_a_flops_count_2_percent_under_the_analytic_one_is_accepted(one_device):
    document, text = one_device
    check = document["sides"][0]["flopsCheck"]
    tokens = BATCH * MODEL["seqLen"]
    # MaxText's count: 6 N tokens, plus 12 L H Dh S^2 per sequence, halved for the causal mask.
    analytic = 6 * MODEL["parameters"] * tokens + 12 * 12 * 12 * 64 * 1024**2 * BATCH / 2
    assert check["analyticFlopsPerStep"] == pytest.approx(analytic)
    assert check["fullAttentionFlopsPerStep"] == pytest.approx(analytic + 12 * 12 * 12 * 64 * 1024**2 * BATCH / 2)
    assert check["gap"] == pytest.approx(-0.02) and check["flagged"] is False
    assert f"{check['jobFlopsPerStep']:.3g} (analytic {analytic:.3g}, -2.0%)" in text and "OFF BY" not in text


def test_a_flops_count_14_percent_under_the_analytic_one_is_flagged(tmp_path):
    done = run_job(tmp_path, "bench-a100", "--flops-share", "0.86")
    document = build([side_run(a100_side(), done)])
    check = document["sides"][0]["flopsCheck"]
    assert check["gap"] == pytest.approx(-0.14) and check["flagged"] is True
    text = markdown.render(document, [])
    assert "(analytic " in text and "-14.0%: OFF BY MORE THAN 10%)" in text
    assert "bench-a100: the job's FLOPs per step (" in text and "are -14.0% off the analytic count" in text
    # The tolerance itself: a gap of exactly 10 % is accepted, anything beyond flagged, either way.
    count = bench.analytic(parameters=1e6, tokens=1000)
    assert bench.cross_check(0.9 * count["total"], count)["flagged"] is False
    assert bench.cross_check(1.11 * count["total"], count)["flagged"] is True
    assert bench.cross_check(None, count) is None and bench.from_model({"layers": 2}, 1000) is None


def test_a_torch_job_that_measured_no_compile_says_not_measured(tmp_path):
    done = run_job(tmp_path, "bench-a100")
    document = build([side_run(a100_side(), done)])
    side = document["sides"][0]
    assert side["compileSource"] is None and "| compile | not measured |" in markdown.render(document, [])
    assert "its compile time was not measured" in markdown.render(document, [])


def test_no_fingerprint_is_not_checked_not_a_disagreement(tmp_path):
    runs = [side_run(a100_side(name), run_job(tmp_path, name)) for name in ("bench-a100", "bench-h100")]
    document = build(runs)
    agreement = document["agreement"]
    assert agreement["agree"] is True and agreement["fingerprint"]["checked"] is False
    assert agreement["fingerprint"]["reason"] == ("bench-a100 and bench-h100 declared no output fingerprint: "
                                                  "not checked")
    assert not [p for p in document["problems"] if p.startswith("agreement")]
    sentence = next(line for line in markdown.render(document, []).splitlines() if "sides agree" in line)
    assert "do NOT agree" not in sentence and "bit for bit" not in sentence and "not checked" in sentence


def test_a_failed_jobs_log_and_result_stay_in_the_report_folder_and_its_last_lines_are_quoted(tmp_path):
    done = run_job(tmp_path, "bench-a100", "--fail")
    assert done.returncode == 1
    runs = [side_run(a100_side(), done)]
    out = tmp_path / "report"
    output.keep_jobs_output(runs, RUN, out)
    document = build(runs)
    side = document["sides"][0]
    assert (side["logFile"], side["resultFile"]) == ("logs/bench-a100.log", f"results/{RUN}/bench-a100.json")
    assert (out / side["logFile"]).read_text() == runs[0].log
    kept = json.loads((out / side["resultFile"]).read_text())
    assert kept["note"] == "kept with the report" and bench.validate(kept) == []  # its extra fields too
    assert side["logTail"][-1] == "AssertionError: the evaluation diverged"
    assert "bench-a100: finished: the job did not finish: FAILED (exit 1) (AssertionError: the evaluation diverged)" \
        in document["problems"]
    text = markdown.render(document, [])
    head = (f"### bench-a100: the job's last log lines (kept: `logs/bench-a100.log`, "
            f"`results/{RUN}/bench-a100.json`)")
    assert head in text and "\n".join(side["logTail"]) in text
