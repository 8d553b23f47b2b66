"""The LLM report, the same lines for local, live and `--target` runs: what was seen of each side (local.py, live.py)
in, report.json's `llm` entries out (fields in docs/compare.md, "LLM serving"), with one problem line for each measure
that could not be obtained. Cost follows GKE Inference Quickstart's formula (the GKE Recommender API's `Cost`
message, google.cloud.gkerecommender.v1: $/output token = accelerator $/s / (input tokens/s / output-to-input cost
ratio + output tokens/s), the ratio 4 unless given; $/input token = $/output token / ratio), at the measured
throughput and the plan's price (its date and pricing model beside it)."""

from __future__ import annotations

from typing import Optional

from ..serving import report as serving_report
from ..serving import serve_state
from ..serving.services import ServiceSide
from . import agreement, metrics, timeline
from .shapes import Shape
from .sides import autoscaling, model_id, price_facts
from .stream import StreamRun

REPORT_SCHEMA = "ray-tpu-gke/compare-llm-report/v1"
OUTPUT_INPUT_COST_RATIO = 4.0  # GKE Recommender API Cost.output_input_cost_ratio: 4.0 when not provided
DEFAULT_SLO = "ttft=500ms,tpot=50ms"
PER_PHASE = ("sweep", "burst")  # shapes whose phases are read apart (the sweep's rates, the burst's steps)


def cost_per_million(hourly: Optional[float], output_tps: Optional[float], input_tps: Optional[float]) -> dict:
    if hourly is None or not output_tps:
        return {"outputUsd": None, "inputUsd": None}
    per_second = hourly / 3600
    per_output = per_second / ((input_tps or 0.0) / OUTPUT_INPUT_COST_RATIO + output_tps)
    return {
        "outputUsd": round(per_output * 1e6, 4),
        "inputUsd": round(per_output / OUTPUT_INPUT_COST_RATIO * 1e6, 4),
    }


def replica_hourly(side: Optional[ServiceSide]) -> Optional[float]:
    """What one replica's nodes cost an hour: a TPU replica holds its slice's hosts, a GPU replica its node."""
    return side.node_hourly * side.hosts if side is not None and side.node_hourly is not None else None


def _costs(side: Optional[ServiceSide], shapes_seen: dict, plan: dict) -> tuple[dict, list[str]]:
    """Cost per million tokens at the highest output throughput measured at one offered rate (the sweep's rates, or a
    whole shape's), one replica's nodes at the plan's price; and the price's facts."""
    if side is None:
        return {"formula": None}, ["costs: an endpoint of its own (--target) has no price in the plan"]
    rates = (shapes_seen.get("sweep") or {}).get("phases") or [s for n, s in shapes_seen.items() if n != "sparse"]
    best: dict = max(rates, key=lambda r: r["outputTokensPerS"] or 0.0, default={})
    least = autoscaling(side).get("min_replicas", 1)
    out = {
        "formula": "GKE Inference Quickstart: $/output token = $/s / (input tokens/s / 4 + output tokens/s)",
        "price": price_facts(plan, side),
        "replicaHourlyUsd": replica_hourly(side),
        "atOutputTokensPerS": best.get("outputTokensPerS"),
        "atInputTokensPerS": best.get("inputTokensPerS"),
        "perMillionTokens": cost_per_million(
            replica_hourly(side), best.get("outputTokensPerS"), best.get("inputTokensPerS")
        ),
        "minReplicas": least,
        "idleNodes": side.nodes_for(least),
    }
    problems = [] if side.node_hourly is not None else [f"costs: {side.price_problem}"]
    if out["perMillionTokens"]["outputUsd"] is None and side.node_hourly is not None:
        problems.append("costs.perMillionTokens: no output tokens measured")
    return out, problems


def _autoscale(seen: dict, shapes: list[Shape], most: Optional[int] = None) -> tuple[Optional[dict], list[str]]:
    """Serve's target and RUNNING replicas against the offered load, and its reaction to the burst's step; a service
    already at its `max_replicas` (`most`) when the step came has none to make, which is no missing measure."""
    samples = seen.get("samples", [])
    if not samples:
        return None, [f"Serve's state: never read ({seen.get('pollErrors', 0)} failed reads)"]
    since = seen["appliedAt"]
    out: dict = {
        "replicas": serve_state.timeline(samples, since),
        "offered": serving_report.offered_per_second(seen, shapes, since),
        "windows": {
            n: [round(d["run"]["startedAt"] - since, 3), round(d["endedAt"] - since, 3)]
            for n, d in seen["patterns"].items()
        },
        "reaction": None,
    }
    burst = next((s for s in shapes if s.name == "burst"), None)
    if burst is None or "burst" not in seen["patterns"]:
        return out, []
    step = seen["patterns"]["burst"]["run"]["startedAt"] + burst.phases[0].seconds
    reacted = serve_state.reaction(samples, step, decided_by=seen["patterns"]["burst"]["endedAt"])
    out["reaction"] = reacted
    out["peakTarget"] = max((s["target"] or 0) for s in samples if s["at"] >= step) if samples else None
    at_step = ([s for s in samples if s["at"] <= step] or [None])[-1]
    out["atMaxReplicas"] = bool(most is not None and at_step is not None and serve_state.running(at_step) >= most)
    if reacted or out["atMaxReplicas"]:
        return out, []
    return out, ["autoscale.reaction: Serve added no replica that ran after the burst's step"]


def side_entry(
    name: str,
    side: Optional[ServiceSide],
    seen: dict,
    shapes: list[Shape],
    *,
    slo_ms: dict,
    simulated: bool,
    plan: dict,
    mode: str,
) -> tuple[dict, list[str]]:
    problems = list(seen.get("problems", []))
    entry: dict = {
        "name": name,
        "kind": side.kind if side else "endpoint",
        "simulated": simulated,
        "accelerator": side.accelerator if side else None,
        "runsOn": side.item if side else None,
        "model": seen.get("model") or (model_id(side) if side else None),
        "url": seen.get("url"),
        "engine": "stand-in (workloads.llm_standin: the small JAX transformer, not vLLM)" if simulated else None,
        "autoscalingConfig": autoscaling(side) if side else None,
    }
    entry["shapes"] = {}
    for shape in shapes:
        data = seen["patterns"].get(shape.name)
        if data is None:
            problems.append(f"shapes.{shape.name}: not run")
            continue
        run = StreamRun.from_json(data["run"])
        summary = metrics.shape_summary(run, shape.phases, shape.duration_s, slo_ms, shape.name in PER_PHASE)
        summary["params"] = shape.params
        summary["costPerMillionOutputTokensUsd"] = cost_per_million(
            replica_hourly(side), summary["outputTokensPerS"], summary["inputTokensPerS"]
        )["outputUsd"]
        entry["shapes"][shape.name] = summary
        for key in ("ttftMs", "tpotMs", "itlMs", "e2eMs"):
            if summary[key] is None:
                problems.append(f"shapes.{shape.name}.{key}: no request measured it ({summary['errorKinds']})")
    sweep = entry["shapes"].get("sweep")
    entry["sweep"] = metrics.sweep_curve(sweep) if sweep else None
    entry["goodput"] = {
        "slo": slo_ms,
        **metrics.best_goodput(entry["shapes"]),
        "byShape": {n: s["goodputRps"] for n, s in entry["shapes"].items()},
    }
    entry["costs"], found = _costs(side, entry["shapes"], plan)
    problems += found
    least = entry["costs"].get("minReplicas", 0)
    hourly = side.node_hourly if side is not None else None
    entry["idleCostPerHourUsd"] = round(side.nodes_for(least) * hourly, 4) if side and hourly is not None else None
    if mode != "target":
        starts, found = timeline.cold_starts(seen, shapes, live=mode == "live")
        entry["coldStartS"], entry["coldStartCompileCacheWarmS"] = starts["cold"], starts["compileCacheWarm"]
        problems += found
        most = autoscaling(side).get("max_replicas") if side is not None else None
        entry["autoscale"], found = _autoscale(seen, shapes, most if isinstance(most, int) else None)
        problems += found
    if "accelerators" in seen:
        entry["accelerators"] = seen["accelerators"]
    pooled = [o for d in seen["patterns"].values() for o in StreamRun.from_json(d["run"]).outcomes if o.ok]
    entry["samplesMs"] = {
        "ttft": sorted(round(t * 1000, 3) for o in pooled if (t := metrics.ttft_s(o)) is not None),
        "itl": sorted(round(g * 1000, 3) for o in pooled for g in metrics.itls_s(o)),
    }
    return entry, [f"{name}: {p}" if not p.startswith(f"{name}:") else p for p in problems]


def build(
    stack: str,
    mode: str,
    run_id: str,
    named: list[tuple[str, Optional[ServiceSide]]],
    seen: list[dict],
    shapes: list[Shape],
    *,
    slo_ms: dict,
    plan: dict,
    prompts: dict,
    agree_tokens: int,
    context: Optional[str] = None,
    facts: Optional[dict] = None,
) -> dict:
    simulated = mode == "local"
    by_name = {s["name"]: s for s in seen}
    entries, problems = [], []
    for name, side in named:
        if name not in by_name:
            problems.append(f"{name}: not run")
            continue
        entry, found = side_entry(
            name, side, by_name[name], shapes, slo_ms=slo_ms, simulated=simulated, plan=plan, mode=mode
        )
        entries.append(entry)
        problems += found
    agreed = agreement.compare(
        {s["name"]: StreamRun.from_json(s["agreement"]) for s in seen if s.get("agreement")}, agree_tokens
    )
    if agreed.get("problem") and len(named) > 1:  # one side alone has nothing to agree with
        problems.append(f"agreement: {agreed['problem']}")
    for entry in entries:  # each side's agreement with the others on the same prompts (the same figures on each)
        entry["agreement"] = agreement.for_side(agreed, entry["name"])
    document = {
        "schema": REPORT_SCHEMA,
        "stack": stack,
        "mode": mode,
        "run": run_id,
        "simulated": simulated,
        "slo": slo_ms,
        "prompts": prompts,
        "shapes": {s.name: s.params for s in shapes},
        "llm": entries,
        "problems": problems,
        "complete": not problems and len(entries) == len(named),
    }
    if context:
        document["context"] = context
    if facts:
        document["localRun" if simulated else "liveRun"] = facts
    return document
