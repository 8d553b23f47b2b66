"""The report's PNG charts, drawn with matplotlib (Agg, no display): where each side's time goes (stacked bars), the
distribution of step times (compiled steps left out), and the cost per job. Each chart draws what was measured; a side
without a number is left out of that chart and says so in its label."""

from __future__ import annotations

from pathlib import Path

from ray_tpu_gke import bench

from .markdown import PART_NAMES

TIME_CHART, STEPS_CHART, COST_CHART = "time.png", "step-times.png", "cost.png"
COLOURS = {
    "capacityWaitS": "#9e9e9e",
    "podStartS": "#bcaaa4",
    "rayStartS": "#90caf9",
    "compiledStepsS": "#ffb74d",
    "stepsS": "#66bb6a",
    "checkpointsS": "#ba68c8",
    "recoveryS": "#e57373",
    "otherS": "#e0e0e0",
}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, on machines without a display
    import matplotlib.pyplot as plt

    return plt


def _label(side: dict) -> str:
    suffix = "\n(simulated)" if side.get("simulated") else ""
    return f"{side['name']}\n{side['kind'].upper()} {side['accelerator']}{suffix}"


LABEL_WIDTH = 18  # characters per line of an axis label: four sides' labels fit side by side at 110 dpi


def axis_labels(ax, labels: list[str]) -> None:
    """Category labels on the x axis that never overlap: each wrapped to a few short lines, and turned when there are
    more than three."""
    import textwrap

    wrapped = ["\n".join(textwrap.fill(part, LABEL_WIDTH) for part in label.split("\n")) for label in labels]
    many = len(labels) > 3
    ax.set_xticks(
        range(len(labels)),
        wrapped,
        rotation=30 if many else 0,
        ha="right" if many else "center",
        fontsize=8 if many else 9,
    )


def no_math(text: str) -> str:
    """Text with its dollar signs shown as such (matplotlib reads a pair of them as mathematics)."""
    return text.replace("$", r"\$")


def title(report: dict, text: str) -> str:
    """A chart's title; a simulated report's says so first."""
    return f"SIMULATED (CPU stand-in, not hardware speed or cost): {text}" if report.get("simulated") else text


def time_chart(report: dict, path: Path) -> None:
    plt = pyplot()
    sides = report["sides"]
    fig, ax = plt.subplots(figsize=(9, 1.2 + 1.1 * len(sides)))
    labels = []
    for row, side in enumerate(sides):
        parts = side.get("timeBreakdownS")
        labels.append(_label(side) if parts else f"{side['name']}: not measured")
        left = 0.0
        for name in PART_NAMES:
            width = (parts or {}).get(name)
            if not width:
                continue
            ax.barh(row, width, left=left, color=COLOURS[name], label=PART_NAMES[name], edgecolor="white")
            left += width
    ax.set_yticks(range(len(sides)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("seconds of wall time")
    ax.set_title(title(report, "where each side's time goes"), fontsize=10)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    if unique:
        ax.legend(
            unique.values(),
            unique.keys(),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.25 - 0.05 * len(sides)),
            ncol=4,
            frameon=False,
        )
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def steady_step_times(side: dict) -> list[float]:
    return bench.steady(side.get("stepTimesS") or [], side.get("compiledSteps") or [])


def steps_chart(report: dict, path: Path) -> None:
    """Box plots of the steady steps' times in milliseconds, with each side's p50 and p95 marked."""
    plt = pyplot()
    sides = [s for s in report["sides"] if steady_step_times(s)]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if sides:
        data = [[t * 1000 for t in steady_step_times(s)] for s in sides]
        ax.boxplot(data, positions=range(len(sides)), showfliers=True)
        axis_labels(ax, [_label(s) for s in sides])
        for i, side in enumerate(sides, start=1):
            stats = side.get("stepTimeS") or {}
            for key, marker in (("p50", "o"), ("p95", "^")):
                if key in stats:
                    ax.plot(i - 1, stats[key] * 1000, marker, color="#d84315", label=key if i == 1 else None)
        ax.legend(frameon=False)
    else:
        ax.text(0.5, 0.5, "no step times measured", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("milliseconds per step (compiled steps left out)")
    ax.set_title(title(report, "step-time distribution"), fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def cost_chart(report: dict, path: Path) -> None:
    plt = pyplot()
    sides = report["sides"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    values = [s.get("costPerJobUsd") for s in sides]
    ax.bar(
        range(len(sides)),
        [v or 0 for v in values],
        color=["#42a5f5" if s["kind"] == "tpu" else "#66bb6a" for s in sides],
    )
    for i, (side, value) in enumerate(zip(sides, values)):
        per_k = side.get("costPer1kStepsUsd")
        text = "not measured" if value is None else f"${value:,.4f}" + (f"\n${per_k:,.4f}/1k steps" if per_k else "")
        ax.annotate(
            no_math(text),
            (i, value or 0),
            ha="center",
            va="bottom",
            fontsize=9,
            xytext=(0, 3),
            textcoords="offset points",
        )
    axis_labels(ax, [_label(s) for s in sides])
    ax.set_ylabel("USD per job (plan price x billed node time)")
    ax.set_title(title(report, "cost per job"), fontsize=10)
    ax.margins(y=0.25)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(report: dict, out: Path) -> list[str]:
    """Every chart into `out`; the file names written."""
    time_chart(report, out / TIME_CHART)
    steps_chart(report, out / STEPS_CHART)
    cost_chart(report, out / COST_CHART)
    return [TIME_CHART, STEPS_CHART, COST_CHART]
