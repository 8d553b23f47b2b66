"""Whether a declared model trains on a side's devices: its parameters, gradients and optimizer state, and its
activations at the batch, against the memory of one device (the catalogue's HBM per chip or GPU). Pure.

- Model states, mixed-precision Adam: 16 bytes per parameter (16-bit parameters and gradients, 2 + 2 bytes; fp32
  master copy, momentum and variance, 4 + 4 + 4): Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", arXiv 1910.02054, section 3.1 ("2Ψ + 2Ψ + KΨ ... K = 12").
- Activations of one transformer layer, 16-bit, no recomputation and no tensor or sequence parallelism:
  s·b·h·(34 + 5·a·s/h) bytes (s sequence length, b sequences, h hidden size, a attention heads): Korthikanti et al.,
  "Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198, section 4.1, equation (1).
  The embeddings and the output logits are not counted.

Data parallelism gives each device batch/devices sequences (rounded up). Every device holding the whole model states
is plain data parallelism (DDP, a replicated JAX mesh); sharding them n ways (FSDP, ZeRO-3, a sharded mesh axis)
divides them by n. The verdict is against the whole of a device's memory, before what the framework and its
allocator keep for themselves.
"""

from __future__ import annotations

import math
from typing import Any, Optional

GIB = 2**30
STATE_BYTES_PER_PARAMETER = 16  # ZeRO section 3.1, mixed-precision Adam (above)
# Korthikanti et al. equation (1): s·b·h·(34 + 5·a·s/h) bytes per layer.
ACTIVATION_BYTES_CONSTANT, ACTIVATION_ATTENTION_FACTOR = 34, 5

FITS, SHARDED, DOES_NOT_FIT = "fits", "needs sharding", "does not fit"


def activation_bytes(*, layers: int, seq_len: int, sequences: int, d_model: int, heads: int) -> float:
    """Activations of `sequences` sequences through every layer (Korthikanti et al. equation (1), per layer)."""
    s, b, h, a = seq_len, sequences, d_model, heads
    return layers * s * b * h * (ACTIVATION_BYTES_CONSTANT + ACTIVATION_ATTENTION_FACTOR * a * s / h)


def fit(model: Optional[dict], batch: Optional[int], devices: int, hbm_bytes: Optional[float]) -> Optional[dict]:
    """The verdict for one side: `fits` (every device holds the whole model states and its share of the batch's
    activations), `needs sharding` over `shardOver` devices (the smallest n at which states/n and the activations
    fit, n at most the side's devices), or `does not fit` (not even sharded over every device of the side, or the
    activations alone are more than a device holds). None without a declared parameter count or a device memory."""
    declared: dict = model or {}
    parameters = declared.get("parameters")
    if not _positive(parameters) or hbm_bytes is None or not _positive(hbm_bytes):
        return None
    states = STATE_BYTES_PER_PARAMETER * float(parameters)  # type: ignore[arg-type]
    per_device = -(-int(batch) // devices) if batch is not None and _positive(batch) else None
    shape = [declared.get(k) for k in ("layers", "seqLen", "dModel", "heads")]
    activations = None
    if per_device is not None and all(_positive(v) for v in shape):
        layers, seq_len, d_model, heads = (int(v) for v in shape)  # type: ignore[arg-type]
        activations = activation_bytes(
            layers=layers, seq_len=seq_len, sequences=per_device, d_model=d_model, heads=heads
        )
    out: dict[str, Any] = {
        "parameters": float(parameters),  # type: ignore[arg-type]
        "statesGiB": states / GIB,
        "sequencesPerDevice": per_device,
        "activationsGiB": None if activations is None else activations / GIB,
        "hbmGiBPerDevice": hbm_bytes / GIB,
        "devices": devices,
        "basis": "16 bytes per parameter (mixed-precision Adam, ZeRO section 3.1) and per layer s*b*h*(34+5*a*s/h) "
        "bytes of activations (Korthikanti et al. 2022, equation 1), against one device's whole memory",
    }
    if activations is None:
        out["activationsNote"] = "activations not counted: declare layers, dModel, heads, seqLen and the batch"
    used = activations or 0.0
    if states + used <= hbm_bytes:
        return {**out, "verdict": FITS, "shardOver": 1, "perDeviceGiB": (states + used) / GIB}
    if used >= hbm_bytes:
        return {**out, "verdict": DOES_NOT_FIT, "shardOver": None, "perDeviceGiB": used / GIB}
    share = states / (hbm_bytes - used)
    if not math.isfinite(share):  # beyond 64-bit floats: the estimate refuses its inputs (estimate.non_finite)
        return {**out, "verdict": DOES_NOT_FIT, "shardOver": None, "perDeviceGiB": share}
    need = math.ceil(share)
    if need <= devices:
        return {**out, "verdict": SHARDED, "shardOver": need, "perDeviceGiB": (states / need + used) / GIB}
    return {**out, "verdict": DOES_NOT_FIT, "shardOver": need, "perDeviceGiB": (states / devices + used) / GIB}


def sentence(name: str, verdict: Optional[dict]) -> str:
    """The verdict in words, with the numbers behind it."""
    if verdict is None:
        return f"{name}: memory fit not judged (no model declared: --model parameters=N,...)"
    per = verdict["sequencesPerDevice"]
    acts = (
        f"{verdict['activationsGiB']:.3g} GiB of activations at {per} sequence(s) per device"
        if verdict["activationsGiB"] is not None
        else "activations not counted"
    )
    states = f"{verdict['statesGiB']:.3g} GiB of parameters, gradients and optimizer state"
    hbm = f"{verdict['hbmGiBPerDevice']:.3g} GiB per device"
    if verdict["verdict"] == FITS:
        return f"{name}: fits ({states} and {acts} in {hbm}, every device holding the whole model)"
    if verdict["verdict"] == SHARDED:
        return (
            f"{name}: needs sharding over {verdict['shardOver']} devices ({states} do not fit beside {acts} in "
            f"{hbm}; split {verdict['shardOver']} ways, FSDP or ZeRO-3, they do)"
        )
    why = (
        f"the activations alone take {acts.split(' of ')[0]}; a smaller batch per device or activation "
        "recomputation would bring them down"
        if verdict["shardOver"] is None
        else f"even split over all {verdict['devices']} devices it would need {verdict['shardOver']}"
    )
    return f"{name}: does not fit ({states}, {acts}, {hbm}: {why})"


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
