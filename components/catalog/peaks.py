"""What each accelerator can do at most: peak dense bf16 FLOP/s and HBM per TPU chip or GPU, each from its maker's
primary source. The comparison's MFU (model FLOPs utilisation) divides what a job reached by these.

Dense, not sparse: NVIDIA's data sheets print Tensor Core figures "with sparsity" and say the dense figure is half of
it, so each GPU row below is half the data sheet's bf16 figure. A TPU's peak is per chip (JAX shows one device per
chip on v4, v5e, v5p and v6e).
"""

from __future__ import annotations

from dataclasses import dataclass

from .tpu import CatalogError

__all__ = ["Peak", "TPU_PEAKS", "GPU_PEAKS", "INFERENCE_CLASS", "peak"]

GB, GIB = 10**9, 2**30


@dataclass(frozen=True)
class Peak:
    """One chip's or one GPU's limit."""

    bf16_flops_per_s: float  # dense bf16 matrix arithmetic
    hbm_bytes: int  # the chip's or GPU's own memory (HBM, GDDR6 on the L4)
    source: str  # where both figures are printed

    @property
    def hbm_gib(self) -> float:
        return self.hbm_bytes / GIB


_TPU_ARCH = "https://cloud.google.com/tpu/docs/"
TPU_PEAKS: dict[str, Peak] = {
    # "Peak compute per chip 275 teraflops (bf16 or int8)", "HBM2 capacity and bandwidth 32 GiB, 1200 GBps"
    "v4": Peak(275e12, 32 * GIB, _TPU_ARCH + "v4 (System architecture)"),
    # "Peak compute per chip (bf16) 197 TFLOPs", "HBM capacity per chip 16 GB"
    "v5e": Peak(197e12, 16 * GB, _TPU_ARCH + "v5e (System architecture)"),
    # "Peak compute per chip (bf16) 459 TFLOPs", "HBM2e capacity and bandwidth 95GB, 2765 GBps"
    "v5p": Peak(459e12, 95 * GB, _TPU_ARCH + "v5p (System architecture)"),
    # "Peak compute per chip (bf16) 918 TFLOPs", "HBM capacity per chip 32 GB"
    "v6e": Peak(918e12, 32 * GB, _TPU_ARCH + "v6e (System architecture)"),
    # "Peak compute per chip (BF16) (TFLOPs) 2307", "HBM capacity per chip (GiB) 192"
    "tpu7x": Peak(2307e12, 192 * GIB, _TPU_ARCH + "tpu7x (System architecture)"),
}

_NVIDIA = "https://www.nvidia.com/"
GPU_PEAKS: dict[str, Peak] = {
    # L4 data sheet: "BF16 Tensor Core 242 teraFLOPS*" (* with sparsity), "GPU memory 24GB" (GDDR6: the L4's memory
    # is not HBM; hbm_bytes holds the GPU's memory).
    "nvidia-l4": Peak(121e12, 24 * GB, _NVIDIA + "en-us/data-center/l4/ (NVIDIA L4 Tensor Core GPU data sheet)"),
    # A100 data sheet: "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS*" (* with sparsity), "GPU Memory 40GB HBM2".
    "nvidia-tesla-a100": Peak(
        312e12,
        40 * GB,
        _NVIDIA + "content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    ),
    # Same data sheet, A100 80GB SXM: "GPU Memory 80GB HBM2e", the same Tensor Core figures.
    "nvidia-a100-80gb": Peak(
        312e12,
        80 * GB,
        _NVIDIA + "content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    ),
    # H100 data sheet, H100 SXM: "BFLOAT16 Tensor Core 1,979 teraFLOPS*" ("* With sparsity"), "GPU memory 80GB".
    "nvidia-h100-80gb": Peak(
        989.5e12, 80 * GB, _NVIDIA + "en-us/data-center/h100/ (NVIDIA H100 Tensor Core GPU data sheet, H100 SXM)"
    ),
    # A3 Mega carries the same H100 SXM 80GB GPU (Compute Engine accelerator-optimized machines: A3 Mega).
    "nvidia-h100-mega-80gb": Peak(
        989.5e12,
        80 * GB,
        _NVIDIA + "en-us/data-center/h100/ (H100 SXM); "
        "https://cloud.google.com/compute/docs/"
        "accelerator-optimized-machines (A3 Mega)",
    ),
    # H200 data sheet, H200 SXM: "BFLOAT16 Tensor Core 1,979 TFLOPS" (with sparsity), "GPU Memory 141GB".
    "nvidia-h200-141gb": Peak(989.5e12, 141 * GB, _NVIDIA + "en-us/data-center/h200/ (NVIDIA H200 data sheet)"),
    # HGX B200 data sheet: "FP16/BF16 Tensor Core 36 PFLOPS" for 8 GPUs with sparsity (4.5 per GPU), "Total memory
    # 1.4TB" for 8 (180 GB per GPU, as Compute Engine's A4 row lists).
    "nvidia-b200": Peak(2250e12, 180 * GB, _NVIDIA + "en-us/data-center/hgx/ (HGX B200 data sheet)"),
}


# GPUs made for serving rather than training: a comparison side on one says so. The L4: "The L4 GPU type is useful
# for running machine learning inference pipelines" (https://cloud.google.com/dataflow/docs/gpu/use-l4-gpus).
INFERENCE_CLASS = frozenset({"nvidia-l4"})


def peak(kind: str, name: str) -> Peak:
    """The peak of a TPU generation (`kind` "tpu") or a GPU accelerator (`kind` "gpu"); CatalogError names the ones the
    catalogue holds."""
    table = TPU_PEAKS if kind == "tpu" else GPU_PEAKS if kind == "gpu" else None
    if table is None:
        raise CatalogError(f"kind {kind!r} is not tpu or gpu")
    try:
        return table[name]
    except KeyError:
        raise CatalogError(f"no peak for {kind} {name!r}; known: {', '.join(table)}") from None
