"""What Autopilot accepts per pod: the CPU and memory range of each compute class this project's pods may run in,
and the GPU counts per pod of each accelerator. Data only; the rules that read it are admission's."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ComputeClassRange",
    "AUTOPILOT_CLASSES",
    "DEFAULT_CLASS",
    "AUTOPILOT_GPU_COUNTS",
    "AUTOPILOT_SMALL_H100_MIN_VERSION",
]


@dataclass(frozen=True)
class ComputeClassRange:
    name: str
    min_mcpu: int
    max_mcpu: int
    max_memory_mb: int  # megabytes as the source counts them: a request's bytes / 10^6 (calculator.go)


# GoogleCloudPlatform/autopilot-cost-calculator config.ini [limits] (commit 4fd775d, 2025-07-21; "# https://cloud.
# google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests"): generalpurpose_mcpu_min 50,
# generalpurpose_mcpu_max 30000, generalpurpose_memory_max 110000; balanced_mcpu_max 222000, balanced_memory_max
# 851000; scaleout_mcpu_max 54000, scaleout_memory_max 216000. The other classes' minimum is not listed there; the
# general-purpose one is used for them.
AUTOPILOT_CLASSES = {
    "general-purpose": ComputeClassRange("general-purpose", 50, 30_000, 110_000),
    "Balanced": ComputeClassRange("Balanced", 50, 222_000, 851_000),
    "Scale-Out": ComputeClassRange("Scale-Out", 50, 54_000, 216_000),
}
DEFAULT_CLASS = "general-purpose"  # a pod that selects no compute class (GKE Autopilot compute classes)

# GPUs per pod that Autopilot offers, per accelerator (GKE "Deploy GPU workloads in Autopilot",
# https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-gpus, "Request GPUs in your containers": the
# supported quantities table). Not in the cost calculator's config.ini, which lists no counts.
AUTOPILOT_GPU_COUNTS = {
    "nvidia-b200": (8,),
    "nvidia-h200-141gb": (8,),
    "nvidia-h100-mega-80gb": (8,),
    "nvidia-h100-80gb": (1, 2, 4, 8),
    "nvidia-a100-80gb": (1, 2, 4, 8),
    "nvidia-tesla-a100": (1, 2, 4, 8, 16),
    "nvidia-l4": (1, 2, 4, 8),
    "nvidia-tesla-t4": (1, 2, 4),
}
# The same page: "Autopilot supports the smaller machine shapes of 1, 2, and 4 GPUs for NVIDIA H100 (80GB) GPUs on
# version 1.31.4-gke.1072000 or later."
AUTOPILOT_SMALL_H100_MIN_VERSION = "1.31.4-gke.1072000"
