"""GPUs: the GKE versions, capacity types and taints GPU node pools need, and their quota."""

from __future__ import annotations

from typing import Optional

from .. import catalog
from .quota import QuotaId, QuotaNeed
from .rules import rule
from .versions import RAY_OPERATOR_MIN_GKE_VERSION, VersionNeed

__all__ = ["GPU_VERSION", "GPU_CAPACITY", "GPU_TAINT", "GPU_FLEX_START_MIN_GKE_VERSION", "gpu_version_needs",
    "GPU_QUOTA_IDS", "gpu_quota_need"]


# --- GPUs ----------------------------------------------------------------------------------------------------------

GPU_VERSION = rule(
    "gke-gpu-version", "GKE installs GPU drivers itself (gpu-driver-version) from 1.27.2-gke.1200; H200 (A3 Ultra) "
    "gets its default driver from 1.31.5-gke.1169000, B200 (A4) needs 1.32.1-gke.1729000; Autopilot has its own "
    "minimums per GPU; flex-start GPUs need 1.32.2-gke.1652000.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus; "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-gpus; "
    "https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute")
GPU_CAPACITY = rule(
    "gce-gpu-capacity", "A3 Ultra (H200) and A4 (B200) VMs come only from reservations, Spot or flex-start; A3 High "
    "with 1, 2 or 4 GPUs only from Spot or flex-start.",
    "https://cloud.google.com/compute/docs/accelerator-optimized-machines")
GPU_TAINT = rule(
    "gke-gpu-taint", "GPU nodes carry nvidia.com/gpu=present:NoSchedule (GKE adds it only when a non-GPU pool already "
    "exists, so the pools set it themselves); pods that request nvidia.com/gpu tolerate it.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (GPU node taint)")
GPU_FLEX_START_MIN_GKE_VERSION = "1.32.2-gke.1652000"


def gpu_version_needs(accelerator: str, capacity: str, autopilot: bool) -> list[VersionNeed]:
    gpu = catalog.gpu(accelerator)
    needs = [VersionNeed(RAY_OPERATOR_MIN_GKE_VERSION, "the Ray Operator add-on")]
    if autopilot and gpu.min_gke_version_autopilot:
        needs.append(VersionNeed(gpu.min_gke_version_autopilot, f"{accelerator} in Autopilot"))
    else:
        needs.append(VersionNeed(gpu.min_gke_version, f"{accelerator} with GKE-installed drivers"))
    if capacity == "flexStart":
        needs.append(VersionNeed(GPU_FLEX_START_MIN_GKE_VERSION, "flex-start GPUs"))
    return needs


# Cloud Quotas IDs of compute.googleapis.com per GPU: (on-demand, preemptible: spot and flex-start). The legacy metric
# names (NVIDIA_L4_GPUS ...) are in Google's cluster toolkit (pkg/validators/quota.go); the Cloud Quotas IDs follow
# the same pattern as reported by public projects. Unknown IDs are warnings at deploy time, never guesses.
GPU_QUOTA_IDS: dict[str, tuple[QuotaId, QuotaId]] = {
    accelerator: (QuotaId(f"NVIDIA-{metric}-GPUS-per-project-region"),
                  QuotaId(f"PREEMPTIBLE-NVIDIA-{metric}-GPUS-per-project-region"))
    for accelerator, metric in (("nvidia-l4", "L4"), ("nvidia-tesla-a100", "A100"), ("nvidia-a100-80gb", "A100-80GB"),
                                ("nvidia-h100-80gb", "H100"), ("nvidia-h100-mega-80gb", "H100-MEGA"),
                                ("nvidia-h200-141gb", "H200"), ("nvidia-b200", "B200"))
}


def gpu_quota_need(accelerator: str, capacity: str, gpus: int, region: str, who: str) -> Optional[QuotaNeed]:
    if capacity == "reservation":
        return None
    on_demand, preemptible = GPU_QUOTA_IDS[accelerator]
    return QuotaNeed(on_demand if capacity == "onDemand" else preemptible, region, gpus, who, unit="GPUs")


