"""The LLM report's PNG charts (matplotlib, Agg): TTFT and ITL distributions per side (empirical CDFs of every
answered request and chunk), the sweep's throughput-latency curve (output tokens/s against TTFT and TPOT p50), and
per side Serve's replicas and target against the offered load. A simulated report's titles say so first."""

from __future__ import annotations

from pathlib import Path

from ..serving.charts import ecdf, pyplot, replicas_over_load, save

DISTRIBUTIONS, CURVE, REPLICAS = "llm-ttft-itl.png", "llm-throughput-latency.png", "llm-replicas.png"


def distributions(report: dict, path: Path) -> None:
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.8))
    for ax, key, label in ((axes[0], "ttft", "time to first token (ms)"), (axes[1], "itl", "inter-token latency (ms)")):
        for side in report["llm"]:
            ecdf(ax, side, side["samplesMs"][key])
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("fraction")
        ax.legend(fontsize=7)
    save(fig, report, "TTFT and ITL distributions", path)


def curve(report: dict, path: Path) -> None:
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.8))
    for side in report["llm"]:
        points = side.get("sweep") or []
        for ax, key in ((axes[0], "ttftMs"), (axes[1], "tpotMs")):
            shown = [p for p in points if p[key]["p50"] is not None]
            ax.plot(
                [p["outputTokensPerS"] for p in shown], [p[key]["p50"] for p in shown], marker="o", label=side["name"]
            )
    for ax, label in ((axes[0], "TTFT p50 (ms)"), (axes[1], "TPOT p50 (ms)")):
        ax.set_xlabel("output tokens/s")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    save(fig, report, "Throughput against latency, the sweep's rates", path)


def replicas(report: dict, path: Path) -> None:
    shown = [s for s in report["llm"] if s.get("autoscale")]
    fig, axes = pyplot().subplots(len(shown), 1, figsize=(9, 2.8 * len(shown)), squeeze=False)
    for ax, side in zip(axes[:, 0], shown):
        replicas_over_load(ax, side, side["autoscale"])
    save(fig, report, "Replicas against offered load", path)


def draw(report: dict, out: Path) -> list[str]:
    if not report["llm"]:
        return []
    drawn = [DISTRIBUTIONS, CURVE]
    distributions(report, out / DISTRIBUTIONS)
    curve(report, out / CURVE)
    if any(s.get("autoscale") for s in report["llm"]):
        replicas(report, out / REPLICAS)
        drawn.append(REPLICAS)
    return drawn
