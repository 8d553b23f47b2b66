"""The GPU catalogue: machine types, GPUs per VM, vCPUs and memory, and the zones known to offer each GPU."""

from __future__ import annotations

from dataclasses import dataclass

from .tpu import CatalogError

__all__ = [
    "GPU_RESOURCE",
    "GPU_ACCELERATOR_LABEL",
    "GPU_COUNT_LABEL",
    "GpuMachine",
    "Gpu",
    "GPUS",
    "gpu",
    "gpu_machine",
    "GPU_MACHINE_ZONES",
    "GPU_ZONES",
]


# --- GPUs ----------------------------------------------------------------------------------------------------------
#
# Machine types, GPUs per VM, vCPUs and memory (GB) from Compute Engine "Accelerator-optimized machine family"
# (https://cloud.google.com/compute/docs/accelerator-optimized-machines), accelerator names from GKE "Run GPUs in GKE
# Standard node pools" (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus): "NVIDIA L4 GPUs (corresponding to
# the nvidia-l4 accelerator type and the G2 machine series)", and so on for each row below.

GPU_RESOURCE = "nvidia.com/gpu"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GPU_COUNT_LABEL = "cloud.google.com/gke-accelerator-count"


@dataclass(frozen=True)
class GpuMachine:
    """A VM with GPUs: one Kubernetes node; a Ray GPU worker pod takes all of its GPUs."""

    name: str
    gpus: int
    vcpus: int
    memory_gib: int
    capacities: tuple[str, ...] = ("onDemand", "spot", "reservation", "flexStart")


@dataclass(frozen=True)
class Gpu:
    accelerator: str  # value of the cloud.google.com/gke-accelerator node label and of --accelerator type=
    display: str
    machines: tuple[GpuMachine, ...]
    min_gke_version: str = "1.27.2-gke.1200"  # GKE-managed driver installation (gpu-driver-version) needs it
    min_gke_version_autopilot: str | None = None

    def machine(self, name: str) -> GpuMachine | None:
        return next((m for m in self.machines if m.name == name), None)

    @property
    def default_machine(self) -> GpuMachine:
        return self.machines[0]


def _g(name, gpus, vcpus, memory, capacities=None):
    return GpuMachine(name, gpus, vcpus, memory, capacities or ("onDemand", "spot", "reservation", "flexStart"))


# A3 Ultra and A4: "you must reserve capacity ..., use Spot VMs, use Flex-start VMs" (no on-demand); A3 High with 1, 2
# or 4 GPUs: "you must create instances by using Spot VMs or Flex-start VMs" (accelerator-optimized machines page).
_NO_ON_DEMAND = ("spot", "reservation", "flexStart")
_SPOT_OR_FLEX = ("spot", "flexStart")

GPUS: dict[str, Gpu] = {
    g.accelerator: g
    for g in (
        Gpu(
            "nvidia-l4",
            "NVIDIA L4 24GB",
            (
                # The GKE docs and Google's cluster toolkit pick g2-standard-12/24/48/96 for 1, 2, 4 and 8 GPUs.
                _g("g2-standard-12", 1, 12, 48),
                _g("g2-standard-4", 1, 4, 16),
                _g("g2-standard-8", 1, 8, 32),
                _g("g2-standard-16", 1, 16, 64),
                _g("g2-standard-24", 2, 24, 96),
                _g("g2-standard-32", 1, 32, 128),
                _g("g2-standard-48", 4, 48, 192),
                _g("g2-standard-96", 8, 96, 384),
            ),
        ),
        Gpu(
            "nvidia-tesla-a100",
            "NVIDIA A100 40GB",
            (
                _g("a2-highgpu-1g", 1, 12, 85),
                _g("a2-highgpu-2g", 2, 24, 170),
                _g("a2-highgpu-4g", 4, 48, 340),
                _g("a2-highgpu-8g", 8, 96, 680),
                _g("a2-megagpu-16g", 16, 96, 1360),
            ),
        ),
        Gpu(
            "nvidia-a100-80gb",
            "NVIDIA A100 80GB",
            (
                _g("a2-ultragpu-1g", 1, 12, 170),
                _g("a2-ultragpu-2g", 2, 24, 340),
                _g("a2-ultragpu-4g", 4, 48, 680),
                _g("a2-ultragpu-8g", 8, 96, 1360),
            ),
        ),
        Gpu(
            "nvidia-h100-80gb",
            "NVIDIA H100 80GB (A3 High)",
            (
                _g("a3-highgpu-8g", 8, 208, 1872),
                _g("a3-highgpu-1g", 1, 26, 234, _SPOT_OR_FLEX),
                _g("a3-highgpu-2g", 2, 52, 468, _SPOT_OR_FLEX),
                _g("a3-highgpu-4g", 4, 104, 936, _SPOT_OR_FLEX),
            ),
            # GKE "Deploy GPU workloads in Autopilot": "1.28.6-gke.1369000 or later"
            min_gke_version_autopilot="1.28.6-gke.1369000",
        ),
        Gpu(
            "nvidia-h100-mega-80gb",
            "NVIDIA H100 80GB Mega (A3 Mega)",
            (_g("a3-megagpu-8g", 8, 208, 1872),),
            min_gke_version_autopilot="1.28.9-gke.1250000",
        ),
        # A3 Ultra: GKE installs its default (R550) driver from 1.31.5-gke.1169000 (AI Hypercomputer on GKE).
        Gpu(
            "nvidia-h200-141gb",
            "NVIDIA H200 141GB (A3 Ultra)",
            (_g("a3-ultragpu-8g", 8, 224, 2952, _NO_ON_DEMAND),),
            min_gke_version="1.31.5-gke.1169000",
            min_gke_version_autopilot="1.31.4-gke.1183000",
        ),
        # A4: "the required minimum version for A4, 1.32.1-gke.1729000 or later" (AI Hypercomputer on GKE).
        Gpu(
            "nvidia-b200",
            "NVIDIA B200 180GB (A4)",
            (_g("a4-highgpu-8g", 8, 224, 3968, _NO_ON_DEMAND),),
            min_gke_version="1.32.1-gke.1729000",
            min_gke_version_autopilot="1.32.2-gke.1422000",
        ),
    )
}


def gpu(accelerator: str) -> Gpu:
    try:
        return GPUS[accelerator]
    except KeyError:
        raise CatalogError(f"unknown GPU accelerator; allowed: {', '.join(GPUS)}") from None


def gpu_machine(accelerator: str, machine_type: str | None = None) -> GpuMachine:
    """The machine type of a GPU pool: the given one if it carries this GPU, else the catalogue's default."""
    g = gpu(accelerator)
    if machine_type is None:
        return g.default_machine
    machine = g.machine(machine_type)
    if machine is None:
        raise CatalogError(
            f"not a machine type with {accelerator}; allowed: "
            f"{', '.join(f'{m.name} ({m.gpus} GPU)' for m in g.machines)}"
        )
    return machine


# Zones that sell each GPU machine type: the machine rows (InstanceType -> AvailabilityZone) of the catalogue the price
# table cites, skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv @006059e0f18acb1341e22a27751e9f80df6ba92f
# (Compute Engine "GPU regions and zones" could not be read back), agreeing with anycloud-sh/catalog gcp/vms.csv
# @62ff0a98 (2026-05-20) except europe-west8-c for a3-highgpu-1g/2g/4g, which only the cited snapshot lists. A zone
# outside its row is a warning (zones are added over time), never a refusal.
_A2_HIGH = (
    "asia-northeast1-a",
    "asia-northeast1-c",
    "asia-northeast3-a",
    "asia-northeast3-b",
    "asia-southeast1-a",
    "asia-southeast1-b",
    "asia-southeast1-c",
    "europe-west4-a",
    "europe-west4-b",
    "me-west1-a",
    "me-west1-c",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-central1-f",
    "us-east1-b",
    "us-west1-b",
    "us-west3-b",
    "us-west4-b",
)
_A2_MEGA = (
    "asia-southeast1-a",
    "asia-southeast1-c",
    "europe-west4-a",
    "europe-west4-b",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-central1-f",
)
_A2_ULTRA = (
    "asia-southeast1-c",
    "europe-west4-a",
    "us-central1-a",
    "us-central1-c",
    "us-east4-c",
    "us-east5-a",
    "us-east5-b",
)
_A3_HIGH_8G = (
    "asia-east1-c",
    "asia-northeast1-b",
    "asia-south1-c",
    "asia-south2-b",
    "asia-southeast1-b",
    "asia-southeast1-c",
    "australia-southeast1-c",
    "europe-north1-c",
    "europe-west1-b",
    "europe-west1-c",
    "europe-west3-c",
    "europe-west4-b",
    "europe-west4-c",
    "europe-west9-c",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east4-a",
    "us-east4-b",
    "us-east4-c",
    "us-east5-a",
    "us-west1-a",
    "us-west1-b",
    "us-west4-a",
)
_A3_HIGH_SMALL = tuple(sorted(_A3_HIGH_8G + ("europe-west8-c",)))
_A3_MEGA = (
    "asia-east1-c",
    "asia-northeast1-b",
    "asia-southeast1-b",
    "asia-southeast1-c",
    "australia-southeast1-c",
    "europe-north1-c",
    "europe-west1-b",
    "europe-west1-c",
    "europe-west3-c",
    "europe-west4-b",
    "europe-west4-c",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east4-a",
    "us-east4-b",
    "us-east4-c",
    "us-east5-a",
    "us-west1-a",
    "us-west1-b",
    "us-west4-a",
)
_A3_ULTRA = (
    "asia-south1-b",
    "asia-south2-c",
    "europe-west1-b",
    "europe-west4-a",
    "us-central1-b",
    "us-east4-b",
    "us-east5-a",
    "us-south1-b",
    "us-west1-c",
)
_A4 = (
    "asia-northeast1-b",
    "asia-southeast1-b",
    "europe-north1-b",
    "europe-west4-b",
    "us-central1-b",
    "us-east1-b",
    "us-east4-b",
    "us-south1-b",
    "us-west2-c",
    "us-west3-b",
    "us-west3-c",
)
_G2 = (
    "asia-east1-a",
    "asia-east1-b",
    "asia-east1-c",
    "asia-northeast1-a",
    "asia-northeast1-b",
    "asia-northeast1-c",
    "asia-northeast3-a",
    "asia-northeast3-b",
    "asia-south1-a",
    "asia-south1-b",
    "asia-south1-c",
    "asia-southeast1-a",
    "asia-southeast1-b",
    "asia-southeast1-c",
    "europe-west1-b",
    "europe-west1-c",
    "europe-west2-a",
    "europe-west2-b",
    "europe-west3-a",
    "europe-west3-b",
    "europe-west4-a",
    "europe-west4-b",
    "europe-west4-c",
    "europe-west6-b",
    "europe-west6-c",
    "me-central2-a",
    "me-central2-c",
    "northamerica-northeast1-b",
    "northamerica-northeast1-c",
    "northamerica-northeast2-a",
    "northamerica-northeast2-b",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east1-b",
    "us-east1-c",
    "us-east1-d",
    "us-east4-a",
    "us-east4-c",
    "us-west1-a",
    "us-west1-b",
    "us-west1-c",
    "us-west4-a",
    "us-west4-c",
)

GPU_MACHINE_ZONES: dict[str, tuple[str, ...]] = {
    **{f"a2-highgpu-{n}g": _A2_HIGH for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": _A2_MEGA,
    **{f"a2-ultragpu-{n}g": _A2_ULTRA for n in (1, 2, 4, 8)},
    "a3-highgpu-8g": _A3_HIGH_8G,
    **{f"a3-highgpu-{n}g": _A3_HIGH_SMALL for n in (1, 2, 4)},
    "a3-megagpu-8g": _A3_MEGA,
    "a3-ultragpu-8g": _A3_ULTRA,
    "a4-highgpu-8g": _A4,
    **{f"g2-standard-{n}": _G2 for n in (4, 8, 12, 16, 24, 32, 48, 96)},
}

# Per GPU: the zones of any of its machine types.
GPU_ZONES: dict[str, tuple[str, ...]] = {
    g.accelerator: tuple(sorted({z for m in g.machines for z in GPU_MACHINE_ZONES[m.name]})) for g in GPUS.values()
}
