"""A start from zero as one timeline, per side: the first request of the run (cold: nothing compiled yet) and the
sparse shape's first request, sent after every replica had gone (the compile cache warm: the replica starts again
on a machine whose cache holds the compiled programs; live, the slice's local disk with VLLM_XLA_CACHE_PATH, GKE's
Ray Serve LLM on TPU tutorial; locally, JAX's persistent cache). Phases, each seconds from the one before:

- appToRunningS (cold only): the service created (locally: its config applied) to Serve's application RUNNING and
  the first request sent;
- capacityAndNodeS: the request sent to a node Ready (live: the node object's Ready condition; locally: the
  simulated node's raylet registered);
- podAndImageS (live): the node Ready to the worker pod Ready (the image pulled, the container started);
- rayStartS: to the replica's constructor starting (Ray's worker and Serve's replica actor);
- weightsS, compileS: the replica's own figures (parameters loaded; programs compiled);
- firstTokenS: the replica ready to the first token's arrival.

An engine that reports no start-up figures (vLLM through Ray Serve LLM does not answer them over the OpenAI API)
leaves rayStartS, weightsS and compileS out and counts them in `replicaToFirstTokenS`. Pure."""

from __future__ import annotations

from typing import Optional

from ..serving import serve_state
from .stream import StreamRun, TokenOutcome


def _r(value: float) -> float:
    return round(max(0.0, value), 3)


def phases(
    outcome: TokenOutcome, started_at: float, nodes: list[dict], pods_ready: list[float], live: bool
) -> tuple[Optional[dict], list[str]]:
    if not outcome.ok or outcome.first_at is None or outcome.sent is None:
        return None, [f"the request failed ({outcome.error})"]
    sent, first = started_at + outcome.sent, started_at + outcome.first_at
    out: dict = {"totalS": _r(first - sent)}
    problems = []
    node = min((n for n in nodes if (n.get("readyAt") or 0) >= sent - 1e-6), key=lambda n: n["readyAt"], default=None)
    base = sent
    if node is None:
        problems.append("capacityAndNodeS: no node became Ready after the request (was one up already?)")
    else:
        out["capacityAndNodeS"] = _r(node["readyAt"] - sent)
        base = node["readyAt"]
        if live:
            pod = min((t for t in pods_ready if t >= base - 1), default=None)
            if pod is None:
                problems.append("podAndImageS: no worker pod became Ready after the node")
            else:
                out["podAndImageS"] = _r(pod - base)
                base = pod
        else:
            out["notApplicable"] = {"podAndImageS": "no pod locally: a simulated node is a raylet on this machine"}
    replica = (outcome.reply or {}).get("replica") or {}
    if {"startedAt", "loadS", "compileS"} <= set(replica):
        out["rayStartS"] = _r(replica["startedAt"] - base)
        out["weightsS"] = round(replica["loadS"], 3)
        out["compileS"] = round(replica["compileS"], 3)
        out["firstTokenS"] = _r(first - (replica["startedAt"] + replica["loadS"] + replica["compileS"]))
    else:
        out["replicaToFirstTokenS"] = _r(first - base)
        out["note"] = "the engine reports no start-up figures: Ray start, weights and compilation are one phase"
    return out, problems


def cold_starts(seen: dict, shapes: list, live: bool) -> tuple[dict, list[str]]:
    nodes, pods = seen.get("nodes", []), seen.get("podsReadyAt", [])
    out: dict = {"cold": None, "compileCacheWarm": None}
    problems: list[str] = []
    cold = StreamRun.from_json(seen["cold"]) if seen.get("cold") else None
    if cold is None or not cold.outcomes:
        problems.append("coldStartS: no first request")
    else:
        out["cold"], found = phases(cold.outcomes[0], cold.started_at, nodes, pods, live)
        problems += [f"coldStartS.{p}" for p in found]
        if out["cold"] is not None:
            out["cold"] = {
                "appToRunningS": _r(cold.started_at + (cold.outcomes[0].sent or 0.0) - seen["appliedAt"]),
                **out["cold"],
            }
    sparse = seen["patterns"].get("sparse")
    if sparse is None:
        if any(s.name == "sparse" for s in shapes):
            problems.append("coldStartCompileCacheWarmS: the sparse shape did not run")
        return out, problems
    run = StreamRun.from_json(sparse["run"])
    first = run.outcomes[0]
    before = [s for s in seen.get("samples", []) if s["at"] <= run.started_at + first.due]
    if before and serve_state.running(before[-1]) != 0:
        problems.append("coldStartCompileCacheWarmS: the sparse request met a replica still RUNNING (lengthen the gap)")
    out["compileCacheWarm"], found = phases(first, run.started_at, nodes, pods, live)
    problems += [f"coldStartCompileCacheWarmS.{p}" for p in found]
    return out, problems
