"""The analytic model FLOPs of one training step of a dense decoder-only transformer, the yardstick a job's own count
(XLA's cost analysis, PyTorch's FlopCounterMode, a formula of its own) is checked against.

Counted as MaxText counts them (google/maxtext MaxText/maxtext_utils.py `calculate_tflops_training_per_device`, the
non-Megatron branch, commit 01c78bbf19bd0e62f41575024658348324047deb; PaLM, arXiv 2204.02311 appendix B):

    6 x parameters x tokens                                  the weights, forward (2) and backward (4)
  + 12 x layers x heads x head_dim x seq_len^2 x sequences / 2   attention's two matmuls, forward and backward,
                                                             halved because a causal mask skips half of them

A counter of the executed matmuls (PyTorch's FlopCounterMode on the math attention backend, XLA's cost analysis of a
masked attention) sees the full attention, not the half: `full_attention` gives that count too, and a job's count
is read against both."""

from __future__ import annotations

from typing import Any, Mapping, Optional

# The relative gap between a job's FLOPs per step and the analytic count above which the report flags it.
GAP_TOLERANCE = 0.10


def analytic(
    *,
    parameters: float,
    tokens: float,
    layers: int = 0,
    heads: int = 0,
    head_dim: int = 0,
    seq_len: int = 0,
    causal: bool = True,
) -> dict:
    """The step's FLOPs: `weights` (6·N·tokens), `attention` (as a causal mask leaves it, or full), `total`, and
    `fullAttentionTotal` (the same with the whole attention, as a counter of dense matmuls sees it)."""
    weights = 6.0 * parameters * tokens
    sequences = tokens / seq_len if seq_len else 0.0
    full = 12.0 * layers * heads * head_dim * seq_len**2 * sequences
    attention = full / 2 if causal else full
    return {
        "weights": weights,
        "attention": attention,
        "total": weights + attention,
        "fullAttentionTotal": weights + full,
        "causal": causal,
    }


def from_model(model: Optional[Mapping[str, Any]], tokens: Optional[float]) -> Optional[dict]:
    """The analytic count for a model as a result document's `model` declares it (`parameters`; for attention
    `layers`, `heads`, `seqLen` and `headDim` or `dModel`; `causal`, default true), at `tokens` per step; None where
    the model declares no parameter count or the step no tokens."""
    if not isinstance(model, Mapping) or not _positive(model.get("parameters")) or not _positive(tokens):
        return None
    heads = int(model.get("heads") or 0)
    head_dim = int(model.get("headDim") or 0) or (int(model.get("dModel") or 0) // heads if heads else 0)
    return analytic(
        parameters=float(model["parameters"]),
        tokens=float(tokens),  # type: ignore[arg-type]
        layers=int(model.get("layers") or 0),
        heads=heads,
        head_dim=head_dim,
        seq_len=int(model.get("seqLen") or 0),
        causal=model.get("causal", True) is not False,
    )


def cross_check(job_flops: Optional[float], count: Optional[dict], tolerance: float = GAP_TOLERANCE) -> Optional[dict]:
    """The job's FLOPs per step against the analytic count: the relative gap (negative: the job counts fewer), and
    whether it is over `tolerance` (`flagged`). None without both numbers."""
    if not _positive(job_flops) or count is None:
        return None
    gap = (float(job_flops) - count["total"]) / count["total"]  # type: ignore[arg-type]
    full_gap = (float(job_flops) - count["fullAttentionTotal"]) / count["fullAttentionTotal"]  # type: ignore[arg-type]
    return {
        "jobFlopsPerStep": float(job_flops),  # type: ignore[arg-type]
        "analyticFlopsPerStep": count["total"],
        "weightsFlops": count["weights"],
        "attentionFlops": count["attention"],
        "fullAttentionFlopsPerStep": count["fullAttentionTotal"],
        "causal": count["causal"],
        "gap": gap,
        "fullAttentionGap": full_gap,
        "tolerance": tolerance,
        "flagged": abs(gap) > tolerance,
        "convention": "6 x parameters x tokens + attention, causal attention halved (MaxText "
        "calculate_tflops_training_per_device)",
    }


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
