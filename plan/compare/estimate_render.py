"""An estimate's words and chart: every line and the chart's title say "estimate", with the MFU range it assumes.
Pure but for the chart file."""

from __future__ import annotations

from pathlib import Path

from . import memory
from .markdown import NOT_MEASURED, seconds, usd, usd_significant

CHART = "estimate.png"


def _range(span, show) -> str:
    return NOT_MEASURED if not span else f"{show(span['low'])} – {show(span['high'])}"


def _flops(value) -> str:
    return NOT_MEASURED if not value else f"{value:.3g}"


def _per_s(value) -> str:
    return NOT_MEASURED if not value else f"{value / 1e12:,.0f} TFLOP/s"


def _mfu(span: dict) -> str:
    return f"{span['low']:.0%}–{span['high']:.0%}"


def _flops_cell(s: dict) -> str:
    text = _flops(s.get("flopsPerStep"))
    check = s.get("flopsCheck")
    if check:
        text += f" (analytic {check['analyticFlopsPerStep']:.3g}, {check['gap']:+.1%}"
        text += f": OFF BY MORE THAN {check['tolerance']:.0%})" if check["flagged"] else ")"
    elif s.get("flopsSource", "") and str(s["flopsSource"]).startswith("analytic"):
        text += " (analytic)"
    return text


def _fit_cell(s: dict) -> str:
    fit = s.get("memoryFit")
    if not fit:
        return "not judged (no model declared)"
    if fit["verdict"] == memory.SHARDED:
        return f"needs sharding over {fit['shardOver']} devices ({fit['perDeviceGiB']:.3g} GiB per device)"
    return f"{fit['verdict']} ({fit['perDeviceGiB']:.3g} GiB per device)"


def break_even_sentences(report: dict) -> list[str]:
    """The lead's question: at what share of the other side's MFU a side costs less per job."""
    out = []
    for pair in report.get("breakEven") or []:
        a, b = pair["side"], pair["against"]
        ca, cb = pair["costPerPeakEflopUsd"]
        spans = {s["name"]: s["mfuRange"] for s in report["sides"]}
        at = {
            "cheaper": f"at the MFU ranges given ({_mfu(spans[a])} against {_mfu(spans[b])}) it is cheaper throughout",
            "dearer": f"at the MFU ranges given ({_mfu(spans[a])} against {_mfu(spans[b])}) it is dearer throughout",
            "either": f"the MFU ranges given ({_mfu(spans[a])} against {_mfu(spans[b])}) allow either",
        }[pair["atRanges"]]
        out.append(
            f"Break-even (estimate): {a} costs less per job than {b} while its MFU is at least "
            f"{pair['mfuRatio']:.0%} of {b}'s ({usd_significant(ca)} against {usd_significant(cb)} per 10^18 FLOPs "
            f"at the peak, from the plan's prices and the catalogue's bf16 dense peaks); {at}."
        )
    return out


def lines(report: dict) -> list[str]:
    """One sentence per side, each saying it is an estimate and at what MFU; the break-even and memory-fit
    sentences."""
    out = []
    for s in report["sides"]:
        head = (
            f"Estimate, {s['name']} ({s['kind'].upper()} {s['accelerator']}, {s['devices']} devices at "
            f"{_per_s(s.get('peakFlopsPerS'))} peak bf16 dense each), at {_mfu(s['mfuRange'])} MFU:"
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
            text += f", {_range(s['costPer1MTokensUsd'], usd_significant)} per 1M tokens"
        out.append(text + " (training steps only: no start-up, compilation or checkpoints).")
    out += break_even_sentences(report)
    out += [f"Memory (estimate): {memory.sentence(s['name'], s.get('memoryFit'))}." for s in report["sides"]]
    return out


def render(report: dict, charts: list[str]) -> str:
    """report.md of an estimate: the first line says what it is; the table's every row is labelled estimate."""
    names = [s["name"] for s in report["sides"]]
    rows = [
        ("stands for", lambda s: f"{s['kind'].upper()} {s['accelerator']} ({s.get('capacity') or '?'})"),
        ("devices", lambda s: str(s["devices"])),
        ("peak per device (bf16 dense, catalogue)", lambda s: _per_s(s.get("peakFlopsPerS"))),
        ("HBM per device", lambda s: f"{s['hbmGiBPerDevice']} GiB" if s.get("hbmGiBPerDevice") else NOT_MEASURED),
        ("memory fit of the model (estimate)", _fit_cell),
        ("FLOPs per step (the job's; analytic)", _flops_cell),
        ("price", lambda s: f"{usd(s.get('hourlyUsd'))}/hour"),
        ("cost per 10^18 FLOPs at the peak", lambda s: usd_significant(s.get("costPerPeakEflopUsd"))),
        ("MFU assumed", lambda s: _mfu(s["mfuRange"])),
        ("estimated step time", lambda s: _range(s.get("stepTimeS"), seconds)),
        ("estimated job time (steps only)", lambda s: _range(s.get("jobTimeS"), seconds)),
        ("estimated cost per job", lambda s: _range(s.get("jobCostUsd"), usd)),
        ("estimated cost per 1M tokens", lambda s: _range(s.get("costPer1MTokensUsd"), usd_significant)),
    ]
    table = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    table += [f"| {label} | " + " | ".join(cell(s) for s in report["sides"]) + " |" for label, cell in rows]
    parts = [
        "Estimate, not a measurement: what each side's job would take and cost at the MFU range assumed for it "
        "(its share of the hardware's bf16 dense peak), from the job's FLOPs per step, the catalogue's peaks and "
        "the plan's prices. No hardware ran.",
        "",
        f"# Estimate for stack `{report['stack']}`",
        "",
        *table,
        "",
        *[f"- {line}" for line in lines(report)],
        "",
    ]
    sources = sorted({s["peakSource"] for s in report["sides"] if s.get("peakSource")})
    parts += ["Peaks (bf16 dense, per device): " + "; ".join(sources), ""]
    fits = sorted({s["memoryFit"]["basis"] for s in report["sides"] if s.get("memoryFit")})
    parts += [f'Memory fit: {basis} (docs/compare.md, "Before any hardware").' for basis in fits]
    parts += [""] if fits else []
    notes = sorted({s["flopsNote"] for s in report["sides"] if s.get("flopsNote")})
    parts += [f"FLOPs per step: {n}." for n in notes] + ([""] if notes else [])
    parts += [f"![{c}]({c})" for c in charts] + ([""] if charts else [])
    if report["problems"]:
        parts += ["## Not estimated", "", *[f"- {p}" for p in report["problems"]], ""]
    return "\n".join(parts)


def chart(report: dict, path: Path) -> None:
    """Cost per job of each side over the MFU range (a bar from the high-MFU to the low-MFU cost)."""
    from .charts import axis_labels, no_math, pyplot

    plt = pyplot()
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
    ax.set_title("ESTIMATE: cost per job over each side's assumed MFU range (no hardware ran)")
    ax.margins(y=0.2)
    ax.set_ylim(bottom=0)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(report: dict, out: Path) -> list[str]:
    chart(report, out / CHART)
    return [CHART]
