"""The LLM report's PNG charts (matplotlib, Agg): TTFT and ITL distributions per side (empirical CDFs of every
answered request and chunk), the sweep's throughput-latency curve (output tokens/s against TTFT and TPOT p50), and
per side Serve's replicas and target against the offered load. Titles say "simulated" when the sides were."""

from __future__ import annotations

from pathlib import Path

from ..serving.charts import _pyplot, _suffix

DISTRIBUTIONS, CURVE, REPLICAS = "llm-ttft-itl.png", "llm-throughput-latency.png", "llm-replicas.png"


def distributions(report: dict, path: Path) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key, label in ((axes[0], "ttft", "time to first token (ms)"), (axes[1], "itl", "inter-token latency (ms)")):
        for side in report["llm"]:
            values = side["samplesMs"][key]
            if values:
                ax.step(
                    values,
                    [(i + 1) / len(values) for i in range(len(values))],
                    where="post",
                    label=f"{side['name']} ({len(values)})",
                )
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("fraction")
        ax.legend(fontsize=7)
    fig.suptitle("TTFT and ITL distributions" + _suffix(report))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def curve(report: dict, path: Path) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
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
    fig.suptitle("Throughput against latency, the sweep's rates" + _suffix(report))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def replicas(report: dict, path: Path) -> None:
    plt = _pyplot()
    shown = [s for s in report["llm"] if s.get("autoscale")]
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 2.8 * len(shown)), squeeze=False)
    for ax, side in zip(axes[:, 0], shown):
        scale = side["autoscale"]
        load = ax.twinx()
        load.bar(
            [o["t"] + 0.5 for o in scale["offered"]], [o["rps"] for o in scale["offered"]], width=1.0, color="#cfd8dc"
        )
        load.set_ylabel("offered requests/s")
        ax.set_zorder(load.get_zorder() + 1)
        ax.patch.set_visible(False)
        points = scale["replicas"]
        ax.step([p["t"] for p in points], [p["running"] for p in points], where="post", label="replicas RUNNING")
        ax.step(
            [p["t"] for p in points],
            [p["target"] or 0 for p in points],
            where="post",
            linestyle="--",
            label="Serve's target",
        )
        for name, (start, _) in scale["windows"].items():
            ax.axvline(start, color="#90a4ae", linewidth=0.8)
            ax.text(start, 0.02, f" {name}", transform=ax.get_xaxis_transform(), fontsize=7)
        ax.set_ylabel("replicas")
        ax.set_xlabel("seconds since the service was created")
        ax.set_title(f"{side['name']}: {side['kind'].upper()} {side.get('accelerator') or ''}")
        ax.legend(loc="upper right", fontsize=7)
    fig.suptitle("Replicas against offered load" + _suffix(report))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
