"""report.md: the comparison side by side in one table, a few sentences that read it, the charts and what is missing.
A simulated report opens with the line that says it is a rehearsal and states no ratio; a live one opens with its
findings, MFU beside each step time. Pure: report.json's document in, Markdown text out."""

from __future__ import annotations

import math
from typing import Optional

from . import input_wait

PHASE_NAMES = {
    "capacityWaitS": "capacity wait (request to nodes Ready)",
    "podStartS": "pod and image start",
    "rayStartS": "Ray start (to the training loop)",
    "firstStepS": "first step (compiles)",
}
PART_NAMES = {
    "capacityWaitS": "capacity wait",
    "podStartS": "pod and image start",
    "rayStartS": "Ray start",
    "compiledStepsS": "compiled steps",
    "stepsS": "steps",
    "checkpointsS": "checkpoints",
    "recoveryS": "recovery",
    "otherS": "other",
}
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


def usd_significant(value: Optional[float], digits: int = 3) -> str:
    """Dollars to `digits` significant figures, never in exponent notation ($0.0123, $1.23, $1,230)."""
    if value is None:
        return NOT_MEASURED
    if value == 0:
        return "$0"
    magnitude = math.floor(math.log10(abs(value)))
    rounded = round(value, digits - 1 - magnitude)
    magnitude = math.floor(math.log10(abs(rounded)))  # 0.0099999 rounds up to 0.0100: one place fewer
    places = max(0, digits - 1 - magnitude)
    return f"${rounded:,.{places}f}"


def _percent(value: float) -> str:
    return f"{value:.2%}"


def _recovery(side: dict) -> str:
    r = side.get("recovery")
    if not r:
        return "not asked"
    if r.get("recoveryS") is None:
        return "not measured"
    detect = f", seen after {seconds(r['detectS'])}" if r.get("detectS") is not None else ""
    return (
        f"{seconds(r['recoveryS'])} after the failure at step {r['injectedAtStep']}{detect}; resumed from step "
        f"{r.get('fromStep')}, {r.get('stepsRedone')} steps redone (why: in the lines above)"
    )


def _devices_note(side: dict) -> str:
    """Beside an MFU: the devices it divides by, where the job ran on other than the side's."""
    ran, stands = side.get("mfuDevices"), side.get("sideDevices")
    if ran is None or stands is None or ran == stands:
        return ""
    return f" (over the {ran} device(s) the job ran on; the side stands for {stands})"


def _mfu(side: dict) -> str:
    if side.get("simulated"):
        return "none (simulated)" + _devices_note(side)
    return NOT_MEASURED if side.get("mfu") is None else f"{side['mfu']:.1%}" + _devices_note(side)


def _flops(side: dict) -> str:
    """The job's FLOPs per step beside the analytic count, the gap flagged over the tolerance."""
    if not side.get("flopsPerStep"):
        return "not declared"
    text = f"{side['flopsPerStep']:.3g}"
    check = side.get("flopsCheck")
    if check:
        text += f" (analytic {check['analyticFlopsPerStep']:.3g}, {check['gap']:+.1%}"
        text += f": OFF BY MORE THAN {check['tolerance']:.0%})" if check["flagged"] else ")"
    return text


def _compile(side: dict) -> str:
    source = side.get("compileSource")
    if side.get("compileS") is None:
        return NOT_MEASURED
    return f"{seconds(side['compileS'])} ({source})" if source else "not measured"


def _step_time(side: dict) -> str:
    stats = side.get("stepTimeS") or {}
    text = " / ".join(seconds(stats.get(k)) for k in ("p50", "p95"))
    return text if side.get("simulated") or side.get("mfu") is None else f"{text} (MFU {side['mfu']:.1%} at p50)"


def _throughput(side: dict) -> str:
    """Examples per second two ways, each said for what it is, so that they do not seem to contradict each other."""
    t = side.get("throughput") or {}
    steady, job = t.get("steadyExamplesPerS"), t.get("jobExamplesPerS") or side.get("examplesPerS")
    parts = []
    if steady:
        parts.append(f"{steady:,.0f} per steady step (batch / p50)")
    if job:
        parts.append(f"{job:,.0f} over the last attempt's steps, compiling step included (the job's)")
    return "; ".join(parts) or NOT_MEASURED


def _per_s(value) -> str:
    return NOT_MEASURED if not value else f"{value / 1e12:,.0f} TFLOP/s"


def _ran_on(side: dict) -> str:
    platform = side.get("platform") or NOT_MEASURED
    return f"{platform} (simulated)" if side.get("simulated") else platform


def _rows(report: dict) -> list[tuple[str, list[str]]]:
    sides = report["sides"]

    def row(label: str, cell) -> tuple[str, list[str]]:
        return label, [cell(s) for s in sides]

    phases = [p for p in PHASE_NAMES if any(p in s.get("startup", {}) for s in sides)]
    priced = " (real price x simulated node time)" if report.get("simulated") else ""
    rows = [
        row("stands for", lambda s: f"{s['kind'].upper()} {s['accelerator']} ({s.get('capacity') or '?'})"),
        row("ran on", _ran_on),
        row("devices", lambda s: str(s.get("devices") or NOT_MEASURED)),
        row("steps", lambda s: str(s.get("steps") or NOT_MEASURED)),
        row("step time p50 / p95", _step_time),
        row("model FLOPs per step (the job's; analytic)", _flops),
        row("peak per device (bf16 dense, catalogue)", lambda s: _per_s(s.get("peakFlopsPerS"))),
        row("MFU (FLOPs / (p50 x devices run on x bf16 dense peak))", _mfu),
        row("compile", _compile),
    ]
    rows += [row(PHASE_NAMES[p], lambda s, p=p: seconds(s.get("startup", {}).get(p))) for p in phases]
    rows += [
        row("training loop", lambda s: seconds(s.get("trainingS"))),
        row("wall time", lambda s: seconds(s.get("wallS"))),
        row("examples per second", _throughput),
        row("price", lambda s: f"{usd(s.get('hourlyUsd'))}/hour"),
        row("billed node time", lambda s: seconds((s.get("billing") or {}).get("billedNodeS"))),
        row("cost per job" + priced, lambda s: usd(s.get("costPerJobUsd"))),
        row("cost per 1,000 steps" + priced, lambda s: usd(s.get("costPer1kStepsUsd"))),
        row("recovery", _recovery),
        row("final loss", lambda s: f"{s['finalLoss']:.6g}" if s.get("finalLoss") is not None else NOT_MEASURED),
    ]
    return rows + input_wait.rows(sides)


def table(report: dict) -> str:
    names = [s["name"] for s in report["sides"]]
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in _rows(report)]
    return "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "∞"


REHEARSAL = (
    "Rehearsal: this run checks the comparison's pipeline on this machine's CPU, standing in for every "
    "accelerator; it says nothing about a TPU's or a GPU's speed or cost."
)
SAME_CPU = "same program on the same CPU, not evidence of numerical agreement"


def _findings(sides: list[dict]) -> list[str]:
    """The live findings: cost per step and step time side by side (cheapest and fastest first), MFU beside each."""
    out = []
    priced = sorted((s for s in sides if s.get("costPer1kStepsUsd") is not None), key=lambda s: s["costPer1kStepsUsd"])
    if len(priced) >= 2:
        cheap, dear = priced[0], priced[-1]
        each = ", ".join(f"{s['name']} {usd(s['costPer1kStepsUsd'])} ({usd(s.get('hourlyUsd'))}/hour)" for s in priced)
        out.append(
            f"Per 1,000 steps: {each}; {dear['name']} costs "
            f"{_ratio(dear['costPer1kStepsUsd'], cheap['costPer1kStepsUsd'])} what {cheap['name']} does. The "
            "cost per step, not per hour, is what a trained model costs."
        )
    timed = sorted((s for s in sides if s.get("stepTimeS")), key=lambda s: s["stepTimeS"]["p50"])
    if len(timed) >= 2:
        each = ", ".join(
            f"{seconds(s['stepTimeS']['p50'])} on {s['name']}"
            + (
                f" (MFU {s['mfu']:.1%})"
                if s.get("mfu") is not None
                else " (MFU not known: the job declared no flopsPerStep)"
            )
            for s in timed
        )
        out.append(
            f"A steady step (compiling steps left out) takes, at the median: {each}; "
            f"{_ratio(timed[-1]['stepTimeS']['p50'], timed[0]['stepTimeS']['p50'])} between the slowest and "
            "the fastest."
        )
    return out


def sentences(report: dict) -> list[str]:
    sides = report["sides"]
    simulated = bool(report.get("simulated"))
    # A simulated run's cost and step-time ratios are the price ratio and this machine's noise: never stated.
    out = [] if simulated else _findings(sides)
    for s in sides:
        start, wall = s.get("startup") or {}, s.get("wallS")
        if wall and start:
            share = sum(start.values()) / wall
            biggest = max(start, key=lambda phase: start[phase])
            out.append(
                f"{s['name']}: {seconds(sum(start.values()))} of its {seconds(wall)} wall time "
                f"({share:.0%}) went to start-up, most of it to {PHASE_NAMES[biggest].split(' (')[0]}; "
                + (
                    f"compiling took {seconds(s.get('compileS'))} ({s['compileSource']})."
                    if s.get("compileSource")
                    else "its compile time was not measured."
                )
            )
        if s.get("devicesNote"):
            out.append(f"{s['name']}: {s['devicesNote']}.")
        check = s.get("flopsCheck")
        if check and check["flagged"]:
            out.append(
                f"{s['name']}: the job's FLOPs per step ({check['jobFlopsPerStep']:.3g}) are {check['gap']:+.1%} off "
                f"the analytic count ({check['analyticFlopsPerStep']:.3g}: {check['convention']}; "
                f"{check['fullAttentionFlopsPerStep']:.3g} with the whole attention), more than "
                f"{check['tolerance']:.0%}: its MFU is off by as much. "
                + (
                    "A counter that misses an operation (PyTorch's FlopCounterMode and an attention kernel it has "
                    "no formula for) counts fewer."
                    if check["gap"] < 0
                    else "A count of every executed operation (XLA's cost analysis: element-wise work, the whole "
                    "masked attention) counts more."
                )
            )
        r = s.get("recovery") or {}
        if r.get("recoveryS") is not None:
            seen = f" (the failure seen after {seconds(r['detectS'])})" if r.get("detectS") is not None else ""
            out.append(
                f"{s['name']} lost a worker at step {r['injectedAtStep']} and reported a step again "
                f"{seconds(r['recoveryS'])} later{seen}, resuming from the checkpoint of step "
                f"{r.get('fromStep')} with {r.get('stepsRedone')} steps redone"
                + (f": {r['why']}." if r.get("why") else ".")
            )
        still = (s.get("billing") or {}).get("stillUp")
        if still:
            out.append(
                f"{s['name']}: {', '.join(still)} was still up when the report was collected; its cost counts "
                "until then."
            )
    out += input_wait.sentences(sides, simulated)
    agreement = report.get("agreement")
    if agreement:
        prints = agreement["fingerprint"]
        verdict = "agree" if agreement["agree"] else "do NOT agree"
        detail = (
            f"predictions on the evaluation batch by {_percent(prints['relativeDifference'])}"
            if "relativeDifference" in prints
            else f"output fingerprints not compared: {prints.get('reason')}"
            if prints.get("checked") is False and prints["agree"]
            else f"fingerprints: {prints.get('reason')}"
        )
        label = f"Agreement ({SAME_CPU}): the" if simulated else "The"
        out.append(
            f"{label} sides {verdict} within {_percent(agreement['tolerance'])}: their "
            f"{agreement['metric']} values differ by {_percent(agreement['relativeDifference'])}, {detail}"
            + (" (bit for bit equal)" if prints.get("sameSha256") else "")
            + "."
        )
    if simulated:
        out.append(
            "Simulated: the times say how the pipeline behaves, not how fast a TPU or a GPU is; the costs are "
            "the plan's prices of the real slice and pools applied to the simulated nodes' lifetimes; MFU is "
            "not computed. `--estimate` says what the hardware would take and cost."
        )
    return out


def failed_logs(report: dict) -> list[str]:
    """Each failed job's last log lines, and where its whole log and result document are kept."""
    out = []
    for s in report["sides"]:
        if not s.get("logTail"):
            continue
        kept = ", ".join(f"`{s[k]}`" for k in ("logFile", "resultFile") if s.get(k))
        out += [f"### {s['name']}: the job's last log lines" + (f" (kept: {kept})" if kept else ""), ""]
        out += ["```", *s["logTail"], "```", ""]
    return out


def render(report: dict, charts: list[str]) -> str:
    title = f"# Comparison `{report['run']}` of stack `{report['stack']}` ({report['mode']}"
    title += ", simulated)" if report.get("simulated") else ")"
    # The findings first, then the table; a simulated report's very first line says it is a rehearsal.
    head = [REHEARSAL, ""] if report.get("simulated") else []
    parts = [*head, title, "", *[f"- {s}" for s in sentences(report)], "", table(report), ""]
    for chart in charts:
        parts += [f"![{chart}]({chart})", ""]
    if report["problems"]:
        parts += ["## Missing or failed", "", *[f"- {p}" for p in report["problems"]], ""]
        parts += failed_logs(report)
    else:
        parts += ["Every measure was obtained and both sides finished.", ""]
    return "\n".join(parts)
