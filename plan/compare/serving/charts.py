"""The serving report's PNG charts (matplotlib, Agg): the latency distribution per pattern and side (empirical CDFs
of the answered requests), and per side the RUNNING replicas and Serve's target over time against the offered load.
Titles say "simulated" when the sides were."""

from __future__ import annotations

from pathlib import Path

LATENCY_CHART, REPLICAS_CHART = "serve-latency.png", "serve-replicas.png"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _suffix(report: dict) -> str:
    return " (simulated: CPU standing in)" if report["simulated"] else ""


def latency_chart(report: dict, path: Path) -> None:
    plt = _pyplot()
    names = list(report["patterns"])
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for side in report["serving"]:
            values = side["latenciesMs"].get(name) or []
            if values:
                ax.step(
                    values,
                    [(i + 1) / len(values) for i in range(len(values))],
                    where="post",
                    label=f"{side['name']} ({len(values)})",
                )
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("latency from scheduled send (ms)")
        ax.set_ylabel("fraction of answered requests")
        ax.legend(fontsize=7)
    fig.suptitle("Latency distribution per pattern" + _suffix(report))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def replicas_chart(report: dict, path: Path) -> None:
    plt = _pyplot()
    sides = report["serving"]
    fig, axes = plt.subplots(len(sides), 1, figsize=(9, 2.8 * len(sides)), squeeze=False)
    for ax, side in zip(axes[:, 0], sides):
        offered = side["timeline"]["offered"]
        load = ax.twinx()
        load.bar(
            [o["t"] + 0.5 for o in offered],
            [o["rps"] for o in offered],
            width=1.0,
            color="#cfd8dc",
            label="offered requests/s",
        )
        load.set_ylabel("offered requests/s")
        ax.set_zorder(load.get_zorder() + 1)
        ax.patch.set_visible(False)
        points = side["timeline"]["replicas"]
        ax.step([p["t"] for p in points], [p["running"] for p in points], where="post", label="replicas RUNNING")
        ax.step(
            [p["t"] for p in points],
            [p["target"] or 0 for p in points],
            where="post",
            linestyle="--",
            label="Serve's target",
        )
        for name, (start, _) in side["timeline"]["windows"].items():
            ax.axvline(start, color="#90a4ae", linewidth=0.8)
            ax.text(start, 0.02, f" {name}", transform=ax.get_xaxis_transform(), fontsize=7)
        ax.set_ylabel("replicas")
        ax.set_xlabel("seconds since the service was created")
        ax.set_title(f"{side['name']}: {side['kind'].upper()} {side['accelerator']}")
        ax.legend(loc="upper right", fontsize=7)
    fig.suptitle("Replicas and offered load over time" + _suffix(report))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(report: dict, out: Path) -> list[str]:
    if not report["serving"]:
        return []
    latency_chart(report, out / LATENCY_CHART)
    replicas_chart(report, out / REPLICAS_CHART)
    return [LATENCY_CHART, REPLICAS_CHART]
