"""`ray_tpu_gke.bench`, the reporting API any comparison job uses, and the parser every collector reads it with: what
a run writes, what `bench.read` finds in a log around Ray's own lines, the one steady-step rule, the result
document's contract; the example jobs of examples/bench-jobs; `--entrypoint SIDE=CMD` of `python -m plan.compare`.
No Ray, no JAX: the plain job runs in this interpreter."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout

import pytest

from helpers import ROOT
from plan.compare import __main__ as compare_cli
from plan.compare import sides
from ray_tpu_gke import bench


EXAMPLES = ROOT / "examples" / "bench-jobs"


class Clock:
    """Times a test sets: the recorder's epoch clock and its step timer."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _recorded_run(tmp_path, **facts):
    clock, lines = Clock(), []
    run = bench.Run(run="r1", side="bench-gpu", kind="gpu", platform="cpu", simulated=True, devices=8, steps=4,
                    batch_size=32, framework="torch", result_dir=str(tmp_path), emit=lines.append, clock=clock,
                    timer=clock, **facts).begin()
    for step, seconds in zip(range(1, 5), (2.0, 0.5, 0.25, 0.25)):
        clock.now += seconds
        run.step(step, loss=1.0 / step, examples=32, tokens=32 * 128)
        if step == 2:
            run.checkpoint(step, save_s=0.1)
    return run, lines


def test_a_run_writes_event_lines_and_a_result_document_that_keeps_the_contract(tmp_path):
    run, lines = _recorded_run(tmp_path, flops_per_step=4.0e9)
    with redirect_stdout(io.StringIO()) as printed:
        doc = run.finish(metric=0.75, metric_name="evalLoss",
                         fingerprint=bench.fingerprint([0.5, -0.25], seed=0, inputs="eval batch"))
    assert bench.validate(doc) == []
    assert [json.loads(line)["event"] for line in lines] == ["start", "step", "step", "checkpoint", "step", "step"]
    # Each step's time is the time since the previous one (or since the start); the first step warms up.
    assert doc["stepTimesS"] == [2.0, 0.5, 0.25, 0.25] and doc["compiledSteps"] == [0]
    assert doc["examplesPerS"] == pytest.approx(32 * 3 / 1.0) and doc["tokensPerS"] == pytest.approx(32 * 128 * 3)
    assert doc["evalMetric"] == {"name": "evalLoss", "value": 0.75} and doc["finalLoss"] == 0.25
    assert (doc["flopsPerStep"], doc["flopsSource"]) == (4.0e9, "declared")
    assert doc["checkpoints"] == {"saveS": [0.1], "restoreS": []} and doc["framework"] == "torch"
    assert doc["loss"] == [[1, 1.0], [2, 0.5], [3, 1 / 3], [4, 0.25]]
    # Printed as the last line, and written to <result_dir>/<run>/<side>.json.
    assert json.loads(printed.getvalue().splitlines()[-1]) == doc
    assert json.loads((tmp_path / "r1" / "bench-gpu.json").read_text()) == doc


def test_read_finds_the_events_and_the_last_result_behind_rays_prefixes(tmp_path):
    run, lines = _recorded_run(tmp_path)
    with redirect_stdout(io.StringIO()):
        doc = run.finish(metric=1.0)
    log = ["(RayTrainWorker pid=123) " + line for line in lines]
    log += ['{"event": "step", "step": 9}',  # no time: not an event
            '{"event": "stepped", "time": 1.0}', "Job 'raysubmit_1' succeeded",
            json.dumps({**doc, "run": "an-earlier-one"}), json.dumps(doc) + " [repeated 2x across cluster]"]
    found = bench.read(log)
    assert [e["event"] for e in found.events] == ["start", "step", "step", "checkpoint", "step", "step"]
    assert found.result == doc and found.last_step == 4 and found.lines == len(log)
    assert bench.read("\n".join(log)).events == found.events  # a text or its lines
    # Ray Train 2.56+ writes a worker's line to the driver's stdout and, through its logger, to its stderr: the same
    # event twice is read once, in the order first seen.
    assert bench.read([*log, *log]).events == found.events


def test_the_steady_step_rule_leaves_out_the_compiling_steps():
    times, compiled = [3.0, 0.1, 0.2, 2.5, 0.3], [0, 3]
    assert bench.steady(times, compiled) == [0.1, 0.2, 0.3] and bench.steady_indices(times, compiled) == [1, 2, 4]
    from plan.compare import charts, report

    assert report.step_time_stats(times, compiled)["mean"] == pytest.approx(0.2)
    assert charts.steady_step_times({"stepTimesS": times, "compiledSteps": compiled}) == [0.1, 0.2, 0.3]


def test_the_fingerprint_hashes_the_float32_bytes_numpy_would():
    np = pytest.importorskip("numpy")
    values = [0.1, -2.5, 3.75]
    assert bench.fingerprint(values)["sha256"] == __import__("hashlib").sha256(
        np.asarray(values, np.float32).astype("<f4").tobytes()).hexdigest()


def test_validate_names_the_new_fields_departures(tmp_path):
    run, _ = _recorded_run(tmp_path)
    with redirect_stdout(io.StringIO()):
        doc = run.finish(metric=1.0)
    doc.update(evalMetric={"name": "evalLoss"}, flopsPerStep=-1.0, kind="fpga")
    assert bench.validate(doc) == ["result.kind: 'fpga', expected one of tpu, gpu",
                                   "result.evalMetric.value: missing",
                                   "result.flopsPerStep: -1.0 is not a positive finite number"]
    with pytest.raises(ValueError, match="kind 'fpga' must be one of tpu, gpu"):
        bench.Run(run="r", side="s", kind="fpga", platform="cpu")


def test_bench_imports_no_framework_and_no_pulumi():
    code = ("import sys; from ray_tpu_gke import bench; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pulumi', 'ray', 'jax', 'torch', 'numpy', "
            "'pydantic', 'yaml'}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr


def test_the_plain_job_reports_a_complete_result_with_nothing_but_bench(tmp_path):
    # What the comparison tells it comes through the environment; its command line is its own.
    told = bench.environment(run="r", side="bench-gpu", result_dir=str(tmp_path), seed=0, simulated=True,
                             report_every=5)
    run = subprocess.run([sys.executable, str(EXAMPLES / "plain_job.py"), "--steps", "12"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, **told})
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "r" / "bench-gpu.json").read_text())["run"] == "r"
    found = bench.read(run.stdout)
    doc = found.result
    assert bench.validate(doc) == [] and json.loads(run.stdout.splitlines()[-1]) == doc
    assert [e["step"] for e in found.of("checkpoint")] == [5, 10, 12]
    assert doc["steps"] == 12 and doc["compiledSteps"] == [] and doc["evalMetric"]["name"] == "evalLoss"
    assert doc["loss"][-1][1] < doc["loss"][0][1]  # it learns
    assert (doc["platform"], doc["simulated"], doc["kind"]) == ("cpu", True, None)


def test_the_plain_jobs_own_parser_refuses_the_comparisons_flags():
    """A job whose argument parser knows only its own flags: the comparison never passes one of its own."""
    refused = subprocess.run([sys.executable, str(EXAMPLES / "plain_job.py"), "--steps", "2", "--run", "r"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "unrecognized arguments: --run r" in refused.stderr


@pytest.mark.parametrize("name", ["torch_job.py", "jax_job.py"])
def test_the_example_jobs_import_and_take_the_comparison_flags(name, capsys):
    spec = importlib.util.spec_from_file_location(name[:-3], EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the framework is imported only where the job runs
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert all(flag in text for flag in ("--run", "--side", "--result-dir", "--seed", "--simulate", "--report-every"))
    source = (EXAMPLES / name).read_text()
    assert "from ray_tpu_gke import bench" in source and "run.finish(" in source


def test_entrypoint_overrides_name_a_side_and_replace_its_command():
    args = compare_cli.parse_args(["compare", "--local", "--entrypoint", "bench-a100=python job.py --steps 5",
                                   "--inject-failure", "bench-tpu=12"])
    assert args.entrypoints == {"bench-a100": "python job.py --steps 5"}
    assert (args.inject_failure, args.inject_by_side) == (None, {"bench-tpu": 12})
    plan, values = compare_cli.load_plan("compare")
    found = compare_cli.with_entrypoints(sides.sides(plan, values), args.entrypoints)
    by_name = {s.name: s for s in found}
    assert by_name["bench-a100"].entrypoint == "python job.py --steps 5"
    assert by_name["bench-tpu"].entrypoint.startswith("python -m workloads.train")
    with pytest.raises(sides.SideError, match="--entrypoint names bench-cpu, not a side of this stack"):
        compare_cli.with_entrypoints(found, {"bench-cpu": "python x.py"})


@pytest.mark.parametrize("argv, message", [
    (["--entrypoint", "python job.py"], "expected SIDE=COMMAND"),
    # the stack's entrypoint check (kuberay-entrypoint-shell): KubeRay's submitter runs the command with bash -c
    (["--entrypoint", "bench-a100=python -c 'print(1)"], "opens a '...' quote it never closes"),
    (["--entrypoint", "bench-a100=python job.py --tag #2"], "has a # that begins a word outside quotes ('#2')"),
    (["--inject-failure", "bench-tpu=twelve"], "is not SIDE=STEP"),
    (["--inject-failure", "soon"], "a step number, or SIDE=STEP"),
])
def test_bad_overrides_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        compare_cli.parse_args(["compare", "--local", *argv])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_start_reads_what_the_comparison_tells_through_the_environment(tmp_path):
    told = bench.environment(run="r7", side="bench-h100", result_dir=str(tmp_path), seed=3, simulated=True,
                             report_every=4)
    assert told == {"RAY_TPU_GKE_RUN": "r7", "RAY_TPU_GKE_SIDE": "bench-h100", "RAY_TPU_GKE_RESULT_DIR": str(tmp_path),
                    "RAY_TPU_GKE_SEED": "3", "RAY_TPU_GKE_SIMULATE": "1", "RAY_TPU_GKE_REPORT_EVERY": "4"}
    assert set(told) == set(bench.VARIABLES.values())
    assert bench.settings(told) == {"run": "r7", "side": "bench-h100", "result_dir": str(tmp_path), "seed": 3,
                                    "simulated": True, "report_every": 4}
    lines: list[str] = []
    run = bench.start(platform="cpu", environ=told, emit=lines.append)
    assert (run.facts["run"], run.facts["side"], run.facts["seed"], run.facts["simulated"]) == ("r7", "bench-h100", 3,
                                                                                                True)
    assert run.result_dir == str(tmp_path)
    run.step(1, loss=1.0, step_s=0.1)
    with redirect_stdout(io.StringIO()):
        run.finish()
    assert json.loads((tmp_path / "r7" / "bench-h100.json").read_text())["simulated"] is True
    # What the job says itself wins over the environment; an unset or empty variable is no setting.
    mine = bench.start(platform="cpu", run="mine", seed=9, environ=told, emit=lines.append)
    assert (mine.facts["run"], mine.facts["seed"], mine.facts["side"]) == ("mine", 9, "bench-h100")
    assert bench.settings({"RAY_TPU_GKE_RUN": "", "RAY_TPU_GKE_SIMULATE": "0"}) == {"simulated": False}
    with pytest.raises(ValueError, match=r"\$RAY_TPU_GKE_SEED: 'x' is not a whole number"):
        bench.settings({"RAY_TPU_GKE_SEED": "x"})
    # bench.add_arguments: each flag defaults to its variable, for a job that keeps the flags too.
    import argparse

    parsed = bench.add_arguments(argparse.ArgumentParser(), environ=told).parse_args(["--seed", "5"])
    assert (parsed.run, parsed.side, parsed.seed, parsed.simulate, parsed.report_every) == ("r7", "bench-h100", 5,
                                                                                             True, 4)
