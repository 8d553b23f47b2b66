"""workloads.train's result document from its run's ledger (workloads.ledger.RunLedger.record): the ledger's record
mapped onto `ray_tpu_gke.bench.document`, the one writer of the document, which every other job reaches through
`bench.start(...).finish(...)`. Reading a log and checking a document are bench's (`bench.read`, `bench.validate`).
No Ray or JAX import.
"""

from __future__ import annotations

from typing import Optional

from ray_tpu_gke import bench


def _slice_indices(workers: list[dict]) -> dict[Optional[str], int]:
    names = sorted({str(w["sliceName"]) for w in workers if w.get("sliceName")})
    return {name: i for i, name in enumerate(names)}


def build(
    record: dict,
    *,
    run: str,
    side: str,
    kind: str,
    simulated: bool,
    slices: int,
    steps: int,
    batch_size: int,
    seed: int,
    process_start: float,
    fit_called: float,
    started_at: float,
    finished_at: float,
    ray_version: str,
    jax_version: Optional[str],
    error: Optional[str] = None,
) -> dict:
    """The result document from the run's ledger record (workloads.ledger.RunLedger.record) and what the driver
    measured itself. Pure: the tests build documents from hand-made records too."""
    attempts = record["attempts"]
    last = attempts[-1] if attempts else {"attempt": None, "workers": []}
    finish = record.get("finish") or {}
    indices = _slice_indices(last["workers"])
    rank0 = last["workers"][0] if last["workers"] else {}
    by_event: dict[str, float] = {}
    for event, seconds, _attempt in record["compile"]:
        by_event[event] = by_event.get(event, 0.0) + seconds
    executed = [{"examples": batch_size, **s} for s in record["steps"]]  # a step trains one global batch
    model = finish.get("model") or {}
    return bench.document(
        run=run,
        side=side,
        kind=kind,
        platform=finish.get("platform") or rank0.get("platform"),
        simulated=simulated,
        devices=finish.get("devices"),
        device_kind=finish.get("deviceKind") or rank0.get("deviceKind"),
        processes=finish.get("processes"),
        slices=slices,
        steps=steps,
        batch_size=batch_size,
        seed=seed,
        step_records=executed,
        saves=record["checkpoints"]["saveS"],
        restores=record["checkpoints"]["restoreS"],
        restarts=record["restarts"],
        compile_s=sum(by_event.values()),
        compile_events=len(record["compile"]),
        process_start=process_start,
        worker_group_start_s=(attempts[0]["enteredAt"] - fit_called) if attempts else None,
        started_at=started_at,
        finished_at=finished_at,
        final_loss=finish.get("finalLoss"),
        metric=finish.get("evalLoss"),
        metric_name="evalLoss",
        fingerprint=finish.get("fingerprint"),
        flops_per_step=finish.get("flopsPerStep"),
        flops_source=finish.get("flopsSource"),
        framework="jax",
        framework_version=finish.get("jaxVersion") or jax_version,
        ray_version=ray_version,
        jax_version=finish.get("jaxVersion") or jax_version,
        compilation_cache=rank0.get("compilationCache"),
        workers=[
            {
                "rank": w["rank"],
                "slice": indices.get(w.get("sliceName"), 0),
                "megascaleSliceId": w.get("megascaleSliceId"),
                "megascaleNumSlices": w.get("megascaleNumSlices"),
                "platform": w.get("platform"),
                "sliceName": w.get("sliceName"),
                "tpuWorkerId": w.get("tpuWorkerId"),
                "node": w.get("node"),
            }
            for w in last["workers"]
        ],
        # Additions of workloads.train (docs/workloads.md "Result document"):
        extra={
            "compileByEventS": by_event,
            "attempts": len(attempts),
            "failuresSeen": [{"at": f["at"], "ranks": f["ranks"], "detail": f["detail"]} for f in record["failures"]],
            "model": model,
            # The loop's wait for input, measured by Ray Data (workloads.token_files): None where no step ran.
            "input": finish.get("input"),
            "error": error,
        },
    )
