"""report.md of the LLM comparison: the first line says what the report can show (a rehearsal checks the pipeline
with a stand-in engine and says nothing of a TPU's or a GPU's token speed or cost), then one side-by-side table, the
throughput-latency curve, the agreement, the charts and the problems. No ratio, no winner."""

from __future__ import annotations

from typing import Optional

from ..serving.markdown import _ms, _row, _s, _usd

REHEARSAL = (
    "LLM serving rehearsal (local, simulated): a stand-in engine (the small JAX transformer, not vLLM) on CPU checks "
    "the pipeline (start from zero, token load, Serve's autoscaling, the report) and says nothing about a TPU's or a "
    "GPU's token speed or cost"
)
TIMELINE = (
    ("appToRunningS", "service to Serve RUNNING"),
    ("capacityAndNodeS", "node"),
    ("podAndImageS", "pod and image"),
    ("rayStartS", "Ray start"),
    ("weightsS", "weights loaded"),
    ("compileS", "compilation"),
    ("firstTokenS", "first token"),
    ("replicaToFirstTokenS", "Ray start to first token"),
    ("totalS", "total (request to first token)"),
)


def first_line(report: dict) -> str:
    if report["mode"] == "local":
        return f"# {REHEARSAL}"
    where = report.get("context") or "endpoints of your own"
    return f"# LLM serving measured live on {where} (run {report['run']}): the same prompts and load on each side"


def _dist(d: Optional[dict], key: str) -> str:
    return "-" if not d else _ms(d.get(key))


def _num(value: Optional[float], unit: str = "") -> str:
    return "-" if value is None else f"{value:,.2f}{unit}"


def table(report: dict) -> list[str]:
    sides = report["llm"]
    sim = " (simulated)" if report["simulated"] else ""
    lines = ["| | " + " | ".join(s["name"] for s in sides) + " |", "| --- |" + " --- |" * len(sides)]
    lines.append(
        _row("stands for", [f"{s['kind'].upper()} {s.get('accelerator') or s.get('url') or '-'}" for s in sides])
    )
    lines.append(_row("model", [str(s.get("model")) for s in sides]))
    for name in report["shapes"]:
        lines.append(_row(f"**{name}**", ["" for _ in sides]))
        for key, label in (("ttftMs", "TTFT"), ("tpotMs", "TPOT"), ("itlMs", "ITL"), ("e2eMs", "E2EL")):
            cells = []
            for s in sides:
                d = (s["shapes"].get(name) or {}).get(key)
                cells.append("-" if not d else f"{_dist(d, 'p50')} / {_dist(d, 'p99')}")
            lines.append(_row(f"- {label} p50 / p99{sim}", cells))
        for key, label in (
            ("outputTokensPerS", "output tokens/s"),
            ("requestsPerS", "requests/s"),
            ("goodputRps", "goodput requests/s"),
        ):
            lines.append(_row(f"- {label}{sim}", [_num((s["shapes"].get(name) or {}).get(key)) for s in sides]))
        lines.append(
            _row(
                "- errors (timeouts)",
                [
                    f"{shape.get('errors', '-')} ({shape.get('timeouts', '-')})"
                    for shape in (s["shapes"].get(name) or {} for s in sides)
                ],
            )
        )
    lines.append(
        _row(
            f"best goodput{sim}",
            [
                "-" if s["goodput"]["rps"] is None else f"{_num(s['goodput']['rps'])} requests/s ({s['goodput']['at']})"
                for s in sides
            ],
        )
    )
    lines.append(
        _row(
            f"cost per million output tokens{sim}",
            [_usd((s["costs"].get("perMillionTokens") or {}).get("outputUsd")) for s in sides],
        )
    )
    lines.append(_row("idle cost per hour (min replicas)", [_usd(s.get("idleCostPerHourUsd")) for s in sides]))
    lines.append(
        _row(
            "price",
            [
                "-"
                if not s["costs"].get("price")
                else f"${s['costs']['price']['nodeHourlyUsd']:,.2f}/node-hour, {s['costs']['price']['pricingModel']}, "
                f"as of {s['costs']['price']['asOf']}"
                for s in sides
            ],
        )
    )
    for which in ("coldStartS", "coldStartCompileCacheWarmS"):
        label = "start from zero, cold" if which == "coldStartS" else "start from zero, compile cache warm"
        lines.append(_row(f"**{label}**{sim}", ["" for _ in sides]))
        for key, name in TIMELINE:
            if any(key in ((s.get(which)) or {}) for s in sides):
                lines.append(_row(f"- {name}", [_s(((s.get(which)) or {}).get(key)) for s in sides]))
    lines.append(
        _row(
            "Serve's peak target in the burst", [str((s.get("autoscale") or {}).get("peakTarget", "-")) for s in sides]
        )
    )
    lines.append(
        _row(
            "burst: replica added after the step",
            [
                "none: at max_replicas"
                if (s.get("autoscale") or {}).get("atMaxReplicas")
                else _s(((s.get("autoscale") or {}).get("reaction") or {}).get("reactionS"))
                for s in sides
            ],
        )
    )
    return lines


def curve(report: dict) -> list[str]:
    lines = []
    for s in report["llm"]:
        if not s.get("sweep"):
            continue
        lines += [f"**{s['name']}**: offered rate, output tokens/s, goodput, TTFT p50/p99, TPOT p50/p99", ""]
        lines += [
            "| rate | output tokens/s | goodput | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for p in s["sweep"]:
            lines.append(
                f"| {p['offeredRps']:g} | {_num(p['outputTokensPerS'])} | {_num(p['goodputRps'])} | "
                f"{_ms(p['ttftMs']['p50'])} | {_ms(p['ttftMs']['p99'])} | {_ms(p['tpotMs']['p50'])} | "
                f"{_ms(p['tpotMs']['p99'])} |"
            )
        lines.append("")
    return lines


def render(report: dict, charts: list[str]) -> str:
    slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in report["slo"].items())
    agreed: dict = report["llm"][0]["agreement"] if report["llm"] else {"problem": "no side ran"}
    lines = [first_line(report), "", f"Objective for goodput: {slo}. Prompts: {report['prompts']}.", ""]
    lines += table(report) + ["", "## Throughput against latency (sweep)", ""] + curve(report)
    lines += ["## Output agreement", ""]
    if agreed.get("matchingPrefixShare") is not None:
        differ = {p: at for p, at in agreed["firstDifference"].items() if at is not None}
        lines.append(
            f"{agreed['prompts']} prompts decoded greedily on {report['llm'][0]['name']} and "
            f"{', '.join(agreed['with'])}: {agreed['matchingPrefixShare']:.0%} match in their first "
            f"{agreed['tokens']} tokens; where they first differ (prompt: token): {differ or 'nowhere'}."
        )
    else:
        lines.append(f"Not compared: {agreed.get('problem')}.")
    lines += ["", "## Charts", ""] + [f"![{c}]({c})" for c in charts]
    if report["problems"]:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in report["problems"]]
    return "\n".join(lines) + "\n"
