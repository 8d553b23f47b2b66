"""Multislice training on a real local Ray 2.60 cluster: one JaxTrainer over two simulated v6e 2x4 slices.

Like tests/workloads/test_workloads_ray.py, this module works in two halves:

- run by the workloads interpreter as a script (`python tests/workloads/test_workloads_multislice.py OUT.json`), it starts a
  Ray cluster (workloads.local_cluster) with a head and two slices `tpu-0` and `tpu-1` of two 4-chip hosts each,
  every raylet with the environment GKE and the TPU webhook give a TPU pod. It runs `python -m workloads.train
  --slices 2 --simulate` as a RayJob would (a driver process connecting to the cluster) once, with a host of `tpu-1`
  removed after the first step past a checkpoint (its raylet and every worker on it killed at once) and a replacement
  host of the same slice added next (its raylet takes seconds to start), as GKE recreates a lost TPU pod. The one run
  shows both what a multislice job is (one JAX program over two whole slices, each with its MEGASCALE environment, to
  the last step) and how it recovers: a run to completion without a failure would only repeat its first attempt;
- collected by pytest, the tests below run that script once and assert on what it saw.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ray_tpu_gke import bench  # (no Ray, no JAX)

if __name__ != "__main__":
    import pytest

    pytestmark = pytest.mark.local_ray

STEPS_RECOVER, EVERY, KILL_AFTER = 14, 5, 10


# --------------------------------------------------------------------------------------------------------------------
# Script half: runs under the workloads interpreter.
# --------------------------------------------------------------------------------------------------------------------

def _train(address: str, argv: list[str], on_event=None, timeout: float = 600) -> dict:
    """`python -m workloads.train ARGV` as a RayJob's driver. on_event(event) runs in this (the main) thread for each
    event line as it comes: Ray starts a raylet only from the main thread (it sets signal handlers). The driver writes
    unbuffered, as plan/compare/local_run.py has it, or its workers' lines would come a pipe buffer at a time."""
    command = [sys.executable, "-m", "workloads.train", "--simulate", "--result-dir", "", *argv]
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "RAY_ADDRESS": address, "PYTHONUNBUFFERED": "1"},
                               text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
    events: queue.Queue = queue.Queue()

    def read(name, stream):
        for line in stream:
            lines[name].append(line)
            for event in bench.read(line).events:
                events.put(event)

    readers = [threading.Thread(target=read, args=(n, getattr(process, n)), daemon=True) for n in lines]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            try:
                event = events.get(timeout=0.2)
            except queue.Empty:
                continue
            if on_event:
                on_event(event)
    finally:
        process.kill()
        process.wait()
    for reader in readers:
        reader.join(timeout=10)
    log = "".join(lines["stdout"]) + "".join(lines["stderr"])
    return {"returncode": process.returncode, "result": bench.read("".join(lines["stdout"])).result,
            "events": bench.read(log).events, "tail": log[-4000:]}


def _simulate(out: Path) -> None:
    from ray_tpu_gke.workload.slice import SliceSpec

    from workloads.local_cluster import LocalCluster

    spec = SliceSpec("v6e", "2x4", hosts=2, chips_per_host=4)
    seen: dict = {"timings": {}}
    began = time.monotonic()
    with LocalCluster() as cluster:
        for name in ("tpu-0", "tpu-1"):
            cluster.tpu_slice(spec, name)
        seen["timings"]["cluster"] = round(time.monotonic() - began, 1)
        # The smallest language model (one layer, 16 tokens a sequence): what is tested is the multislice run and its
        # recovery, and four processes on a small machine compile a smaller step faster, once per attempt.
        shape = [*spec.to_args(), "--slices", "2", "--batch-size", "32", "--layers", "1", "--seq-len", "16"]

        lost: dict = {}
        checkpointed: list[int] = []

        def lose_a_host(event):
            # The host goes on the first step the job reports past a checkpoint at KILL_AFTER or later: the attempt it
            # ends has then run a step that no checkpoint holds, which the resumed attempt must run again. (Lost on
            # the checkpoint's own report, the host could go before that next step finished, and nothing is redone.)
            if event["event"] == "checkpoint" and event["step"] >= KILL_AFTER:
                checkpointed.append(event["step"])
            if event["event"] != "step" or not checkpointed or event["step"] <= checkpointed[-1] or lost:
                return
            lost["afterCheckpoint"], lost["afterStep"] = checkpointed[-1], event["step"]
            lost["removedAt"] = time.time()
            cluster.remove(cluster.hosts[("tpu-1", 1)])
            replacement = cluster.tpu_host(spec, "tpu-1", 1)
            lost["replacementNode"] = replacement.node_id
            lost["replacedAt"] = time.time()

        began = time.monotonic()
        seen["recover"] = _train(cluster.address, [*shape, "--steps", str(STEPS_RECOVER), "--report-every",
                                                   str(EVERY), "--throttle-s", "0.1",
                                                   "--storage-path", str(out.parent / "recover")],
                                 on_event=lose_a_host)
        seen["recover"]["lost"] = lost
        seen["timings"]["recover"] = round(time.monotonic() - began, 1)
    out.write_text(json.dumps(seen, indent=1, sort_keys=True))


# --------------------------------------------------------------------------------------------------------------------
# Test half: runs under pytest in the project's virtualenv.
# --------------------------------------------------------------------------------------------------------------------

if __name__ != "__main__":

    SCRIPT_HALF = ("the local multislice run", 1200)  # workloads/conftest.py `seen` runs this file's script half once


def _completed(run: dict) -> dict:
    assert run["returncode"] == 0, run["tail"]
    assert run["result"] is not None, run["tail"]
    return run["result"]


def _two_whole_slices(workers: list[dict]) -> None:
    """Four workers, two per slice; the workers of a slice share its MEGASCALE_SLICE_ID, the slices differ, and all
    see MEGASCALE_NUM_SLICES=2: what JaxTrainer sets per slice (Ray 2.55 ray/train/v2/jax/config.py)."""
    assert sorted(w["rank"] for w in workers) == [0, 1, 2, 3]
    by_slice: dict[str, set] = {}
    for worker in workers:
        by_slice.setdefault(worker["sliceName"], set()).add(worker["megascaleSliceId"])
        assert worker["megascaleNumSlices"] == "2", worker
        assert worker["platform"] == "cpu"
        assert worker["slice"] == int(worker["megascaleSliceId"]), worker  # Ray's slice ids are the real slices
    assert by_slice == {"tpu-0": {"0"}, "tpu-1": {"1"}}, workers
    assert sorted(w["tpuWorkerId"] for w in workers) == ["0", "0", "1", "1"]


def test_multislice_training_runs_to_completion_over_both_slices(seen):
    result = _completed(seen["recover"])
    assert bench.validate(result) == []
    assert (result["slices"], result["processes"], result["devices"]) == (2, 4, 16)  # one JAX program, 4 hosts
    assert [step for step, _ in result["loss"]] == list(range(1, STEPS_RECOVER + 1))
    assert result["simulated"] is True and result["kind"] == "tpu" and result["steps"] == STEPS_RECOVER


def test_multislice_every_worker_saw_its_slices_megascale_environment(seen):
    _two_whole_slices(_completed(seen["recover"])["workers"])


def test_multislice_resumes_from_the_checkpoint_on_two_whole_slices_after_a_lost_host(seen):
    run = seen["recover"]
    result = _completed(run)
    lost = run["lost"]
    assert lost, f"no host was removed: the run ended before its checkpoint at step {KILL_AFTER}"
    assert bench.validate(result) == []
    assert len(result["restarts"]) >= 1, result["failuresSeen"]
    restart = result["restarts"][0]
    # Resumed from a checkpoint, at most the one after which the host was lost: Ray Train's controller registers a
    # reported checkpoint on its next poll, so the newest one may not be registered yet when the host goes.
    assert 0 < restart["fromStep"] <= lost["afterCheckpoint"] and restart["fromStep"] % EVERY == 0
    assert restart["stepsRedone"] >= lost["afterStep"] - restart["fromStep"] > 0
    starts = [e for e in run["events"] if e["event"] == "start"]
    assert starts[0]["fromStep"] == 0 and starts[-1]["fromStep"] == result["restarts"][-1]["fromStep"]
    restores = [e for e in run["events"] if e["event"] == "restore"]
    assert [r["step"] for r in restores] == [r["fromStep"] for r in result["restarts"]]
    assert len(result["checkpoints"]["restoreS"]) == len(result["restarts"])
    # The job ran on two whole slices again, the replacement host among them.
    _two_whole_slices(result["workers"])
    assert lost["replacementNode"] in {w["node"] for w in result["workers"]}
    # Training finished, every step of the final trajectory present once.
    assert [step for step, _ in result["loss"]] == list(range(1, STEPS_RECOVER + 1))
    assert len(result["stepTimesS"]) >= STEPS_RECOVER


def test_the_steps_redone_after_the_restart_reproduce_their_losses_exactly(seen):
    """Same seed, same data, the parameters restored: each step the restarted attempt ran again computes the loss the
    lost attempt computed, to the last bit (a new worker group, each process reading its batches again through Ray
    Data). What makes two runs of one job comparable, and a resumed run the run it continues."""
    losses: dict[int, list[float]] = {}
    for event in seen["recover"]["events"]:
        if event["event"] == "step":
            losses.setdefault(event["step"], []).append(event["loss"])
    redone = {step: values for step, values in losses.items() if len(values) > 1}
    assert redone, "no step ran twice"
    assert all(len(set(values)) == 1 for values in redone.values()), redone


def test_multislice_recovery_is_reported_with_when_the_failure_was_seen(seen):
    run = seen["recover"]
    result = _completed(run)
    restart = result["restarts"][0]
    assert restart["failureSeenAt"] is not None, result["failuresSeen"]
    assert run["lost"]["removedAt"] <= restart["failureSeenAt"] < restart["resumedAt"]
    assert restart["resumedAt"] >= run["lost"]["replacedAt"]  # it waited for the slice to be whole again
    events = [e for e in run["events"] if e["event"] == "restart"]
    assert events and events[0]["fromStep"] == restart["fromStep"]
    assert events[0]["resumedAt"] == restart["resumedAt"]


if __name__ == "__main__":
    _simulate(Path(sys.argv[1]))
