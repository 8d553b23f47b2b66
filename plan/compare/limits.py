"""How close a side comes to its hardware's limit: the catalogue's peak per TPU chip or GPU, and the model FLOPs
utilisation (MFU) a step time means.

MFU = model FLOPs of one step (the whole job's, every device's share) / (step time x devices x peak dense bf16 FLOP/s
per device). The devices are those the job ran on (its result document's `devices`), which the report says when they
are not the side's. The FLOPs come from the job (its result document's `flopsPerStep`: XLA's cost analysis of the
compiled step, PyTorch's FlopCounterMode, or declared) and are shown beside the analytic count where the job declares
its model (`ray_tpu_gke.bench.flops`); the peak from components/catalog/peaks.py, with its source.
"""

from __future__ import annotations

from typing import Optional

from ray_tpu_gke import bench, catalog

from .sides import SidePlan

# The precision and kind of the catalogue's peaks (components/catalog/peaks.py: dense, not "with sparsity", bf16).
PEAK_PRECISION = "bf16 dense"


def peak_of(side: SidePlan) -> Optional[catalog.Peak]:
    """The catalogue's peak for one device of the side (a TPU chip of its generation, a GPU of its pool), or None
    where the catalogue has none."""
    name = side.generation if side.kind == "tpu" else side.gpu_accelerator
    try:
        return catalog.peak(side.kind, name or "")
    except catalog.CatalogError:
        return None


def mfu(
    flops_per_step: Optional[float], step_s: Optional[float], devices: int, peak_flops_per_s: Optional[float]
) -> Optional[float]:
    """The fraction of the devices' peak that `flops_per_step` in `step_s` reaches; None where a number is missing."""
    if not flops_per_step or not step_s or not devices or not peak_flops_per_s:
        return None
    return flops_per_step / (step_s * devices * peak_flops_per_s)


def step_time_at(flops_per_step: float, utilisation: float, devices: int, peak_flops_per_s: float) -> float:
    """The step time at which `flops_per_step` reaches `utilisation` of the devices' peak: MFU solved for the time."""
    return flops_per_step / (utilisation * devices * peak_flops_per_s)


def side_fields(side: SidePlan, result: dict, stats: Optional[dict]) -> dict:
    """The report's fields for how close the side came to its hardware's limit, and its throughput reconciled with its
    step time. `result` is the job's accepted result document, `stats` its steady step-time percentiles.

    Read from the job's result document: `flopsPerStep` (model FLOPs of one whole training step, every device's share
    together; absent when the job declares none), `tokensPerStep` (tokens one step takes in, if the job counts tokens),
    `batchSize` and `examplesPerS` (the job's own figure). MFU is null where the job ran simulated: the CPU stood in for
    the hardware, so the fraction of the hardware's peak means nothing."""
    peak = peak_of(side)
    flops = result.get("flopsPerStep") if isinstance(result.get("flopsPerStep"), (int, float)) else None
    p50 = (stats or {}).get("p50")
    simulated = result.get("simulated") is True
    ran_on = result.get("devices")
    devices = ran_on if isinstance(ran_on, int) and not isinstance(ran_on, bool) and ran_on > 0 else side.devices
    out: dict = {
        "flopsPerStep": flops,
        "peakFlopsPerS": peak.bf16_flops_per_s if peak else None,
        "peakPrecision": PEAK_PRECISION,
        "peakSource": peak.source if peak else None,
        "mfuDevices": devices,
        "sideDevices": side.devices,
        "mfu": None if simulated else mfu(flops, p50, devices, peak.bf16_flops_per_s if peak else None),
    }
    if devices != side.devices:
        out["devicesNote"] = (
            f"the job ran on {devices} device(s), the side stands for {side.devices}: MFU divides by the {devices} it "
            f"ran on; the cost is still the whole side's {side.devices}"
        )
    declared = result.get("model")
    model: dict = declared if isinstance(declared, dict) else {}
    tokens_of_step = result.get("tokensPerStep") or model.get("tokensPerStep")
    check = bench.cross_check(flops, bench.from_model(model, tokens_of_step))
    if check is not None:
        out["flopsCheck"] = check
    tokens = result.get("tokensPerStep") if isinstance(result.get("tokensPerStep"), (int, float)) else None
    if tokens is not None:
        out["tokensPerStep"] = tokens
    batch = result.get("batchSize") if isinstance(result.get("batchSize"), (int, float)) else None
    if p50:
        out["throughput"] = {
            "steadyExamplesPerS": batch / p50 if batch else None,
            "steadyTokensPerS": tokens / p50 if tokens else None,
            "jobExamplesPerS": result.get("examplesPerS"),
            "basis": "steady: batch (or tokens) per step over the median steady step time; job: the job's own "
            "examplesPerS, over the summed time of its last attempt's steps, the compiling step included "
            "(workloads.train), so it is lower by what compiling took",
        }
    return out
