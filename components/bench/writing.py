"""What a job writes: its event lines, the output fingerprint, the comparison's flags and the result document (the
one writer of it), with the steady-step rule the document and every report read its step times by."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Optional

from .contract import EVENTS, REPORTER, SCHEMA

# --- the steady-step rule ------------------------------------------------------------------------------------------


def steady_indices(step_times: list, compiled: Iterable[int]) -> list[int]:
    """The steps that measure the job's steady speed: every step but those during which it compiled (or warmed up:
    the first step of each attempt, unless the job says otherwise). The one rule of every percentile, throughput,
    time breakdown and chart."""
    skip = set(compiled)
    return [i for i in range(len(step_times)) if i not in skip]


def steady(step_times: list, compiled: Iterable[int]) -> list[float]:
    return [float(step_times[i]) for i in steady_indices(step_times, compiled)]


# --- writing -------------------------------------------------------------------------------------------------------


def event_line(event: str, **fields: Any) -> str:
    """One event as a job prints it: a JSON object whose "event" key names it."""
    if event not in EVENTS:
        raise ValueError(f"{event!r} is not one of {', '.join(EVENTS)}")
    return json.dumps({"event": event, **fields}, sort_keys=True)


def fingerprint(values: Iterable[float], seed: Optional[int] = None, inputs: Optional[str] = None) -> dict:
    """The output fingerprint of a trained model: its predictions on a fixed evaluation input, and the SHA-256 of
    their float32 little-endian bytes (the same bytes NumPy's `.astype("<f4").tobytes()` gives). `inputs` names what
    was predicted on, so that two jobs' fingerprints are compared only where they predicted on the same thing."""
    numbers = [float(v) for v in values]
    digest = hashlib.sha256(struct.pack(f"<{len(numbers)}f", *numbers)).hexdigest()
    out: dict[str, Any] = {"seed": seed, "values": numbers, "sha256": digest}
    if inputs is not None:
        out["inputs"] = inputs
    return out


def process_start_time() -> float:
    """When this process started (epoch seconds): /proc/self/stat field 22, starttime in clock ticks after boot, plus
    btime of /proc/stat (proc(5)). Where /proc is not Linux's, the time of this call."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # fields after "(comm)" start at field 3
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def add_arguments(parser: argparse.ArgumentParser, environ=None) -> argparse.ArgumentParser:
    """The flags of the comparison's settings, each defaulting to its environment variable (`bench.VARIABLES`: the
    comparison sets those and passes no flag); for a job that wants the settings on its command line too."""
    from .environment import settings

    given = settings(environ)
    parser.add_argument("--run", default=given.get("run"), help="run id of the comparison ($RAY_TPU_GKE_RUN)")
    parser.add_argument(
        "--side", default=given.get("side"), help="this job's side in the comparison report ($RAY_TPU_GKE_SIDE)"
    )
    parser.add_argument(
        "--result-dir",
        default=given.get("result_dir", ""),
        help="write the result document to DIR/<run>/<side>.json ($RAY_TPU_GKE_RESULT_DIR)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=given.get("seed", 0),
        help="data, initial parameters and evaluation input ($RAY_TPU_GKE_SEED)",
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        default=given.get("simulated", False),
        help="run on the CPU standing in for the accelerator ($RAY_TPU_GKE_SIMULATE=1)",
    )
    parser.add_argument(
        "--report-every",
        type=int,
        default=given.get("report_every", 50),
        help="steps between checkpoints ($RAY_TPU_GKE_REPORT_EVERY)",
    )
    return parser


def document(
    *,
    run: str,
    side: str,
    kind: Optional[str],
    platform: str,
    simulated: bool,
    devices: int,
    steps: int,
    step_records: list[dict],
    seed: int = 0,
    device_kind: Optional[str] = None,
    processes: int = 1,
    slices: int = 1,
    batch_size: Optional[int] = None,
    saves: Iterable[float] = (),
    restores: Iterable[float] = (),
    restarts: Iterable[dict] = (),
    compile_s: float = 0.0,
    compile_events: int = 0,
    process_start: Optional[float] = None,
    worker_group_start_s: Optional[float] = None,
    started_at: float,
    finished_at: float,
    final_loss: Optional[float] = None,
    metric: Optional[float] = None,
    metric_name: Optional[str] = None,
    fingerprint: Optional[dict] = None,
    flops_per_step: Optional[float] = None,
    flops_source: Optional[str] = None,
    framework: Optional[str] = None,
    framework_version: Optional[str] = None,
    ray_version: Optional[str] = None,
    jax_version: Optional[str] = None,
    compilation_cache: Optional[str] = None,
    workers: Iterable[dict] = (),
    extra: Optional[dict] = None,
) -> dict:
    """The result document: the one writer of it. `step_records` are the steps executed, in order, redone ones
    included: {"step", "stepS", "loss", "compiled", "time", "examples", "tokens"} (the last two optional). Pure: no
    clock, no I/O."""
    times = [float(s["stepS"]) for s in step_records]
    compiled = [i for i, s in enumerate(step_records) if s.get("compiled")]
    calm = steady_indices(times, compiled)
    calm_s = sum(times[i] for i in calm)

    def per_second(key: str) -> Optional[float]:
        counts = [step_records[i].get(key) for i in calm]
        known = [c for c in counts if c is not None]
        if calm_s <= 0 or not counts or len(known) < len(counts):
            return None
        return sum(known) / calm_s

    latest_loss = {int(s["step"]): float(s["loss"]) for s in step_records if s.get("loss") is not None}
    if final_loss is None and step_records and step_records[-1].get("loss") is not None:
        final_loss = float(step_records[-1]["loss"])
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "reporter": REPORTER,
        "run": run,
        "side": side,
        "kind": kind,
        "platform": platform,
        "simulated": bool(simulated),
        "devices": devices,
        "deviceKind": device_kind,
        "processes": processes,
        "slices": slices,
        "steps": steps,
        "batchSize": batch_size,
        "seed": seed,
        "stepTimesS": times,
        "compiledSteps": compiled,
        "compileS": float(compile_s),
        "compileEvents": compile_events,
        "processStartToFirstStepS": (
            float(step_records[0]["time"]) - process_start if step_records and process_start is not None else None
        ),
        "workerGroupStartS": worker_group_start_s,
        "checkpoints": {"saveS": [float(s) for s in saves], "restoreS": [float(s) for s in restores]},
        "examplesPerS": per_second("examples"),
        "tokensPerS": per_second("tokens"),
        "tokensPerStep": step_records[-1].get("tokens") if step_records else None,
        "loss": [[step, latest_loss[step]] for step in sorted(latest_loss)],
        "finalLoss": final_loss,
        "evalMetric": None if metric is None else {"name": metric_name or "metric", "value": float(metric)},
        "fingerprint": fingerprint,
        "flopsPerStep": None if flops_per_step is None else float(flops_per_step),
        "flopsSource": flops_source if flops_per_step is not None else None,
        "restarts": [
            {
                "failureSeenAt": r.get("failureSeenAt"),
                "resumedAt": r["resumedAt"],
                "fromStep": r["fromStep"],
                "stepsRedone": r["stepsRedone"],
            }
            for r in restarts
        ],
        "workers": list(workers),
        "startedAt": started_at,
        "finishedAt": finished_at,
        "framework": framework,
        "frameworkVersion": framework_version,
        "rayVersion": ray_version,
        "jaxVersion": jax_version,
        "compilationCache": compilation_cache,
    }
    doc.update(extra or {})
    return doc


def write_result(doc: dict, result_dir: Optional[str]) -> Optional[Path]:
    """The document to `<result_dir>/<run>/<side>.json`; nothing where result_dir is empty."""
    if not result_dir:
        return None
    path = Path(result_dir) / doc["run"] / f"{doc['side']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def print_result(doc: dict, out=None) -> None:
    """The document as the last line of the job's output: a collector takes the last one in the log."""
    print(json.dumps(doc, sort_keys=True), file=out or sys.stdout, flush=True)
