"""report.md: the comparison side by side in one table, a few sentences that read it, the charts and what is missing.
Pure: report.json's document in, Markdown text out."""

from __future__ import annotations

from typing import Optional

PHASE_NAMES = {"capacityWaitS": "capacity wait (request to nodes Ready)", "podStartS": "pod and image start",
               "rayStartS": "Ray start (to the training loop)", "firstStepS": "first step (compiles)"}
PART_NAMES = {"capacityWaitS": "capacity wait", "podStartS": "pod and image start", "rayStartS": "Ray start",
              "compiledStepsS": "compiled steps", "stepsS": "steps", "checkpointsS": "checkpoints",
              "recoveryS": "recovery", "otherS": "other"}
NOT_MEASURED = "–"


def seconds(value: Optional[float]) -> str:
    if value is None:
        return NOT_MEASURED
    if value < 1:
        return f"{value * 1000:.2f} ms"
    return f"{value:.1f} s" if value < 600 else f"{value / 60:.1f} min"


def usd(value: Optional[float], places: int = 2) -> str:
    if value is None:
        return NOT_MEASURED
    if 0 < abs(value) < 0.01 and places <= 2:
        places = 4  # a fraction of a cent still shows
    return f"${value:,.{places}f}"


def _percent(value: float) -> str:
    return f"{value:.2%}"


def _recovery(side: dict) -> str:
    r = side.get("recovery")
    if not r:
        return "not asked"
    if r.get("recoveryS") is None:
        return "not measured"
    detect = f", seen after {seconds(r['detectS'])}" if r.get("detectS") is not None else ""
    return (f"{seconds(r['recoveryS'])} after the failure at step {r['injectedAtStep']}{detect}; resumed from step "
            f"{r.get('fromStep')}, {r.get('stepsRedone')} steps redone")


def _ran_on(side: dict) -> str:
    platform = side.get("platform") or NOT_MEASURED
    return f"{platform} (simulated)" if side.get("simulated") else platform


def _rows(report: dict) -> list[tuple[str, list[str]]]:
    sides = report["sides"]

    def row(label: str, cell) -> tuple[str, list[str]]:
        return label, [cell(s) for s in sides]

    phases = [p for p in PHASE_NAMES if any(p in s.get("startup", {}) for s in sides)]
    rows = [row("stands for", lambda s: f"{s['kind'].upper()} {s['accelerator']} ({s.get('capacity') or '?'})"),
            row("ran on", _ran_on),
            row("devices", lambda s: str(s.get("devices") or NOT_MEASURED)),
            row("steps", lambda s: str(s.get("steps") or NOT_MEASURED)),
            row("step time p50 / p95", lambda s: " / ".join(seconds((s.get("stepTimeS") or {}).get(k))
                                                            for k in ("p50", "p95"))),
            row("compile (jax.monitoring)", lambda s: seconds(s.get("compileS")))]
    rows += [row(PHASE_NAMES[p], lambda s, p=p: seconds(s.get("startup", {}).get(p))) for p in phases]
    rows += [row("training loop", lambda s: seconds(s.get("trainingS"))),
             row("wall time", lambda s: seconds(s.get("wallS"))),
             row("examples per second", lambda s: f"{s['examplesPerS']:,.0f}" if s.get("examplesPerS") else
                 NOT_MEASURED),
             row("price", lambda s: f"{usd(s.get('hourlyUsd'))}/hour"),
             row("billed node time", lambda s: seconds((s.get("billing") or {}).get("billedNodeS"))),
             row("cost per job", lambda s: usd(s.get("costPerJobUsd"))),
             row("cost per 1,000 steps", lambda s: usd(s.get("costPer1kStepsUsd"))),
             row("recovery", _recovery),
             row("final loss", lambda s: f"{s['finalLoss']:.6g}" if s.get("finalLoss") is not None else
                 NOT_MEASURED)]
    return rows


def table(report: dict) -> str:
    names = [s["name"] for s in report["sides"]]
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in _rows(report)]
    return "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "∞"


def sentences(report: dict) -> list[str]:
    sides = report["sides"]
    out = []
    priced = [s for s in sides if s.get("costPer1kStepsUsd") is not None]
    if len(priced) >= 2:
        cheap, dear = sorted(priced[:2], key=lambda s: s["costPer1kStepsUsd"])
        out.append(f"Per 1,000 steps {cheap['name']} costs {usd(cheap['costPer1kStepsUsd'])} and {dear['name']} "
                   f"{usd(dear['costPer1kStepsUsd'])} ({_ratio(dear['costPer1kStepsUsd'], cheap['costPer1kStepsUsd'])}"
                   f"); per hour of hardware they cost {usd(cheap.get('hourlyUsd'))} and {usd(dear.get('hourlyUsd'))}."
                   " The cost per step, not per hour, is what a trained model costs.")
    timed = [s for s in sides if s.get("stepTimeS")]
    if len(timed) >= 2:
        fast, slow = sorted(timed[:2], key=lambda s: s["stepTimeS"]["p50"])
        out.append(f"A steady step (compiling steps left out) takes {seconds(fast['stepTimeS']['p50'])} on "
                   f"{fast['name']} and {seconds(slow['stepTimeS']['p50'])} on {slow['name']} at the median "
                   f"({_ratio(slow['stepTimeS']['p50'], fast['stepTimeS']['p50'])}).")
    for s in sides:
        start, wall = s.get("startup") or {}, s.get("wallS")
        if wall and start:
            share = sum(start.values()) / wall
            biggest = max(start, key=start.get)
            out.append(f"{s['name']}: {seconds(sum(start.values()))} of its {seconds(wall)} wall time "
                       f"({share:.0%}) went to start-up, most of it to {PHASE_NAMES[biggest].split(' (')[0]}; "
                       f"compiling took {seconds(s.get('compileS'))}.")
        r = s.get("recovery") or {}
        if r.get("recoveryS") is not None:
            seen = f" (the failure seen after {seconds(r['detectS'])})" if r.get("detectS") is not None else ""
            out.append(f"{s['name']} lost a worker at step {r['injectedAtStep']} and reported a step again "
                       f"{seconds(r['recoveryS'])} later{seen}, resuming from the checkpoint of step "
                       f"{r.get('fromStep')} with {r.get('stepsRedone')} steps redone.")
        still = (s.get("billing") or {}).get("stillUp")
        if still:
            out.append(f"{s['name']}: {', '.join(still)} was still up when the report was collected; its cost counts "
                       "until then.")
    agreement = report.get("agreement")
    if agreement:
        prints = agreement["fingerprint"]
        verdict = "agree" if agreement["agree"] else "do NOT agree"
        detail = (f"predictions on the evaluation batch by {_percent(prints['relativeDifference'])}"
                  if "relativeDifference" in prints else f"fingerprints: {prints.get('reason')}")
        out.append(f"The sides {verdict} within {_percent(agreement['tolerance'])}: final losses differ by "
                   f"{_percent(agreement['relativeDifference'])}, {detail}"
                   + (" (bit for bit equal)" if prints.get("sameSha256") else "") + ".")
    if report.get("simulated"):
        out.append("Simulated: the sides ran on this machine's CPU, standing in for the accelerators, so the times say "
                   "how the pipeline behaves, not how fast a TPU or a GPU is; the prices are the plan's for the real "
                   "slice and pool, applied to the simulated nodes' lifetimes.")
    return out


def render(report: dict, charts: list[str]) -> str:
    title = f"# Comparison `{report['run']}` of stack `{report['stack']}` ({report['mode']}"
    title += ", simulated)" if report.get("simulated") else ")"
    parts = [title, "", table(report), "", *[f"- {s}" for s in sentences(report)], ""]
    for chart in charts:
        parts += [f"![{chart}]({chart})", ""]
    if report["problems"]:
        parts += ["## Missing or failed", "", *[f"- {p}" for p in report["problems"]], ""]
    else:
        parts += ["Every measure was obtained and both sides finished.", ""]
    return "\n".join(parts)
