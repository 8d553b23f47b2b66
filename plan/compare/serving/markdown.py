"""report.md of the serving comparison: the first line says what the report can show (a rehearsal checks the
pipeline and says nothing of a TPU's or a GPU's serving speed or cost), then one side-by-side table and sentences
that read it, without a ratio or a winner, then the charts and the problems."""

from __future__ import annotations

from typing import Optional

REHEARSAL = (
    "Serving rehearsal (local, simulated): this run checks the pipeline (start-up from zero, open-loop load, "
    "Serve's autoscaling, the report) and says nothing about a TPU's or a GPU's serving speed or cost"
)
PHASES = (
    ("rayStartS", "Ray and Serve start (to the first request)"),
    ("capacityAndNodeS", "capacity and node (first request to node Ready)"),
    ("podAndImageS", "pod and image (node Ready to pod Ready)"),
    ("replicaStartS", "replica start (model load and compile)"),
    ("firstResponseS", "first response"),
)


def _s(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f} s" if value >= 1 else f"{value * 1000:.0f} ms"


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def _usd(value: Optional[float]) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _row(label: str, cells: list[str]) -> str:
    return f"| {label} | " + " | ".join(cells) + " |"


def first_line(report: dict) -> str:
    if report["mode"] == "local":
        return f"# {REHEARSAL}"
    return (
        f"# Serving on TPU and GPU, measured live on {report.get('context', 'the cluster')} (run {report['run']}): "
        "the same Serve application on each side"
    )


def table(report: dict) -> list[str]:
    sides = report["serving"]
    lines = ["| | " + " | ".join(s["name"] for s in sides) + " |", "| --- |" + " --- |" * len(sides)]
    lines.append(
        _row("stands for", [f"{s['kind'].upper()} {s['accelerator']} ({s.get('capacity') or '-'})" for s in sides])
    )
    lines.append(_row("ran on", ["cpu (simulated)" if s["simulated"] else s["kind"] for s in sides]))
    lines.append(_row("start-up from zero", [_s((s["coldStartS"] or {}).get("totalS")) for s in sides]))
    for key, label in PHASES:
        if any(key in (s["coldStartS"] or {}) for s in sides):
            lines.append(_row(f"- {label}", [_s((s["coldStartS"] or {}).get(key)) for s in sides]))
    for name in report["patterns"]:
        cells = []
        for s in sides:
            p = s["patterns"].get(name)
            if not p:
                cells.append("not run")
                continue
            lat = p["latencyMs"] or {}
            cells.append(
                f"{p['offeredRps']:g} req/s offered, {p['requests']} requests, {p['errors']} errors "
                f"({p['timeouts']} timeouts); p50 / p95 / p99 {_ms(lat.get('p50'))} / {_ms(lat.get('p95'))} "
                f"/ {_ms(lat.get('p99'))}; {_usd(p['costPerMillionUsd'])} per million"
            )
        lines.append(_row(name, cells))
    lines.append(
        _row(f"highest rate under p95 {report['sloMs']:g} ms", [f"{s['maxRpsUnderSlo']['rps']:g} req/s" for s in sides])
    )
    lines.append(
        _row("autoscaler reaction (step to added replica RUNNING)", [_s(s["autoscaleReactionS"]) for s in sides])
    )
    lines.append(
        _row(
            "idle cost at min_replicas",
            [f"{_usd(s['idleCostPerHourUsd'])}/hour ({s['idleNodes']} nodes)" for s in sides],
        )
    )
    return lines


def sentences(report: dict) -> list[str]:
    out = []
    for s in report["serving"]:
        cold = s["coldStartS"] or {}
        if cold:
            parts = [(label.split(" (")[0], cold[key]) for key, label in PHASES if cold.get(key) is not None]
            longest = max(parts, key=lambda p: p[1])[0] if parts else None
            own = s.get("replicaStartup")
            out.append(
                f"- {s['name']} answered its first request {_s(cold.get('totalS'))} after the service was "
                f"created, most of it in {longest}"
                + (
                    f"; the replica loaded its model in {_s(own['loadS'])} and compiled in {_s(own['compileS'])}."
                    if own
                    else "."
                )
            )
        react = s.get("autoscale") or {}
        if s["autoscaleReactionS"] is not None:
            out.append(
                f"- {s['name']}: after the burst's step Serve raised its target in {_s(react.get('decisionS'))} "
                f"and a replica more ({react.get('fromReplicas')} to {react.get('toReplicas')}) was RUNNING "
                f"{_s(s['autoscaleReactionS'])} after the step (Serve's own state)."
            )
        sparse = s["patterns"].get("sparse")
        if sparse and sparse.get("coldLatenciesMs"):
            shown = ", ".join(_ms(v) if v is not None else "no answer" for v in sparse["coldLatenciesMs"])
            out.append(
                f"- {s['name']}: each sparse request came after an idle gap longer than the downscale delay "
                f"and took {shown}; idle, the side costs {_usd(s['idleCostPerHourUsd'])} an hour."
            )
    request = (report.get("localRun") or report.get("liveRun") or {}).get("request") or {}
    sequences = request.get("sequences")
    if isinstance(sequences, list) and sequences:
        asked = f"{request['generate']} greedy tokens after each" if request.get("generate") else "their log-likelihood"
        out.append(
            f"- Every request sent {len(sequences)} token sequences of {len(sequences[0])} ids and asked for {asked}."
        )
    if report["simulated"]:
        out.append(
            "- Simulated: both sides ran on this machine's CPU, standing in for the accelerators, with Serve's "
            "delays shortened; the prices are the plan's for the real slice and pool, applied to the simulated "
            "nodes' lifetimes, so the costs say how the pipeline adds up, not what serving costs."
        )
    return out


def render(report: dict, charts: list[str]) -> str:
    lines = [
        first_line(report),
        "",
        f"Stack `{report['stack']}`, run `{report['run']}`, mode {report['mode']}; "
        f"latency objective p95 {report['sloMs']:g} ms.",
        "",
    ]
    if report["serving"]:
        lines += table(report) + [""] + sentences(report) + [""]
    for chart in charts:
        lines.append(f"![{chart}]({chart})")
    if report["problems"]:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in report["problems"]]
    return "\n".join(lines) + "\n"
