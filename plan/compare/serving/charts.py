"""The serving report's PNG charts (matplotlib, Agg): the latency distribution per pattern and side (empirical CDFs
of the answered requests), and per side the RUNNING replicas and Serve's target over time against the offered load;
the LLM report's charts draw with the same pieces. A simulated report's titles say so first (charts.title)."""

from __future__ import annotations

from pathlib import Path

from ..charts import pyplot, title

LATENCY_CHART, REPLICAS_CHART = "serve-latency.png", "serve-replicas.png"


def ecdf(ax, side: dict, values: list[float]) -> None:
    """One side's empirical CDF of `values` (sorted), labelled with the side's name and how many there are."""
    if values:
        ax.step(
            values,
            [(i + 1) / len(values) for i in range(len(values))],
            where="post",
            label=f"{side['name']} ({len(values)})",
        )


def replicas_over_load(ax, side: dict, timeline: dict) -> None:
    """Serve's RUNNING replicas and target over time (`timeline`: replicas, offered, windows) against the offered
    requests a second, each pattern's start marked."""
    offered = timeline["offered"]
    load = ax.twinx()
    load.bar([o["t"] + 0.5 for o in offered], [o["rps"] for o in offered], width=1.0, color="#cfd8dc")
    load.set_ylabel("offered requests/s")
    ax.set_zorder(load.get_zorder() + 1)
    ax.patch.set_visible(False)
    points = timeline["replicas"]
    ax.step([p["t"] for p in points], [p["running"] for p in points], where="post", label="replicas RUNNING")
    ax.step(
        [p["t"] for p in points],
        [p["target"] or 0 for p in points],
        where="post",
        linestyle="--",
        label="Serve's target",
    )
    for name, (start, _) in timeline["windows"].items():
        ax.axvline(start, color="#90a4ae", linewidth=0.8)
        ax.text(start, 0.02, f" {name}", transform=ax.get_xaxis_transform(), fontsize=7)
    ax.set_ylabel("replicas")
    ax.set_xlabel("seconds since the service was created")
    ax.set_title(f"{side['name']}: {side['kind'].upper()} {side.get('accelerator') or ''}")
    ax.legend(loc="upper right", fontsize=7)


def save(fig, report: dict, text: str, path: Path) -> None:
    fig.suptitle(title(report, text))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot().close(fig)


def latency_chart(report: dict, path: Path) -> None:
    names = list(report["patterns"])
    fig, axes = pyplot().subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for side in report["serving"]:
            ecdf(ax, side, side["latenciesMs"].get(name) or [])
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("latency from scheduled send (ms)")
        ax.set_ylabel("fraction of answered requests")
        ax.legend(fontsize=7)
    save(fig, report, "Latency distribution per pattern", path)


def replicas_chart(report: dict, path: Path) -> None:
    sides = report["serving"]
    fig, axes = pyplot().subplots(len(sides), 1, figsize=(9, 2.8 * len(sides)), squeeze=False)
    for ax, side in zip(axes[:, 0], sides):
        replicas_over_load(ax, side, side["timeline"])
    save(fig, report, "Replicas and offered load over time", path)


def draw(report: dict, out: Path) -> list[str]:
    if not report["serving"]:
        return []
    latency_chart(report, out / LATENCY_CHART)
    replicas_chart(report, out / REPLICAS_CHART)
    return [LATENCY_CHART, REPLICAS_CHART]
