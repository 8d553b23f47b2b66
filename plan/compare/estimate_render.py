"""An estimate's words and chart: every line and the chart's title say "estimate", with the MFU range it assumes.
Pure but for the chart file."""

from __future__ import annotations

from pathlib import Path

from .markdown import NOT_MEASURED, seconds, usd

CHART = "estimate.png"


def _range(span, show) -> str:
    return NOT_MEASURED if not span else f"{show(span['low'])} – {show(span['high'])}"


def _flops(value) -> str:
    return NOT_MEASURED if not value else f"{value:.3g}"


def _per_s(value) -> str:
    return NOT_MEASURED if not value else f"{value / 1e12:,.0f} TFLOP/s"


def _mfu(report: dict) -> str:
    m = report["mfuRange"]
    return f"{m['low']:.0%}–{m['high']:.0%}"


def lines(report: dict) -> list[str]:
    """One sentence per side, each saying it is an estimate and at what MFU."""
    out = []
    for s in report["sides"]:
        head = (
            f"Estimate, {s['name']} ({s['kind'].upper()} {s['accelerator']}, {s['devices']} devices at "
            f"{_per_s(s.get('peakFlopsPerS'))} peak bf16 each), at {_mfu(report)} MFU:"
        )
        if not s.get("stepTimeS"):
            why = [p.split(": ", 1)[1] for p in report["problems"] if p.startswith(s["name"] + ":")]
            out.append(f"{head} not estimated ({'; '.join(why) or 'see the problems'})")
            continue
        text = (
            f"{head} a step of {_flops(s.get('flopsPerStep'))} FLOPs takes {_range(s['stepTimeS'], seconds)}; "
            f"{s.get('steps') or '?'} steps take {_range(s.get('jobTimeS'), seconds)} and cost "
            f"{_range(s.get('jobCostUsd'), usd)} at {usd(s.get('hourlyUsd'))}/hour"
        )
        if s.get("costPer1MTokensUsd"):
            text += f", {_range(s['costPer1MTokensUsd'], usd)} per 1M tokens"
        out.append(text + " (training steps only: no start-up, compilation or checkpoints).")
    return out


def render(report: dict, charts: list[str]) -> str:
    """report.md of an estimate: the first line says what it is; the table's every row is labelled estimate."""
    names = [s["name"] for s in report["sides"]]
    rows = [
        ("stands for", lambda s: f"{s['kind'].upper()} {s['accelerator']} ({s.get('capacity') or '?'})"),
        ("devices", lambda s: str(s["devices"])),
        ("peak bf16 per device (catalogue)", lambda s: _per_s(s.get("peakFlopsPerS"))),
        ("HBM per device", lambda s: f"{s['hbmGiBPerDevice']} GiB" if s.get("hbmGiBPerDevice") else NOT_MEASURED),
        ("FLOPs per step (the job's)", lambda s: _flops(s.get("flopsPerStep"))),
        ("price", lambda s: f"{usd(s.get('hourlyUsd'))}/hour"),
        (f"estimated step time at {_mfu(report)} MFU", lambda s: _range(s.get("stepTimeS"), seconds)),
        ("estimated job time (steps only)", lambda s: _range(s.get("jobTimeS"), seconds)),
        ("estimated cost per job", lambda s: _range(s.get("jobCostUsd"), usd)),
        ("estimated cost per 1M tokens", lambda s: _range(s.get("costPer1MTokensUsd"), usd)),
    ]
    table = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    table += [f"| {label} | " + " | ".join(cell(s) for s in report["sides"]) + " |" for label, cell in rows]
    parts = [
        f"Estimate, not a measurement: what each side's job would take and cost at {_mfu(report)} of its "
        "hardware's peak (MFU), from the job's FLOPs per step, the catalogue's peaks and the plan's prices. "
        "No hardware ran.",
        "",
        f"# Estimate for stack `{report['stack']}`",
        "",
        *table,
        "",
        *[f"- {line}" for line in lines(report)],
        "",
    ]
    sources = sorted({s["peakSource"] for s in report["sides"] if s.get("peakSource")})
    parts += ["Peaks (dense bf16, per device): " + "; ".join(sources), ""]
    notes = sorted({s["flopsNote"] for s in report["sides"] if s.get("flopsNote")})
    parts += [f"FLOPs per step: {n}." for n in notes] + ([""] if notes else [])
    parts += [f"![{c}]({c})" for c in charts] + ([""] if charts else [])
    if report["problems"]:
        parts += ["## Not estimated", "", *[f"- {p}" for p in report["problems"]], ""]
    return "\n".join(parts)


def chart(report: dict, path: Path) -> None:
    """Cost per job of each side over the MFU range (a bar from the high-MFU to the low-MFU cost)."""
    from .charts import _pyplot, axis_labels, no_math

    plt = _pyplot()
    sides = [s for s in report["sides"] if s.get("jobCostUsd")]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for i, s in enumerate(sides):
        span = s["jobCostUsd"]
        ax.bar(
            i,
            span["high"] - span["low"],
            bottom=span["low"],
            color="#42a5f5" if s["kind"] == "tpu" else "#66bb6a",
            width=0.5,
        )
        ax.annotate(
            no_math(f"{usd(span['low'])} – {usd(span['high'])}"),
            (i, span["high"]),
            ha="center",
            va="bottom",
            fontsize=9,
            xytext=(0, 3),
            textcoords="offset points",
        )
    if not sides:
        ax.text(0.5, 0.5, "nothing estimated", ha="center", va="center", transform=ax.transAxes)
    axis_labels(ax, [f"{s['name']}\n{s['kind'].upper()} {s['accelerator']}" for s in sides])
    ax.set_ylabel("USD per job (estimate, training steps only)")
    ax.set_title(f"ESTIMATE: cost per job at {_mfu(report)} MFU (no hardware ran)")
    ax.margins(y=0.2)
    ax.set_ylim(bottom=0)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(report: dict, out: Path) -> list[str]:
    chart(report, out / CHART)
    return [CHART]
