"""GPUs: the GKE versions, capacity types and taints GPU node pools need, and their quota."""

from __future__ import annotations

from typing import Optional

from .. import catalog
from .quota import QuotaId, QuotaNeed
from .rules import rule
from .versions import RAY_OPERATOR_MIN_GKE_VERSION, VersionNeed

__all__ = [
    "GPU_VERSION",
    "GPU_CAPACITY",
    "GPU_TAINT",
    "GPU_FLEX_START_MIN_GKE_VERSION",
    "gpu_version_needs",
    "AUTOPILOT_GPU_COUNT",
    "autopilot_gpu_count_problem",
    "GPU_QUOTA_IDS",
    "GPU_FAMILY_QUOTA",
    "gpu_quota_need",
]


# --- GPUs ----------------------------------------------------------------------------------------------------------

GPU_VERSION = rule(
    "gke-gpu-version",
    "GKE installs GPU drivers itself (gpu-driver-version) from 1.27.2-gke.1200; H200 (A3 Ultra) "
    "gets its default driver from 1.31.5-gke.1169000, B200 (A4) needs 1.32.1-gke.1729000; Autopilot has its own "
    "minimums per GPU; flex-start GPUs need 1.32.2-gke.1652000.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus; "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-gpus; "
    "https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute",
)
GPU_CAPACITY = rule(
    "gce-gpu-capacity",
    "A3 Ultra (H200) and A4 (B200) VMs come only from reservations, Spot or flex-start; A3 High "
    "with 1, 2 or 4 GPUs only from Spot or flex-start.",
    "https://cloud.google.com/compute/docs/accelerator-optimized-machines",
)
GPU_TAINT = rule(
    "gke-gpu-taint",
    "GPU nodes carry nvidia.com/gpu=present:NoSchedule (GKE adds it only when a non-GPU pool already "
    "exists, so the pools set it themselves); pods that request nvidia.com/gpu tolerate it.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (GPU node taint)",
)
GPU_FLEX_START_MIN_GKE_VERSION = "1.32.2-gke.1652000"
AUTOPILOT_GPU_COUNT = rule(
    "gke-autopilot-gpu-count",
    "In Autopilot a pod asks for a GPU count its accelerator is offered with: B200, H200 "
    "and H100 Mega 8; H100 1, 2, 4 or 8 (1, 2 and 4 from 1.31.4-gke.1072000); A100 80GB and L4 1, 2, 4 or 8; A100 "
    "40GB 1, 2, 4, 8 or 16; T4 1, 2 or 4.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-gpus (Request GPUs in your containers)",
)


def autopilot_gpu_count_problem(accelerator: str, gpus: int) -> Optional[str]:
    """Why Autopilot refuses a pod of this many GPUs of this accelerator, or None."""
    counts = catalog.AUTOPILOT_GPU_COUNTS.get(accelerator)
    if counts is None or gpus in counts:
        return None
    return (
        f"Autopilot offers {accelerator} with {', '.join(map(str, counts))} GPUs per pod, not {gpus} "
        f"({AUTOPILOT_GPU_COUNT.id})"
    )


def gpu_version_needs(
    accelerator: str, capacity: str, autopilot: bool, gpus: Optional[int] = None
) -> list[VersionNeed]:
    gpu = catalog.gpu(accelerator)
    needs = [VersionNeed(RAY_OPERATOR_MIN_GKE_VERSION, "the Ray Operator add-on")]
    if autopilot and gpu.min_gke_version_autopilot:
        needs.append(VersionNeed(gpu.min_gke_version_autopilot, f"{accelerator} in Autopilot"))
    else:
        needs.append(VersionNeed(gpu.min_gke_version, f"{accelerator} with GKE-installed drivers"))
    if autopilot and accelerator == "nvidia-h100-80gb" and gpus is not None and gpus < 8:
        needs.append(
            VersionNeed(catalog.AUTOPILOT_SMALL_H100_MIN_VERSION, f"{gpus} {accelerator} per pod in Autopilot")
        )
    if capacity == "flexStart":
        needs.append(VersionNeed(GPU_FLEX_START_MIN_GKE_VERSION, "flex-start GPUs"))
    return needs


# Cloud Quotas IDs of compute.googleapis.com per GPU: (on-demand, preemptible: spot and flex-start). L4 and A100 have
# a quota per model (NVIDIA-<GPU>-GPUS-per-project-region). On-demand H100, H100 Mega, H200 and B200 draw on the
# per-family quota GPUS-PER-GPU-FAMILY-per-project-region with its `gpu_family` dimension ("The gpu_family dimension
# measures the number of GPUs of a given family", https://cloud.google.com/docs/quotas/configure-dimensions); no
# NVIDIA-H100-GPUS-per-project-region exists for them on real projects, while their PREEMPTIBLE-NVIDIA-<GPU>-GPUS IDs
# do. The per-model mapping is read from Cloud Quotas on real projects (public `gcloud beta quotas info list`
# records): Google's own table (https://cloud.google.com/compute/resource-usage, "GPU quota") could not be read back.
# A project that does not list an ID gets a warning at deploy time, never a guess.
_PER_MODEL = (("nvidia-l4", "L4"), ("nvidia-tesla-a100", "A100"), ("nvidia-a100-80gb", "A100-80GB"))
_PER_FAMILY = (
    ("nvidia-h100-80gb", "H100", "NVIDIA_H100"),
    ("nvidia-h100-mega-80gb", "H100-MEGA", "NVIDIA_H100_MEGA"),
    ("nvidia-h200-141gb", "H200", "NVIDIA_H200"),
    ("nvidia-b200", "B200", "NVIDIA_B200"),
)
GPU_FAMILY_QUOTA = "GPUS-PER-GPU-FAMILY-per-project-region"
GPU_QUOTA_IDS: dict[str, tuple[QuotaId, QuotaId]] = {
    **{
        accelerator: (
            QuotaId(f"NVIDIA-{metric}-GPUS-per-project-region"),
            QuotaId(f"PREEMPTIBLE-NVIDIA-{metric}-GPUS-per-project-region"),
        )
        for accelerator, metric in _PER_MODEL
    },
    **{
        accelerator: (
            QuotaId(GPU_FAMILY_QUOTA, (("gpu_family", family),)),
            QuotaId(f"PREEMPTIBLE-NVIDIA-{metric}-GPUS-per-project-region"),
        )
        for accelerator, metric, family in _PER_FAMILY
    },
}


def gpu_quota_need(accelerator: str, capacity: str, gpus: int, region: str, who: str) -> Optional[QuotaNeed]:
    if capacity == "reservation":
        return None
    on_demand, preemptible = GPU_QUOTA_IDS[accelerator]
    return QuotaNeed(on_demand if capacity == "onDemand" else preemptible, region, gpus, who, unit="GPUs")
