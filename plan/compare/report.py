"""The one report builder of the comparison, shared by the live and the local mode: what each collector saw of a side
(`SideRun`: the cluster's timestamps and the job's log) in, `report.json`'s document out.

Pure and deterministic: no clock, no I/O. Every number is computed here from what was measured; a number that cannot
be computed is left out of the side and named in `problems`, one line each (`<side>: <measure>: <why>`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ray_tpu_gke import bench

from . import input_wait, limits
from .agreement import DEFAULT_TOLERANCE, agreement
from .job_facts import compile_source, log_tail
from .sides import SidePlan

REPORT_SCHEMA = "ray-tpu-gke/compare-report/v1"
# The start-up phases each mode measures, in order. Locally there are no pods or images: a simulated host is a Ray
# node that this machine starts, so its start is the capacity wait, and Ray start runs from it to the training loop.
PHASES = {
    "live": ("capacityWaitS", "podStartS", "rayStartS", "firstStepS"),
    "local": ("capacityWaitS", "rayStartS", "firstStepS"),
}
BREAKDOWN = (
    "capacityWaitS",
    "podStartS",
    "rayStartS",
    "compiledStepsS",
    "stepsS",
    "checkpointsS",
    "recoveryS",
    "otherS",
)


@dataclass
class NodeSpan:
    """One node the side's workers ran on: billed from its creation (or the side's request, if it was already up)
    to its removal, or to the collection when it was still up."""

    name: str
    created_at: Optional[float]
    ready_at: Optional[float] = None
    removed_at: Optional[float] = None


@dataclass
class Injection:
    step: int  # the last step the job had reported when the failure was injected
    at: float  # epoch seconds
    target: str  # the worker pod deleted, or the Ray node removed


@dataclass
class SideRun:
    """What a collector saw of one side's run. Times are epoch seconds."""

    side: SidePlan
    job: str  # this run's RayJob (live) or driver (local)
    requested_at: Optional[float] = None  # the RayJob created / the simulated hosts asked for
    nodes: list[NodeSpan] = field(default_factory=list)  # every worker node, replacements included
    nodes_ready_at: Optional[float] = None  # the first attempt's worker nodes all Ready
    pods_ready_at: Optional[float] = None  # live: the first attempt's worker pods all Ready
    log: str = ""  # the job's log: event lines and the result document
    outcome: str = "unknown"  # SUCCEEDED, FAILED, STOPPED, timeout after N s, ...
    succeeded: bool = False
    ended_at: Optional[float] = None  # the job's end as the cluster saw it
    inject_step: Optional[int] = None  # --inject-failure STEP
    injection: Optional[Injection] = None
    injection_problem: Optional[str] = None  # why no failure was injected
    cluster: dict = field(default_factory=dict)  # more the collector saw (image pulls, events by reason)
    log_file: Optional[str] = None  # the job's whole log, kept in the report's folder (relative to it)
    result_file: Optional[str] = None  # the job's result document, kept there too
    _read: Optional[tuple[str, bench.JobLog]] = field(default=None, init=False, repr=False, compare=False)

    @property
    def job_log(self) -> bench.JobLog:
        """The log as `bench.read` reads it, read once for the report, its checks and the kept result document (again
        only when the log was replaced)."""
        if self._read is None or self._read[0] is not self.log:
            self._read = (self.log, bench.read(self.log))
        return self._read[1]


# --- arithmetic ----------------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), interpolating linearly between the closest ranks (numpy's default 'linear',
    Hyndman and Fan's type 7)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def step_time_stats(step_times: list[float], compiled: list[int]) -> Optional[dict]:
    """p50 and p95 of the steps that did not compile (the first step of each attempt compiles)."""
    steady = bench.steady(step_times, compiled)
    if not steady:
        return None
    return {
        "p50": percentile(steady, 50),
        "p95": percentile(steady, 95),
        "mean": sum(steady) / len(steady),
        "steps": len(steady),
        "compiledSteps": len(step_times) - len(steady),
    }


def billed_nodes(nodes: list[NodeSpan], requested_at: Optional[float], collected_at: float) -> list[dict]:
    """Each node's billed span: from its creation, or from the side's request when it already existed, to its
    removal, or to the collection when it is still up."""
    out = []
    for node in nodes:
        start = node.created_at if node.created_at is not None else requested_at
        if start is None:
            continue
        if requested_at is not None:
            start = max(start, requested_at)
        end = node.removed_at if node.removed_at is not None else collected_at
        out.append(
            {
                "name": node.name,
                "from": start,
                "to": end,
                "seconds": max(0.0, end - start),
                "until": "removed" if node.removed_at is not None else "collection",
            }
        )
    return out


def cost_per_job(billed_seconds: float, node_hourly: float) -> float:
    return billed_seconds / 3600.0 * node_hourly


# --- one side ------------------------------------------------------------------------------------------------------


def refusal(result: Optional[dict], run: SideRun, run_id: str, mode: str) -> Optional[str]:
    """Why the job's result document cannot count as this side's measurement, or None."""
    if result is None:
        return "the job's log holds no result document"
    if result.get("run") != run_id or result.get("side") != run.side.name:
        return (
            f"the result is for run {result.get('run')!r} side {result.get('side')!r}, not run {run_id!r} "
            f"side {run.side.name!r}"
        )
    kind, platform, simulated = run.side.kind, result.get("platform"), result.get("simulated") is True
    if result.get("kind") not in (None, kind):
        return f"the job was asked for {result.get('kind')}, but the side stands for {kind}"
    if simulated and mode == "live":
        return f"the job ran simulated on {platform} in a live comparison: not a {kind} measurement"
    if not simulated and platform != kind:
        return (
            f"the job ran on {platform}, not {kind}, and is not marked simulated: its numbers are not a "
            f"{kind} measurement"
        )
    return None


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b")


def _raised(log: str) -> Optional[str]:
    """The last exception a failed job's log names (a traceback's last line), so that the report says why."""
    return next((line.strip()[:300] for line in reversed(log.splitlines()) if _RAISED.match(line.strip())), None)


def _restarts(result: Optional[dict], log: bench.JobLog) -> list[dict]:
    if result is not None and isinstance(result.get("restarts"), list):
        return [r for r in result["restarts"] if isinstance(r, dict)]
    return log.of("restart")


def why_redone(from_step: Optional[int], injected: Injection, saved: list[int]) -> str:
    """Why steps were redone: the job resumes from the last checkpoint Ray Train had registered, and a checkpoint saved
    after it but not yet registered does not count (Ray Train takes a reported checkpoint in at its controller's next
    poll of the workers: Ray 2.55 ray/train/v2/_internal/execution/checkpoint/report_handler.py)."""
    text = (
        f"the job resumes from the last checkpoint Ray Train had registered (step {from_step}), so every step "
        f"after it that ran before the failure (injected when step {injected.step} was reported) ran again"
    )
    later = [s for s in saved if from_step is not None and from_step < s <= injected.step]
    if later:
        text += (
            f"; the checkpoint of step {max(later)} had been saved but not yet registered when the worker went "
            "(Ray Train registers a reported checkpoint at its controller's next poll)"
        )
    return text


def recovery(
    run: SideRun, restarts: list[dict], saved: Optional[list[int]] = None
) -> tuple[Optional[dict], Optional[str]]:
    """Injection -> the first step reported again (the restarted attempt's first step), and the steps redone."""
    if run.injection is None:
        return None, run.injection_problem or f"no failure was injected (asked at step {run.inject_step})"
    injected = run.injection
    saved = saved or []
    after = [r for r in restarts if isinstance(r.get("resumedAt"), (int, float)) and r["resumedAt"] > injected.at]
    if not after:
        return None, (
            f"no restart was reported after the failure injected at step {injected.step} "
            f"({injected.target}); the job {run.outcome}"
        )
    first = after[0]
    out = {
        "injectedAtStep": injected.step,
        "injectedAt": injected.at,
        "target": injected.target,
        "recoveryS": first["resumedAt"] - injected.at,
        "stepsRedone": first.get("stepsRedone"),
        "fromStep": first.get("fromStep"),
        "resumedAt": first["resumedAt"],
        "restartIndex": restarts.index(first),
        "why": why_redone(first.get("fromStep"), injected, saved),
    }
    if isinstance(first.get("failureSeenAt"), (int, float)):
        out["detectS"] = max(0.0, first["failureSeenAt"] - injected.at)
    return out, None


def _phases(run: SideRun, mode: str, log: bench.JobLog) -> tuple[dict, dict]:
    """Start-up phases and, for those that cannot be measured, why not."""
    start = next((e for e in log.of("start") if e.get("attempt", 0) == 0), log.first("start"))
    first_step = log.first("step")
    loop_at = start["time"] if start else None
    step_at = first_step["time"] if first_step else None
    ray_from = run.pods_ready_at if mode == "live" else run.nodes_ready_at
    spans = {
        "capacityWaitS": (run.requested_at, run.nodes_ready_at, "no worker node became Ready"),
        "podStartS": (run.nodes_ready_at, run.pods_ready_at, "the worker pods never became Ready"),
        "rayStartS": (ray_from, loop_at, "the training loop never started (no start event)"),
        "firstStepS": (loop_at, step_at, "no step was reported"),
    }
    phases, why = {}, {}
    for name in PHASES[mode]:
        begin, end, reason = spans[name]
        if begin is None or end is None:
            why[name] = reason if end is None else "its start was not seen"
        else:
            phases[name] = max(0.0, end - begin)  # clocks of different machines: never a negative phase
    return phases, why


def _breakdown(phases: dict, result: dict, wall: Optional[float], recovered: Optional[dict]) -> Optional[dict]:
    """Where the wall time went, in parts that add up to it (the rest is `otherS`: driver start, data, logging,
    shutdown, and what the clocks cannot split)."""
    if wall is None:
        return None
    times = [float(t) for t in result.get("stepTimesS") or []]
    compiled = set(result.get("compiledSteps") or [])
    checkpoints = result.get("checkpoints") or {}
    saves, restores = list(checkpoints.get("saveS") or []), list(checkpoints.get("restoreS") or [])
    parts = {name: phases[name] for name in ("capacityWaitS", "podStartS", "rayStartS") if name in phases}
    steady = sum(bench.steady(times, compiled))
    parts["compiledStepsS"] = sum(times) - steady
    parts["stepsS"] = steady
    parts["checkpointsS"] = sum(saves) + sum(restores)
    if recovered is not None:
        k = recovered["restartIndex"]
        order = sorted(compiled)
        overlap = (restores[k] if k < len(restores) else 0.0) + (times[order[k + 1]] if k + 1 < len(order) else 0.0)
        parts["recoveryS"] = max(0.0, recovered["recoveryS"] - overlap)
    parts["otherS"] = max(0.0, wall - sum(parts.values()))
    return parts


def side_report(run: SideRun, mode: str, run_id: str, collected_at: float) -> tuple[dict, list[tuple[str, str]]]:
    """One side of report.json, and the measures it lacks with the reason for each."""
    side, log = run.side, run.job_log
    missing: list[tuple[str, str]] = []
    out: dict[str, Any] = {
        "name": side.name,
        "kind": side.kind,
        "accelerator": side.accelerator,
        "capacity": side.capacity,
        "runsOn": side.item,
        "job": run.job,
        "outcome": run.outcome,
    }
    refused = refusal(log.result, run, run_id, mode)
    result = None if refused else log.result
    shown = log.result or {}
    out.update({"platform": shown.get("platform"), "simulated": shown.get("simulated")})
    if refused:
        out["refused"] = refused
        missing.append(("result", refused))
    if not run.succeeded:
        raised = _raised(run.log)
        missing.append(("finished", f"the job did not finish: {run.outcome}" + (f" ({raised})" if raised else "")))
        out["logTail"] = log_tail(run.log)
    for key, value in (("logFile", run.log_file), ("resultFile", run.result_file)):
        if value is not None:
            out[key] = value

    def need(key: str, value, reason: str):
        if value is None:
            missing.append((key, reason))
        else:
            out[key] = value

    no_result = refused or "no result document"
    if result is not None:
        for key in (
            "devices",
            "deviceKind",
            "processes",
            "slices",
            "batchSize",
            "seed",
            "compileEvents",
            "examplesPerS",
            "compilationCache",
            "tokensPerS",
            "tokensPerStep",
            "flopsPerStep",
            "flopsSource",
            "framework",
            "evalMetric",
            "model",
        ):
            out[key] = result.get(key)
    need("steps", (result or {}).get("steps"), no_result)
    stats = step_time_stats(
        [float(t) for t in (result or {}).get("stepTimesS") or []], list((result or {}).get("compiledSteps") or [])
    )
    need("stepTimeS", stats, no_result if result is None else "no step ran without compiling")
    if result is not None:
        out.update(limits.side_fields(side, result, stats))
        out["input"] = input_wait.side_input(result, stats)
    need("compileS", (result or {}).get("compileS"), no_result)
    if result is not None:
        out["compileSource"] = compile_source(result)
    need("finalLoss", (result or {}).get("finalLoss"), no_result)
    if result is not None:
        out["stepTimesS"] = [float(t) for t in result.get("stepTimesS") or []]
        out["compiledSteps"] = list(result.get("compiledSteps") or [])
        out["fingerprintSha256"] = (result.get("fingerprint") or {}).get("sha256")
        checkpoints = result.get("checkpoints") or {}
        saves, restores = checkpoints.get("saveS") or [], checkpoints.get("restoreS") or []
        out["checkpoints"] = {
            "saves": len(saves),
            "saveS": sum(saves),
            "restores": len(restores),
            "restoreS": sum(restores),
        }
        out["jobTimings"] = {k: result.get(k) for k in ("processStartToFirstStepS", "workerGroupStartS")}

    phases, why = _phases(run, mode, log)
    out["startup"] = phases
    missing += [(f"startup.{name}", reason) for name, reason in why.items()]
    if run.cluster:
        out["cluster"] = run.cluster

    end = (result or {}).get("finishedAt") if result is not None else None
    end = end if end is not None else (run.ended_at if run.succeeded else None)
    wall = None if end is None or run.requested_at is None else max(0.0, end - run.requested_at)
    need("wallS", wall, "the job did not finish" if end is None else "its request time was not seen")
    start = next((e for e in log.of("start") if e.get("attempt", 0) == 0), log.first("start"))
    if end is not None and start is not None:
        out["trainingS"] = max(0.0, end - start["time"])

    # Cost: the plan's price of one node x every node's billed lifetime.
    need("hourlyUsd", side.hourly, side.price_problem or "no price")
    billed = billed_nodes(run.nodes, run.requested_at, collected_at)
    seconds = sum(b["seconds"] for b in billed)
    out["billing"] = {
        "nodeHourlyUsd": side.node_hourly,
        "rate": side.rate,
        "nodes": billed,
        "billedNodeS": seconds,
        "stillUp": [b["name"] for b in billed if b["until"] == "collection"],
    }
    per_job = None
    if not billed:
        missing.append(("costPerJobUsd", "no worker node of the side was seen"))
    elif side.node_hourly is None:
        missing.append(("costPerJobUsd", side.price_problem or "no price"))
    else:
        per_job = cost_per_job(seconds, side.node_hourly)
        out["costPerJobUsd"] = per_job
    steps = out.get("steps")
    if per_job is None:
        missing.append(("costPer1kStepsUsd", "no cost per job"))
    elif not steps:
        missing.append(("costPer1kStepsUsd", "no steps were reported"))
    else:
        out["costPer1kStepsUsd"] = per_job / steps * 1000.0

    recovered = None
    if run.inject_step is not None:
        saved = [e["step"] for e in log.of("checkpoint") if isinstance(e.get("step"), int)]
        recovered, problem = recovery(run, _restarts(result, log), saved)
        if recovered is None:
            missing.append(("recovery", problem))
            out["recovery"] = {"injectedAtStep": run.injection.step if run.injection else None}
        else:
            out["recovery"] = {k: v for k, v in recovered.items() if k != "restartIndex"}
    if result is not None:
        breakdown = _breakdown(phases, result, wall, recovered)
        if breakdown is not None:
            out["timeBreakdownS"] = breakdown
    out["missing"] = [m for m, _ in missing]
    return out, missing


# --- the report ----------------------------------------------------------------------------------------------------


def build(
    stack: str,
    mode: str,
    run_id: str,
    runs: list[SideRun],
    collected_at: float,
    tolerance: float = DEFAULT_TOLERANCE,
    context: Optional[str] = None,
    prices: Optional[dict] = None,
) -> dict:
    """report.json: every side, their agreement (the first side against each other one), and one problem line per
    missing measure or failed condition. `complete` is true only when there is none."""
    if mode not in PHASES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(PHASES)}")
    sides, problems, results = [], [], {}
    for run in runs:
        side, missing = side_report(run, mode, run_id, collected_at)
        sides.append(side)
        problems += [f"{run.side.name}: {measure}: {reason}" for measure, reason in missing]
        parsed = run.job_log.result
        results[run.side.name] = None if side.get("refused") or parsed is None else parsed
    pairs = []
    if len(sides) < 2:
        problems.append(
            f"agreement: the stack has {len(sides)} comparison side(s); a comparison needs two (RayJobs "
            "whose worker group runs on a TPU slice or a GPU pool)"
        )
    for other in sides[1:]:
        pair, lines = agreement(sides[0], other, results, tolerance)
        problems += lines
        if pair is not None:
            pairs.append(pair)
    report = {
        "schema": REPORT_SCHEMA,
        "stack": stack,
        "mode": mode,
        "run": run_id,
        "collectedAt": collected_at,
        "simulated": any(s.get("simulated") is True for s in sides),
        "tolerance": tolerance,
        "sides": sides,
        "agreement": pairs[0] if pairs else None,
        "agreements": pairs,
        "problems": problems,
        "complete": not problems,
    }
    if context is not None:
        report["context"] = context
    if prices is not None:
        report["prices"] = prices
    return report
