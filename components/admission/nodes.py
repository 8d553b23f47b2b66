"""The shape of a cluster and what fits a node: limits per zone and cluster, machine types, allocatable resources
and pod requests."""

from __future__ import annotations

import math
import re
from typing import Iterable, Optional

from .. import catalog
from .names import parse_quantity
from .rules import rule

__all__ = [
    "AUTOPILOT_REGIONAL",
    "PER_ZONE_LIMITS",
    "NODE_POOLS_AUTOSCALING_LATENCY",
    "NODE_POOLS_WARNING",
    "MAX_SLICES_PER_ENTRY",
    "MACHINE_TYPES",
    "cpu_machine",
    "cpu_machine_sizes",
    "check_cpu_machine_type",
    "ALLOCATABLE",
    "NODE_AGENTS",
    "AUTOPILOT_MAX_REQUESTS",
    "AUTOPILOT_CLASS_RANGE",
    "autopilot_class_problem",
    "FITS",
    "NODE_DAEMONSETS",
    "daemonset_allowance",
    "EVICTION_THRESHOLD_GIB",
    "AUTOSCALER_SIDECAR",
    "GCS_FUSE_SIDECAR",
    "allocatable",
    "pod_requests",
    "node_worker_resources",
]


# --- cluster shape -------------------------------------------------------------------------------------------------

AUTOPILOT_REGIONAL = rule(
    "gke-autopilot-regional",
    "Autopilot clusters are regional: their location is a region, never a zone.",
    "https://cloud.google.com/kubernetes-engine/docs/resources/autopilot-standard-feature-comparison "
    "(Regional availability); gcloud container clusters create-auto takes --location REGION",
)
PER_ZONE_LIMITS = rule(
    "gke-autoscaling-total-limits",
    "min/max node counts of a node pool are per zone; a regional pool without "
    "node locations runs them in every zone, so pools are sized with total limits (GKE 1.24.1+).",
    "pulumi-gcp NodePoolAutoscalingArgs (min_node_count: 'per zone'; total_min_node_count: 'Total ... in the "
    "NodePool'); https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler#minimum_and_maximum_node_pool_size",
)
NODE_POOLS_AUTOSCALING_LATENCY = rule(
    "gke-node-pools-autoscaling-latency",
    "Past 200 node pools in a cluster (the system pool, every slice of every "
    "tpuSlices entry, every gpuPools and cpuPools entry) GKE's autoscaling may take longer: a warning, not a limit.",
    'https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning (Limitations: "Clusters that have '
    'more than 200 total node pools might have increased latency during autoscaling")',
)
NODE_POOLS_WARNING = 200
# One tpuSlices entry is one worker group's slices; this project keeps an entry to as many pools as GKE's autoscaling
# handles without added latency (a bound of its own, not GKE's): more slices take more entries.
MAX_SLICES_PER_ENTRY = NODE_POOLS_WARNING
MACHINE_TYPES = rule(
    "gce-predefined-machine-type",
    "A CPU pool (and the system pool) uses a predefined machine type that Compute "
    "Engine has: E2, N2, N2D, N4 or C3, standard/highmem/highcpu, only in the sizes each series is sold in (no "
    "c3-standard-2, e2-standard-3 or n4-standard-6), with at least 2 vCPUs.",
    "https://cloud.google.com/compute/docs/general-purpose-machines; sizes as listed by the machineTypes API in the "
    "catalogue snapshot anycloud-sh/catalog gcp/vms.csv @62ff0a98 (2026-05-20, SkyPilot format)",
)

# Predefined sizes (vCPUs) per series and class, and memory (GB) per vCPU, from the machine rows of the catalogue
# snapshot cited by MACHINE_TYPES (InstanceType, vCPUs, MemoryGiB); the -lssd and -metal variants are left out
# (GKE node pools here use neither).
_CPU_SERIES: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {
    "e2": {"standard": (4, (2, 4, 8, 16, 32)), "highmem": (8, (2, 4, 8, 16)), "highcpu": (1, (2, 4, 8, 16, 32))},
    "n2": {
        "standard": (4, (2, 4, 8, 16, 32, 48, 64, 80, 96, 128)),
        "highmem": (8, (2, 4, 8, 16, 32, 48, 64, 80, 96, 128)),
        "highcpu": (1, (2, 4, 8, 16, 32, 48, 64, 80, 96)),
    },
    "n2d": {
        "standard": (4, (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224)),
        "highmem": (8, (2, 4, 8, 16, 32, 48, 64, 80, 96)),
        "highcpu": (1, (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224)),
    },
    "n4": {
        "standard": (4, (2, 4, 8, 16, 32, 48, 64, 80)),
        "highmem": (8, (2, 4, 8, 16, 32, 48, 64, 80)),
        "highcpu": (2, (2, 4, 8, 16, 32, 48, 64, 80)),
    },
    "c3": {
        "standard": (4, (4, 8, 22, 44, 88, 176)),
        "highmem": (8, (4, 8, 22, 44, 88, 176)),
        "highcpu": (2, (4, 8, 22, 44, 88, 176)),
    },
}
_MEMORY_EXCEPTIONS = {"n2-highmem-128": 864.0}  # the snapshot's n2-highmem-128 row: 864 GB, not 8 per vCPU
# SERIES-TYPE-VCPUS with the vCPU count as Compute Engine writes it, without leading zeros (n2-standard-8; the API
# knows no n2-standard-08: Compute Engine "Machine families resource and comparison guide", machine type names).
_CPU_MACHINE = re.compile(r"([a-z0-9]+)-(standard|highmem|highcpu)-([1-9][0-9]*)")


def cpu_machine(name: str) -> Optional[tuple[int, float]]:
    """(vCPUs, memory GiB) of a predefined general-purpose machine type, or None if Compute Engine has no such
    type (of the series listed here)."""
    match = _CPU_MACHINE.fullmatch(name) if isinstance(name, str) else None
    if not match or match.group(1) not in _CPU_SERIES:
        return None
    per_vcpu, sizes = _CPU_SERIES[match.group(1)][match.group(2)]
    vcpus = int(match.group(3))
    if vcpus not in sizes:
        return None
    return vcpus, _MEMORY_EXCEPTIONS.get(name, float(vcpus * per_vcpu))


def cpu_machine_sizes(name: str) -> Optional[str]:
    """The sizes its series and class are sold in ("n2-standard-2, -4, ..."), for a message; None if unknown."""
    match = _CPU_MACHINE.fullmatch(name) if isinstance(name, str) else None
    if not match or match.group(1) not in _CPU_SERIES:
        return None
    _, sizes = _CPU_SERIES[match.group(1)][match.group(2)]
    return f"{match.group(1)}-{match.group(2)}-" + "/".join(str(n) for n in sizes)


def check_cpu_machine_type(name: str) -> None:
    if cpu_machine(name) is None:
        sizes = cpu_machine_sizes(name)
        if sizes:
            raise ValueError(f"is not a machine type Compute Engine has; allowed sizes: {sizes}")
        raise ValueError(
            "must be a predefined machine type with at least 2 vCPUs of the E2, N2, N2D, N4 or C3 "
            "series, such as e2-standard-8 (shared-core types leave no room for Ray heads)"
        )


# --- what fits a node ----------------------------------------------------------------------------------------------

ALLOCATABLE = rule(
    "gke-node-allocatable",
    "A Standard node allocates its capacity less GKE's reservations: CPU 6% of the first "
    "core, 1% of the next, 0.5% of the next 2, 0.25% above 4; memory 25% of the first 4 GiB, 20% of the next 4, 10% "
    "of the next 8, 6% of the next 112, 2% above 128; and a 100 MiB eviction threshold.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations",
)
NODE_AGENTS = rule(
    "gke-node-daemonsets",
    "GKE's own DaemonSets on every node take a further share: the sum of the requests of "
    "those the stack turns on (Dataplane V2 anetd, Cloud Logging fluentbit-gke, its larger 256pd variant on hosts of "
    "64+ vCPUs, Cloud Monitoring gke-metrics-agent, Managed Prometheus collector, GCS FUSE CSI node, Workload "
    "Identity gke-metadata-server, PD CSI, netd, ip-masq-agent, container-watcher, and the TPU or GPU device plugin "
    "and GPU driver installer), times 1.5, at least 1 vCPU and 1.5 GiB; agents whose memory request is not published "
    "are budgeted 256 MiB each. Check a live node: kubectl describe node NODE (Non-terminated Pods: the requests of "
    "every pod but the Ray worker; Allocated resources: their sum against Allocatable); the worker fits if it "
    "requests at most Allocatable less the others.",
    "kubernetes/kubernetes cluster/addons/ip-masq-agent/ip-masq-agent.yaml; GoogleCloudPlatform/prometheus-engine "
    "manifests/operator.yaml (collector); GoogleCloudPlatform/gcs-fuse-csi-driver deploy/base/node/node.yaml; "
    "GoogleCloudPlatform/container-engine-accelerators cmd/nvidia_gpu/device-plugin.yaml and "
    "nvidia-driver-installer/cos; the rest as observed on GKE nodes (kubectl describe node, GKE 1.36.3)",
)
AUTOPILOT_MAX_REQUESTS = rule(
    "gke-autopilot-max-requests",
    "Autopilot rejects a pod whose requests exceed the maximum of its compute class or "
    "accelerator. The per-accelerator maxima could not be read back from a source for every GPU, so no figure is "
    "recorded: GPU worker pods in Autopilot (sized from the whole machine) get a warning, and a live cluster's "
    "admission answers with kubectl apply --dry-run=server (the classes' maxima: gke-autopilot-class-range).",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests#hardware-min-max "
    '("If your requests are greater than the maximum, Autopilot rejects your workload")',
)
AUTOPILOT_CLASS_RANGE = rule(
    "gke-autopilot-class-range",
    "In Autopilot a pod of the general-purpose class (no compute class selected: this "
    "project's CPU workers) requests at most 30 vCPU and 110,000 MB; Balanced at most 222 vCPU and 851,000 MB, "
    "Scale-Out 54 vCPU and 216,000 MB. Above it Autopilot rejects the pod.",
    "GoogleCloudPlatform/autopilot-cost-calculator config.ini [limits] (from GKE's \"Resource requests in "
    'Autopilot"); https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests',
)


def autopilot_class_problem(compute_class: str, cpu: float, memory_gib: float) -> Optional[str]:
    """Why Autopilot refuses a pod requesting this much in this compute class, or None."""
    limits = catalog.AUTOPILOT_CLASSES[compute_class]
    memory_mb = memory_gib * 2**30 / 10**6
    if cpu * 1000 <= limits.max_mcpu and memory_mb <= limits.max_memory_mb:
        return None
    return (
        f"{cpu:g} vCPU and {memory_gib:g} GiB ({memory_mb:,.0f} MB) is above the {compute_class} class's maximum "
        f"of {limits.max_mcpu / 1000:g} vCPU and {limits.max_memory_mb:,} MB per pod ({AUTOPILOT_CLASS_RANGE.id})"
    )


FITS = rule(
    "pod-fits-node",
    "Every Ray pod (containers, the KubeRay autoscaler sidecar of the head, the GCS FUSE sidecar) "
    "requests no more CPU and memory than its node type allocates.",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/#kube-scheduler-implementation "
    "(filtering: NodeResourcesFit)",
)

EVICTION_THRESHOLD_GIB = 100 / 1024

# GKE's DaemonSets on a node of this stack, (name, on which nodes, CPU millicores, memory MiB or None where no
# request is published). Every stack turns on Dataplane V2, logging and monitoring of system components and
# workloads, Managed Prometheus, the GCS FUSE CSI driver and Workload Identity (resources/cluster.py).
_UNPUBLISHED_MEMORY_MIB = 256
NODE_DAEMONSETS: tuple[tuple[str, str, int, Optional[int]], ...] = (
    ("anetd", "all", 205, None),  # Dataplane V2: 205m in every size variant (observed; memory not published)
    ("fluentbit-gke", "small", 105, 230),  # Cloud Logging (observed, kubectl describe node, GKE 1.36.3)
    ("fluentbit-gke-256pd", "large", 855, 230),  # the variant seen on large hosts (observed)
    ("gke-metrics-agent", "all", 21, 145),  # Cloud Monitoring system metrics (observed)
    ("collector", "all", 5, 36),  # Managed Prometheus: prometheus 4m/32M + config-reloader 1m/4M (operator.yaml)
    ("gcsfusecsi-node", "all", 15, 20),  # GCS FUSE CSI: driver 5m/10Mi + registrar 10m/10Mi (node.yaml)
    ("gke-metadata-server", "all", 100, 100),  # Workload Identity (observed)
    ("pdcsi-node", "all", 10, 20),  # Persistent Disk CSI, always on (observed)
    ("netd", "all", 8, 65),  # (observed)
    ("ip-masq-agent", "all", 10, 16),  # ip-masq-agent.yaml: 10m, 16Mi
    ("container-watcher", "all", 25, None),  # (observed)
    ("tpu-device-plugin", "tpu", 110, None),  # TPU nodes (observed)
    ("nvidia-gpu-device-plugin", "gpu", 55, 100),  # device-plugin.yaml 50m/100Mi; 55m observed in GKE's variants
    ("nvidia-driver-installer", "gpu", 150, 0),  # init containers: the pod's effective request (daemonset-preloaded)
)
DAEMONSET_MARGIN = 1.5
DAEMONSET_FLOOR = (1.0, 1.5)  # vCPU, GiB
LARGE_HOST_VCPUS = 64  # hosts budgeted for the larger logging agent variant (a budget: GKE publishes no threshold)


def daemonset_allowance(vcpus: float, accelerator: Optional[str] = None) -> tuple[float, float]:
    """(CPU, memory GiB) held back for GKE's DaemonSets on a node (NODE_AGENTS): "tpu", "gpu", "cpu", or None for
    the larger of the TPU and GPU sets (a node whose accelerator the caller does not say)."""
    size = "large" if vcpus >= LARGE_HOST_VCPUS else "small"

    def total(kind: str) -> tuple[float, float]:
        rows = [r for r in NODE_DAEMONSETS if r[1] in ("all", size, kind)]
        cpu = sum(r[2] for r in rows) / 1000
        memory = sum(_UNPUBLISHED_MEMORY_MIB if r[3] is None else r[3] for r in rows) / 1024
        return cpu, memory

    kinds = ("tpu", "gpu") if accelerator is None else (accelerator,)
    cpu = max(total(k)[0] for k in kinds)
    memory = max(total(k)[1] for k in kinds)
    return max(DAEMONSET_FLOOR[0], cpu * DAEMONSET_MARGIN), max(DAEMONSET_FLOOR[1], memory * DAEMONSET_MARGIN)


# Sidecars that are injected into Ray pods.
# KubeRay ray-operator/controllers/ray/common/pod.go (v1.3.2 and v1.7.0): the autoscaler container requests and is
# limited to 500m CPU and 512Mi.
AUTOSCALER_SIDECAR = (0.5, 0.5)
# GoogleCloudPlatform/gcs-fuse-csi-driver cmd/webhook/main.go: the sidecar requests 250m CPU and 256Mi by default.
GCS_FUSE_SIDECAR = (0.25, 0.25)


def _tiers(amount: float, tiers: tuple[tuple[float, float], ...], rest: float) -> float:
    reserved, start = 0.0, 0.0
    for end, share in tiers:
        reserved += max(0.0, min(amount, end) - start) * share
        start = end
    return reserved + max(0.0, amount - start) * rest


def allocatable(vcpus: float, memory_gib: float, accelerator: Optional[str] = None) -> tuple[float, float]:
    """(CPU, memory GiB) that pods may request on a GKE Standard node of this size, after GKE's reservations, the
    eviction threshold and GKE's DaemonSets (`daemonset_allowance`)."""
    cpu_reserved = _tiers(vcpus, ((1, 0.06), (2, 0.01), (4, 0.005)), 0.0025)
    if memory_gib < 1:
        memory_reserved = 255 / 1024
    else:
        memory_reserved = _tiers(memory_gib, ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06)), 0.02)
    agents_cpu, agents_memory = daemonset_allowance(vcpus, accelerator)
    return vcpus - cpu_reserved - agents_cpu, memory_gib - memory_reserved - EVICTION_THRESHOLD_GIB - agents_memory


def pod_requests(pod_spec: dict, sidecars: Iterable[tuple[float, float]] = ()) -> tuple[float, float]:
    """(CPU, memory GiB) a pod requests: its containers plus injected sidecars."""
    cpu = memory = 0.0
    for container in pod_spec.get("containers", []):
        requests = container.get("resources", {}).get("requests", {})
        cpu += parse_quantity(str(requests.get("cpu", "0")))
        memory += parse_quantity(str(requests.get("memory", "0"))) / 2**30
    for extra_cpu, extra_memory in sidecars:
        cpu += extra_cpu
        memory += extra_memory
    return cpu, memory


def node_worker_resources(
    vcpus: float, memory_gib: float, gcs_fuse: bool, accelerator: Optional[str] = None
) -> tuple[int, int]:
    """Whole CPUs and GiB the one Ray worker container of a node requests: what the node allocates, less the GCS FUSE
    sidecar beside it."""
    cpu, memory = allocatable(vcpus, memory_gib, accelerator)
    if gcs_fuse:
        cpu, memory = cpu - GCS_FUSE_SIDECAR[0], memory - GCS_FUSE_SIDECAR[1]
    return math.floor(cpu), math.floor(memory)


def needs_workload_policy(shape) -> bool:
    """GKE places multi-host Ironwood slices through a HIGH_THROUGHPUT workload policy, which replaces the TPU topology
    flag (GKE "About Ironwood (TPU7x) in GKE"); `shape` is a catalog.SliceShape."""
    return shape.multi_host and shape.generation.name == "tpu7x"


__all__ += ["needs_workload_policy"]
