"""workloads.train as a comparison job runs it: the result document, the event lines, the platform check and the
shape from the worker group's environment.

The tests of the first part need no Ray: the command line (`parse_args`, `declared`), $SLICE_* and $SLICE_COUNT,
the result document's contract (workloads.result). The second part runs real local Ray 2.60 jobs, like
tests/workloads/test_workloads_ray.py in two halves: run by the workloads interpreter as a script (`python
tests/workloads/test_workloads_train.py OUT.json`), it starts a cluster (workloads.local_cluster) with a head, one simulated
v6e 2x4 slice of two 4-chip hosts and one node with a `GPU` resource but no GPU, and runs `python -m workloads.train`
as a RayJob's driver: on the slice with --simulate, then again with the same run name and more steps (a later job of
the run resumes from its checkpoint), once with --gpus 1 --simulate, and once on the slice without --simulate (no TPU
here: it must stop before training). A GPU job without CUDA stops the same way (the worker's platform check, tested
above without Ray); the same seed's steps redone after a restart reproduce their losses exactly
(tests/workloads/test_workloads_multislice.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ray_tpu_gke import bench
from ray_tpu_gke.workload import lm_config, train_args
from ray_tpu_gke.workload.slice import SliceSpec

from workloads import result as results  # (no Ray, no JAX)
from workloads import train

if __name__ != "__main__":
    import pytest

    pytestmark = pytest.mark.local_ray

SPEC = SliceSpec("v6e", "4x4", hosts=4, chips_per_host=4)
SHAPE_ENV = {"SLICE_GENERATION": "v6e", "SLICE_TOPOLOGY": "4x4", "SLICE_HOSTS": "4", "SLICE_CHIPS_PER_HOST": "4",
             "SLICE_COUNT": "2"}
STEPS, RESUMED_STEPS = 8, 12
SMALL_MODEL = lm_config.config_for(layers=1, seq_len=16)


# --------------------------------------------------------------------------------------------------------------------
# Script half: runs under the workloads interpreter.
# --------------------------------------------------------------------------------------------------------------------

# A line Ray forwarded to the driver from a worker, a raylet or the autoscaler: `(RayTrainWorker pid=123)`,
# `(pid=123, ip=...)`, `(raylet)` or `(autoscaler +2s)` first, in colour (Ray 2.60 ray/_private/worker.py
# print_worker_logs).
WORKER_LINE = re.compile(r"^(\x1b\[[0-9;]*m)*\((raylet|autoscaler [^()]*|([^()]* )?pid=\d+)(, ip=[^()]*)?\)")


def _last_own_line(text: str) -> str:
    """The driver's own last line: Ray prints its workers' lines as they reach the driver, which can be after the
    driver's own last line (a worker's blank line came after the refusal once, in a fresh clone's CI run)."""
    return next((line for line in reversed(text.strip().splitlines()) if not WORKER_LINE.match(line)), "")


def _train(address: str, argv: list[str], result_dir: Path) -> dict:
    run = subprocess.run([sys.executable, "-m", "workloads.train", "--result-dir", str(result_dir), *argv], cwd=ROOT,
                         env={**os.environ, "RAY_ADDRESS": address}, capture_output=True, text=True, timeout=600)
    return {"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr,
            "lastStdout": _last_own_line(run.stdout), "lastStderr": _last_own_line(run.stderr),
            "files": sorted(str(p.relative_to(result_dir)) for p in result_dir.rglob("*.json"))}


def _newest_checkpoint(run_dir: Path) -> dict:
    """The step and parameter count of the newest checkpoint Ray Train kept for a run (workloads.lm's format)."""
    import jax

    from workloads import lm

    newest = max((p for p in run_dir.glob("checkpoint_*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    params, _, _, step = lm.load(newest, 0, SMALL_MODEL)
    return {"step": step, "parameters": sum(int(leaf.size) for leaf in jax.tree.leaves(params))}


def _simulate(out: Path) -> None:
    from workloads.local_cluster import LocalCluster

    os.environ.pop("JAX_PLATFORMS", None)  # as in a pod: Ray Train picks the platform (tpu, cuda) itself
    spec = SliceSpec("v6e", "2x4", hosts=2, chips_per_host=4)
    seen: dict = {}
    storage = ["--storage-path", str(out.parent / "ckpt")]
    # The smallest language model (one layer, 16 tokens a sequence), as in the multislice module: what is tested is
    # the instrumented run and its contract, and each worker compiles its step once per job.
    small = ["--layers", str(SMALL_MODEL.layers), "--seq-len", str(SMALL_MODEL.seq_len)]

    def on_the_slice(steps: int) -> list[str]:
        return [*spec.to_args(), *small, "--steps", str(steps), "--batch-size", "32", "--report-every", "4",
                *storage]

    with LocalCluster() as cluster:
        cluster.tpu_slice(spec, "tpu-0")
        cluster.gpu_node(1)
        first = [*on_the_slice(STEPS), "--simulate", "--run", "run-first", "--side", "bench-tpu"]
        seen["first"] = _train(cluster.address, first, out.parent / "results")
        # A later job of the same run (its RayJob submitted again): Ray Train resumes it from the run's newest
        # checkpoint under the storage path, the first job's last step.
        resumed = [*on_the_slice(RESUMED_STEPS), "--simulate", "--run", "run-first", "--side", "bench-tpu"]
        seen["resumed"] = _train(cluster.address, resumed, out.parent / "resumed")
        gpu = ["--gpus", "1", *small, "--steps", "3", "--batch-size", "8", *storage]
        seen["gpu-simulated"] = _train(cluster.address, [*gpu, "--simulate", "--run", "gpu-sim"],
                                       out.parent / "results")
        seen["tpu-refused"] = _train(cluster.address, [*on_the_slice(STEPS), "--run", "tpu-refused"],
                                     out.parent / "refused")
    seen["resumed"]["checkpoint"] = _newest_checkpoint(out.parent / "ckpt" / "run-first")
    tokens = out.parent / "ckpt"
    seen["first"]["tokenFiles"] = sorted(str(p.relative_to(tokens)) for p in (tokens / "tokens").rglob("*.npy"))
    out.write_text(json.dumps(seen, indent=1, sort_keys=True))


# --------------------------------------------------------------------------------------------------------------------
# Test half, without Ray: the command line and the result contract.
# --------------------------------------------------------------------------------------------------------------------

def _usage_error(argv, environ, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        train.parse_args(argv, environ=environ)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_the_shape_comes_from_the_worker_groups_environment():
    spec, args = train.parse_args(["--steps", "10"], environ=SHAPE_ENV)
    assert spec == SPEC and args.slices == 2
    spec, args = train.parse_args([*SPEC.to_args(), "--slices", "2"], environ=SHAPE_ENV)  # agreeing: fine
    assert spec == SPEC and args.slices == 2
    spec, args = train.parse_args(SPEC.to_args(), environ={})
    assert spec == SPEC and args.slices == 1  # no $SLICE_COUNT: one slice


def test_arguments_that_contradict_the_environment_name_both_values(capsys):
    err = _usage_error(["--hosts", "2", "--chips-per-host", "8", "--slices", "3"], SHAPE_ENV, capsys)
    assert "--hosts 2 contradicts $SLICE_HOSTS=4" in err
    assert "--chips-per-host 8 contradicts $SLICE_CHIPS_PER_HOST=4" in err
    assert "--slices 3 contradicts $SLICE_COUNT=2" in err
    err = _usage_error(["--topology", "2x8"], SHAPE_ENV, capsys)
    assert "--topology 2x8 contradicts $SLICE_TOPOLOGY=4x4" in err


def test_a_missing_shape_and_a_bad_environment_are_usage_errors(capsys):
    assert "missing --generation (or $SLICE_GENERATION)" in _usage_error([], {}, capsys)
    assert "$SLICE_HOSTS='four' is not a whole number" in _usage_error([], {**SHAPE_ENV, "SLICE_HOSTS": "four"},
                                                                        capsys)
    assert "--slices describe TPU slices" in _usage_error(["--gpus", "8", "--slices", "2"], {}, capsys)


def test_each_worker_checks_the_jobs_shape_against_its_pods():
    from workloads.train_loop import shape_problems

    shape = {"generation": "v6e", "topology": "4x4", "hosts": 4, "chips_per_host": 4, "slices": 2}
    assert shape_problems(shape, SHAPE_ENV) == [] and shape_problems(shape, {}) == []
    assert shape_problems({**shape, "hosts": 2, "slices": 3}, SHAPE_ENV) == [
        "the job's hosts is 2 but this pod declares $SLICE_HOSTS=4",
        "the job's slices is 3 but this pod declares $SLICE_COUNT=2"]
    assert shape_problems(None, SHAPE_ENV) == ["the job asked for GPUs but this pod declares a TPU slice "
                                               "($SLICE_GENERATION=v6e)"]
    assert shape_problems(None, {}) == []


def test_the_model_is_sized_by_a_preset_and_flags_and_the_batch_fits_the_devices(capsys):
    _, args = train.parse_args(["--gpus", "8"], environ={})
    assert (args.model.d_model, args.model.layers, args.batch_size) == (32, 2, 16)  # the tiny preset
    _, args = train.parse_args(["--gpus", "8", "--preset", "gpt-100m", "--layers", "6"], environ={})
    assert (args.model.d_model, args.model.layers, args.model.vocab, args.batch_size) == (768, 6, 32768, 256)
    assert 100e6 < lm_config.config_for("gpt-100m").parameters < 120e6
    assert "must be a multiple of the job's 8 chips or GPUs" in _usage_error(["--gpus", "8", "--batch-size", "12"],
                                                                             {}, capsys)
    assert "--d-model 30 is not a multiple of --heads 4" in _usage_error(
        ["--gpus", "1", "--d-model", "30", "--heads", "4"], {}, capsys)


def test_the_run_and_side_default_from_the_name():
    _, args = train.parse_args(["--gpus", "8", "--name", "bench-gpu"], environ=SHAPE_ENV)  # a GPU job ignores $SLICE_*
    assert args.side == "bench-gpu" and args.run.startswith("bench-gpu-") and len(args.run) == len("bench-gpu-") + 14
    assert args.result_dir == "/gcs/compare" and args.seed == 0 and args.simulate is False
    _, args = train.parse_args(["--gpus", "1", "--run", "r1", "--side", "gpu", "--result-dir", "", "--seed", "7"])
    assert (args.run, args.side, args.result_dir, args.seed) == ("r1", "gpu", "", 7)


def test_declared_reads_only_what_the_entrypoint_says():
    argv = ["--steps", "300", "--name", "bench-tpu", "--generation", "v6e", "--topology", "2x4", "--hosts", "1",
            "--chips-per-host", "8"]
    assert train_args.declared(argv) == {
        "generation": "v6e", "topology": "2x4", "hosts": 1, "chipsPerHost": 8, "slices": None, "gpus": None,
        "steps": 300, "batchSize": 16, "preset": "tiny", "reportEvery": 50, "seed": 0, "name": "bench-tpu", "run": None,
        "side": None,
        "resultDir": "/gcs/compare", "storagePath": "/gcs/ray-train", "simulate": False}
    assert train_args.declared(["--slices", "2"])["generation"] is None  # left to $SLICE_*: the planner fills it in
    assert train_args.declared(["--gpus", "8"])["gpus"] == 8
    with pytest.raises(ValueError, match="unrecognized arguments: --bogus"):
        train_args.declared(["--bogus"])
    with pytest.raises(ValueError, match="invalid int value"):
        train_args.declared(["--hosts", "two"])


def test_parse_args_and_declared_import_neither_ray_nor_jax():
    code = ("import sys; from workloads import train; from ray_tpu_gke.workload import train_args; "
            "train.parse_args(['--gpus', '1']); train_args.declared([]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'jax')))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr


def test_the_ledgers_process_imports_ray_but_not_ray_train():
    """Each run's ledger actor starts in a process of its own, which imports the ledger's module: Ray Train (pandas,
    pyarrow, Ray Data) stays out of it; the controller's callback, which needs it, is a module of its own."""
    from helpers import workloads_python

    code = ("import sys; from workloads import ledger; "
            "print(sorted({m.split('.')[0] + '.' + m.split('.')[1] for m in sys.modules if m.startswith('ray.')}))")
    run = subprocess.run([workloads_python(), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    loaded = run.stdout.strip()
    assert run.returncode == 0 and "ray.util" in loaded, run.stderr
    assert "ray.train" not in loaded and "ray.data" not in loaded, loaded


def test_event_lines_are_found_behind_rays_prefix():
    log = "\n".join([
        '\x1b[36m(RayTrainWorker pid=123)\x1b[0m {"event": "step", "step": 1, "stepS": 0.5, "loss": 1.0, "time": 1.0}',
        "(TrainController pid=9) Started training worker group of size 2",
        '{"not": "an event"}',
        bench.event_line("checkpoint", time=2.0, step=1, saveS=0.1)])
    assert [e["event"] for e in bench.read(log).events] == ["step", "checkpoint"]
    with pytest.raises(ValueError):
        bench.event_line("stepped")


def test_preemptions_get_their_own_budget_only_where_rays_failure_config_has_one():
    import dataclasses

    @dataclasses.dataclass
    class Ray255FailureConfig:  # the fields of Ray 2.55's ray.train.FailureConfig
        max_failures: int = 0
        controller_failure_limit: int = -1

    @dataclasses.dataclass
    class Ray258FailureConfig(Ray255FailureConfig):  # ray-project/ray#64360 added max_preemption_failures
        max_preemption_failures: int = -1

    assert train.failure_config(Ray255FailureConfig, 2) == Ray255FailureConfig(max_failures=2)
    assert train.failure_config(Ray258FailureConfig, 2) == Ray258FailureConfig(max_failures=2,
                                                                               max_preemption_failures=-1)


def _probe(platform, error=None, jax_platforms="cuda", plugins=()):
    return {"platform": platform, "deviceKind": platform, "devices": 1, "localDevices": 1, "error": error,
            "jaxPlatforms": jax_platforms, "plugins": {"gpu": list(plugins), "tpu": []}}


def test_the_platform_check_names_the_missing_backend_or_passes():
    from workloads import backend

    assert backend.expected_platform("gpu", simulate=False) == "gpu"
    assert backend.expected_platform("tpu", simulate=True) == "cpu"
    assert backend.check("gpu", "--gpus 8", "gpu", _probe("gpu", plugins=["jax_plugins.xla_cuda12"]), 0) is None
    # A platform list that allows the CPU: JAX falls back to it, and the job must not train there.
    line = backend.check("gpu", "--gpus 8", "gpu", _probe("cpu", jax_platforms="cuda,cpu"), 3)
    assert line.startswith("workloads.train: --gpus 8 needs JAX's CUDA backend (platform gpu), but rank 3 has no "
                           "CUDA backend: JAX runs on cpu instead; JAX_PLATFORMS=cuda,cpu; jax-cuda12-plugin")
    line = backend.check("gpu", "--gpus 1", "gpu", _probe(None, "RuntimeError: no GPU", plugins=["x"]), 0)
    assert "JAX started no backend (RuntimeError: no GPU)" in line and "x installed" in line
    assert "--simulate runs on the CPU, but rank 0's JAX runs on gpu" in backend.check(
        "gpu", "--gpus 1", "cpu", _probe("gpu"), 0)
    assert "\n" not in line  # one line


def _record(attempts=1):
    steps = [{"attempt": 0, "step": k, "stepS": 0.1 * k, "loss": 1.0 / k, "time": 100.0 + k, "compiled": k == 1}
             for k in (1, 2, 3)]
    record = {"attempts": [{"attempt": 0, "fromStep": 0, "enteredAt": 90.0, "workers": [
                  {"rank": 0, "platform": "cpu", "deviceKind": "cpu", "sliceName": "s-0", "megascaleSliceId": None,
                   "megascaleNumSlices": None, "compilationCache": "/gcs/jax-cache", "node": "n0",
                   "tpuWorkerId": "0"}]}],
              "failures": [], "steps": steps, "compile": [["/jax/core/compile/backend_compile_duration", 0.5, 0]],
              "checkpoints": {"saveS": [0.2], "restoreS": []}, "restarts": [], "refusal": None,
              "finish": {"fingerprint": {"seed": 0, "values": [0.5, -0.25], "sha256": "ab"}, "platform": "cpu",
                         "deviceKind": "cpu", "devices": 4, "processes": 1, "finalLoss": 1 / 3, "jaxVersion": "0.10.2"}}
    if attempts == 2:  # failed after step 3, resumed from the checkpoint at step 2
        record["attempts"].append({**record["attempts"][0], "attempt": 1, "fromStep": 2, "enteredAt": 110.0})
        record["steps"].append({"attempt": 1, "step": 3, "stepS": 0.4, "loss": 0.3, "time": 120.0, "compiled": True})
        record["restarts"].append({"fromStep": 2, "failureSeenAt": 105.0, "resumedAt": 120.0, "stepsRedone": 1})
    return record


def _build(record):
    return results.build(record, run="r", side="bench-tpu", kind="tpu", simulated=True, slices=1, steps=3,
                         batch_size=32, seed=0, process_start=80.0, fit_called=85.0, started_at=80.0,
                         finished_at=130.0, ray_version="2.55.0", jax_version="0.10.2")


def test_the_result_document_from_a_ledger_record():
    doc = _build(_record())
    assert bench.validate(doc) == []
    assert doc["stepTimesS"] == pytest.approx([0.1, 0.2, 0.3]) and doc["compiledSteps"] == [0]
    assert (doc["processStartToFirstStepS"], doc["workerGroupStartS"]) == (21.0, 5.0)
    assert doc["examplesPerS"] == pytest.approx(32 * 2 / 0.5)  # the steady steps: the compiling one left out
    assert doc["compilationCache"] == "/gcs/jax-cache" and doc["workers"][0]["slice"] == 0


def test_a_restart_keeps_every_executed_step_and_the_latest_loss_per_step():
    doc = _build(_record(attempts=2))
    assert bench.validate(doc) == []
    assert doc["stepTimesS"] == pytest.approx([0.1, 0.2, 0.3, 0.4]) and doc["compiledSteps"] == [0, 3]
    assert doc["loss"] == [[1, 1.0], [2, 0.5], [3, 0.3]]
    assert doc["examplesPerS"] == pytest.approx(32 * 2 / 0.5)  # every attempt's steady steps: both compiles out
    assert doc["restarts"] == [{"failureSeenAt": 105.0, "resumedAt": 120.0, "fromStep": 2, "stepsRedone": 1}]


def test_validate_names_every_departure_from_the_contract():
    doc = _build(_record())
    del doc["finalLoss"]
    doc.update(kind="fpga", devices="4", compiledSteps=[7], fingerprint={"seed": 0, "values": ["x"]})
    assert bench.validate(doc) == [
        "result.finalLoss: missing",
        "result.devices: str '4', expected int",
        "result.kind: 'fpga', expected one of tpu, gpu",
        "result.compiledSteps: index 7 is not one of the 3 steps",
        "result.fingerprint.sha256: missing",
        "result.fingerprint.values[0]: 'x' is not a finite float"]


# --------------------------------------------------------------------------------------------------------------------
# Test half, on the local Ray cluster.
# --------------------------------------------------------------------------------------------------------------------

if __name__ != "__main__":

    SCRIPT_HALF = ("the local training runs", 1800)  # workloads/conftest.py `seen` runs this file's script half once


def _document(run: dict) -> dict:
    assert run["returncode"] == 0, run["stderr"][-3000:]
    doc = json.loads(run["lastStdout"])  # the driver's last line is the result document
    assert bench.read(run["stdout"]).result == doc
    return doc


def test_the_instrumented_run_produces_a_result_document_that_keeps_the_contract(seen):
    doc = _document(seen["first"])
    assert bench.validate(doc) == []
    assert (doc["kind"], doc["platform"], doc["simulated"], doc["side"], doc["run"]) == (
        "tpu", "cpu", True, "bench-tpu", "run-first")
    assert (doc["devices"], doc["processes"], doc["slices"], doc["steps"]) == (8, 2, 1, STEPS)
    assert len(doc["stepTimesS"]) == STEPS and all(t > 0 for t in doc["stepTimesS"])
    assert doc["compiledSteps"] == [0] and doc["compileS"] > 0 and doc["compileEvents"] >= 3
    # The compile-duration events of JAX 0.10.2 (jax/_src/dispatch.py), each heard at least once.
    assert set(doc["compileByEventS"]) == {"/jax/core/compile/jaxpr_trace_duration",
                                           "/jax/core/compile/jaxpr_to_mlir_module_duration",
                                           "/jax/core/compile/backend_compile_duration"}
    assert len(doc["checkpoints"]["saveS"]) == STEPS // 4 and doc["checkpoints"]["restoreS"] == []
    assert 0 < doc["workerGroupStartS"] < doc["processStartToFirstStepS"]
    assert doc["startedAt"] < doc["finishedAt"] and doc["examplesPerS"] > 0
    assert [step for step, _ in doc["loss"]] == list(range(1, STEPS + 1)) and doc["finalLoss"] == doc["loss"][-1][1]
    assert len(doc["fingerprint"]["values"]) == 8 and len(doc["fingerprint"]["sha256"]) == 64
    assert [w["sliceName"] for w in doc["workers"]] == ["tpu-0", "tpu-0"]
    assert doc["rayVersion"] == "2.60.0" and doc["jaxVersion"] == "0.10.2" and doc["compilationCache"] is None


def test_the_job_read_its_tokens_through_ray_data_and_reports_how_long_it_waited_for_them(seen):
    doc = _document(seen["first"])
    found = doc["input"]
    assert found["source"].startswith("Ray Data") and found["pausedS"] == 0.0
    # Ray Data's own figures of the finished iteration: the loop waited for its batches a part of the time.
    assert 0 < found["firstBatchS"] <= found["blockedS"] < found["iterS"]
    assert 0 <= found["waitShare"] < 1
    assert found["waitShare"] == pytest.approx(
        (found["blockedS"] - found["firstBatchS"]) / (found["iterS"] - found["firstBatchS"]))
    assert 0 < found["syntheticStepTimeS"] < max(doc["stepTimesS"])
    # The files the driver wrote for the two processes, under the run's storage path (workloads.token_files).
    assert any(name.startswith("tokens/tokens-steps8-seed0-") for name in seen["first"]["tokenFiles"])


def test_the_result_is_written_to_the_result_dir_by_run_and_side(seen):
    assert seen["first"]["files"] == ["run-first/bench-tpu.json"]
    assert seen["resumed"]["files"] == ["run-first/bench-tpu.json"]


def test_a_later_job_of_the_run_resumes_from_its_newest_checkpoint(seen):
    first, resumed = _document(seen["first"]), _document(seen["resumed"])
    assert bench.validate(resumed) == [] and resumed["run"] == first["run"] == "run-first"
    events = bench.read(seen["resumed"]["stdout"] + seen["resumed"]["stderr"]).events
    assert [(e["attempt"], e["fromStep"]) for e in events if e["event"] == "start"] == [(0, STEPS)]
    assert [e["step"] for e in events if e["event"] == "restore"] == [STEPS]
    # Only the steps after the checkpoint ran, the first of them compiling; no failure, so no restart.
    assert [step for step, _ in resumed["loss"]] == list(range(STEPS + 1, RESUMED_STEPS + 1))
    assert len(resumed["stepTimesS"]) == RESUMED_STEPS - STEPS and resumed["compiledSteps"] == [0]
    assert len(resumed["checkpoints"]["restoreS"]) == 1 and resumed["restarts"] == []
    # Each job's figures are its own, measured.
    assert resumed["processStartToFirstStepS"] != first["processStartToFirstStepS"]
    # The newest checkpoint holds the language model the loop trained, every parameter, at the last step.
    assert seen["resumed"]["checkpoint"] == {"step": RESUMED_STEPS, "parameters": SMALL_MODEL.parameters}


def test_event_lines_come_while_the_job_runs(seen):
    run = seen["first"]
    events = bench.read(run["stdout"] + run["stderr"]).events
    kinds = [e["event"] for e in events]
    assert kinds.count("start") == 1 and kinds.count("step") == STEPS and kinds.count("checkpoint") == STEPS // 4
    assert [e["step"] for e in events if e["event"] == "step"] == list(range(1, STEPS + 1))
    assert all(isinstance(e["time"], float) for e in events)
    start = next(e for e in events if e["event"] == "start")
    assert (start["attempt"], start["fromStep"]) == (0, 0)
    doc = _document(run)
    assert [e["stepS"] for e in events if e["event"] == "step"] == doc["stepTimesS"]


def test_a_tpu_job_on_hosts_without_tpus_stops_before_training_naming_it(seen):
    run = seen["tpu-refused"]
    assert run["returncode"] == train.EXIT_WRONG_PLATFORM, run["stderr"][-3000:]
    line = run["lastStderr"]
    assert line.startswith("workloads.train: a v6e 2x4 slice needs JAX's TPU backend (platform tpu)")
    assert "no TPU backend" in line and "libtpu" in line
    assert bench.read(run["stdout"] + run["stderr"]).events == []  # not one step, not even a start
    assert run["files"] == []  # and no result document


def test_the_gpu_job_runs_on_the_cpu_when_simulating_and_says_so(seen):
    doc = _document(seen["gpu-simulated"])
    assert bench.validate(doc) == []
    assert (doc["kind"], doc["platform"], doc["simulated"], doc["devices"], doc["processes"]) == (
        "gpu", "cpu", True, 1, 1)
    assert doc["workers"][0]["megascaleSliceId"] is None and doc["slices"] == 1


if __name__ == "__main__":
    _simulate(Path(sys.argv[1]))
