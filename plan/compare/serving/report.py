"""The serving report, the same lines for local and live runs: what was seen of each side (`seen`, from local.py or
live.py) in, the `serving` entries of report.json out (CONTRACTS section 7: name, kind, simulated, coldStartS,
patterns, maxRpsUnderSlo, autoscaleReactionS, idleCostPerHourUsd; more beside them), with one problem line for each
measure that could not be obtained."""

from __future__ import annotations

import math
from typing import Optional

from . import serve_state
from .load import LoadRun, Outcome
from .measures import max_rps_under_slo, pattern_summary
from .patterns import Pattern
from .services import ServiceSide

REPORT_SCHEMA = "ray-tpu-gke/compare-serve-report/v1"
DEFAULT_SLO_MS = 500.0


def load_run(data: dict) -> LoadRun:
    outcomes = [
        Outcome(o["label"], o["due"], o.get("sent"), o.get("done"), o.get("status"), o.get("error"), o.get("reply"))
        for o in data["outcomes"]
    ]
    return LoadRun(data["pattern"], data["startedAt"], outcomes)


def _at(run: LoadRun, offset: Optional[float]) -> Optional[float]:
    return None if offset is None else run.started_at + offset


def _positive(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(max(0.0, value), 3)


def billed_seconds(nodes: list[dict], start: float, end: float) -> float:
    """Node time inside [start, end]: each node bills from its creation (or request) to its removal."""
    total = 0.0
    for node in nodes:
        begin = node.get("createdAt") or node.get("requestedAt")
        if begin is None:
            continue
        stop = node.get("removedAt") or end
        total += max(0.0, min(stop, end) - max(begin, start))
    return total


def cold_start(side: ServiceSide, seen: dict) -> tuple[Optional[dict], Optional[dict], list[str]]:
    """Start-up from zero, split at what the cluster and the replica show: the service's creation (locally: its
    config applied) to Serve RUNNING and the first request sent (`rayStartS`), to a node Ready (`capacityAndNodeS`),
    to the worker pod Ready (`podAndImageS`, live), to the replica's model loaded and compiled (`replicaStartS`, from
    the replica's own figures), to the first answer (`firstResponseS`). Every phase a number of seconds; the
    replica's own figures (`loadS`, `compileS`, `platform`) apart."""
    problems = []
    run = load_run(seen["cold"]) if seen.get("cold") else None
    first = run.outcomes[0] if run and run.outcomes else None
    if first is None or not first.ok:
        why = "no first request" if first is None else f"the first request failed ({first.error})"
        return None, None, [f"{side.name}: coldStartS: {why}"]
    created, sent, answered = seen["appliedAt"], _at(run, first.sent), _at(run, first.done)
    node = next((n for n in seen.get("nodes", []) if (n.get("readyAt") or 0) >= sent - 1e-6), None)
    replica = (first.reply or {}).get("replica") or {}
    ready = None
    if {"startedAt", "loadS", "compileS"} <= set(replica):
        ready = replica["startedAt"] + replica["loadS"] + replica["compileS"]
    else:
        problems.append(f"{side.name}: coldStartS.replicaStartS: the first answer carries no replica start-up figures")
    phases = {"totalS": _positive(answered - created), "rayStartS": _positive(sent - created)}
    if node is None:
        problems.append(
            f"{side.name}: coldStartS.capacityAndNodeS: no node became Ready after the first request "
            "(was one up already?)"
        )
        base = sent
    else:
        phases["capacityAndNodeS"] = _positive(node["readyAt"] - sent)
        base = node["readyAt"]
        if seen.get("podReadyAt") is not None:
            phases["podAndImageS"] = _positive(seen["podReadyAt"] - node["readyAt"])
            base = seen["podReadyAt"]
    if ready is not None:
        phases["replicaStartS"] = _positive(ready - base)
        phases["firstResponseS"] = _positive(answered - ready)
        own = {"loadS": replica["loadS"], "compileS": replica["compileS"], "platform": replica.get("platform")}
    else:
        own = None
    return phases, own, problems


def _replicas_at(samples: list[dict], at: float) -> Optional[int]:
    before = [s for s in samples if s["at"] <= at]
    return serve_state.running(before[-1]) if before else None


def _pattern_entry(side: ServiceSide, pattern: Pattern, data: dict, nodes: list[dict]) -> dict:
    run = load_run(data["run"])
    summary = pattern_summary(run, pattern)
    end = data["endedAt"]
    billed = billed_seconds(nodes, run.started_at, end)
    answered = summary["requests"] - summary["errors"]
    summary["billedNodeS"] = round(billed, 3)
    summary["costPerMillionUsd"] = (
        round(billed * side.node_hourly / 3600 / answered * 1e6, 4)
        if side.node_hourly is not None and answered
        else None
    )
    return summary


def offered_per_second(seen: dict, patterns: list, since: float) -> list[dict]:
    """Requests scheduled per second, over the side's whole run (seconds from `since`)."""
    counts: dict[int, int] = {}
    for pattern in patterns:
        data = seen["patterns"].get(pattern.name)
        if not data:
            continue
        for due, _ in pattern.schedule():
            second = math.floor(data["run"]["startedAt"] + due - since)
            counts[second] = counts.get(second, 0) + 1
    return [{"t": t, "rps": n} for t, n in sorted(counts.items())]


def _no_reaction(samples: list[dict], step: float, decided_by: float, burst: Pattern) -> str:
    """Why the burst shows no reaction, from Serve's state: no decision, or a decision no added replica followed."""
    decided = serve_state.upscale(samples, step, decided_by)
    at_step = ([s for s in samples if s["at"] <= step] or [None])[-1]
    if decided is None and at_step is not None and (at_step["target"] or 0) > serve_state.running(at_step):
        return (
            f"Serve had raised its replica target to {at_step['target']} before the burst's step, with "
            f"{serve_state.running(at_step)} RUNNING: the load before the step already asked for more replicas "
            "(lower --steady-rps or the burst's LOW rate)"
        )
    if decided is None:
        return (
            f"Serve raised no replica target after the burst's step to {burst.phases[1].rps:g} requests/s while "
            "its requests were in flight (raise --burst-rps HIGH or its --burst-s, or lower target_ongoing_requests)"
        )
    before, decision = decided
    return (
        f"Serve raised its replica target from {before['target']} to {decision['target']} "
        f"{decision['at'] - step:.1f} s after the burst's step, and no added replica was seen RUNNING after it "
        "(stopped while it started, as when Serve scales back down first: lengthen the burst's high step, "
        "or the downscale delay)"
    )


def side_entry(
    side: ServiceSide, seen: dict, patterns: list[Pattern], *, slo_ms: float, simulated: bool
) -> tuple[dict, list[str]]:
    problems = list(seen.get("problems", []))
    entry: dict = {
        "name": side.name,
        "kind": side.kind,
        "simulated": simulated,
        "accelerator": side.accelerator,
        "runsOn": side.item,
        "capacity": side.capacity,
        "nodeHourlyUsd": side.node_hourly,
        "application": side.application.get("import_path"),
        "autoscalingConfig": side.autoscaling,
    }
    if side.node_hourly is None:
        problems.append(f"{side.name}: costs: {side.price_problem}")
    entry["coldStartS"], entry["replicaStartup"], found = cold_start(side, seen)
    problems += found
    entry["patterns"] = {}
    for pattern in patterns:
        data = seen["patterns"].get(pattern.name)
        if data is None:
            problems.append(f"{side.name}: patterns.{pattern.name}: not run")
            continue
        summary = entry["patterns"][pattern.name] = _pattern_entry(side, pattern, data, seen.get("nodes", []))
        if pattern.gap_s is not None:  # which sparse requests Serve's state shows meeting zero replicas RUNNING
            run = load_run(data["run"])
            summary["sentAtZeroReplicas"] = [
                _replicas_at(seen.get("samples", []), run.started_at + o.due) == 0 for o in run.outcomes
            ]
        if summary["latencyMs"] is None:
            problems.append(f"{side.name}: patterns.{pattern.name}.latencyMs: no request was answered")
    entry["maxRpsUnderSlo"] = max_rps_under_slo(entry["patterns"], slo_ms)
    samples = seen.get("samples", [])
    entry["autoscaleReactionS"], entry["autoscale"] = None, None
    burst = next((p for p in patterns if p.name == "burst"), None)
    if burst is not None and "burst" in seen["patterns"]:
        step = seen["patterns"]["burst"]["run"]["startedAt"] + burst.phases[0].seconds
        # Serve's decision may come after the high step (its look-back and metric pushes lag), while the burst's
        # requests are still in flight, not once the last of them was answered or given up on.
        decided_by = seen["patterns"]["burst"]["endedAt"]
        reacted = serve_state.reaction(samples, step, decided_by=decided_by)
        entry["autoscale"] = {"stepAt": step, **(reacted or {})}
        if reacted is None:
            problems.append(f"{side.name}: autoscaleReactionS: {_no_reaction(samples, step, decided_by, burst)}")
        else:
            entry["autoscaleReactionS"] = reacted["reactionS"]
    least = side.autoscaling.get("min_replicas", 1)
    entry["idleCostPerHourUsd"] = (
        round(side.nodes_for(least) * side.node_hourly, 4) if side.node_hourly is not None else None
    )
    entry["idleNodes"] = side.nodes_for(least)
    since = seen["appliedAt"]
    entry["timeline"] = {
        "replicas": serve_state.timeline(samples, since),
        "offered": offered_per_second(seen, patterns, since),
        "windows": {
            name: [round(d["run"]["startedAt"] - since, 3), round(d["endedAt"] - since, 3)]
            for name, d in seen["patterns"].items()
        },
    }
    entry["nodes"] = [
        {k: (round(v - since, 3) if isinstance(v, float) else v) for k, v in n.items()} for n in seen.get("nodes", [])
    ]
    if not samples:
        problems.append(f"{side.name}: Serve's state: never read ({seen.get('pollErrors', 0)} failed reads)")
    entry["latenciesMs"] = {
        name: sorted(round(o.latency_s * 1000, 3) for o in load_run(d["run"]).outcomes if o.ok)
        for name, d in seen["patterns"].items()
    }
    return entry, problems


def build(
    stack: str,
    mode: str,
    run_id: str,
    sides: list[ServiceSide],
    seen: list[dict],
    patterns: list[Pattern],
    *,
    slo_ms: float,
    context: Optional[str] = None,
    facts: Optional[dict] = None,
) -> dict:
    simulated = mode == "local"
    entries, problems = [], []
    by_name = {s["name"]: s for s in seen}
    for side in sides:
        if side.name not in by_name:
            problems.append(f"{side.name}: not run")
            continue
        entry, found = side_entry(side, by_name[side.name], patterns, slo_ms=slo_ms, simulated=simulated)
        entries.append(entry)
        problems += found
    document = {
        "schema": REPORT_SCHEMA,
        "stack": stack,
        "mode": mode,
        "run": run_id,
        "simulated": simulated,
        "sloMs": slo_ms,
        "patterns": {p.name: p.params for p in patterns},
        "serving": entries,
        "problems": problems,
        "complete": not problems and len(entries) == len(sides),
    }
    if context:
        document["context"] = context
    if facts:
        document["localRun" if simulated else "liveRun"] = facts
    return document
