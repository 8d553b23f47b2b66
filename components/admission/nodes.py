"""The shape of a cluster and what fits a node: limits per zone and cluster, machine types, allocatable resources
and pod requests."""

from __future__ import annotations

import math
import re
from typing import Iterable, Optional

from .names import parse_quantity
from .rules import rule

__all__ = ["AUTOPILOT_REGIONAL", "PER_ZONE_LIMITS", "MAX_SLICES", "MAX_SLICES_PER_ENTRY", "cpu_machine",
    "check_cpu_machine_type", "ALLOCATABLE", "FITS", "DAEMONSET_ALLOWANCE_CPU", "DAEMONSET_ALLOWANCE_MEMORY_GIB",
    "EVICTION_THRESHOLD_GIB", "AUTOSCALER_SIDECAR", "GCS_FUSE_SIDECAR", "allocatable", "pod_requests",
    "node_worker_resources"]


# --- cluster shape -------------------------------------------------------------------------------------------------

AUTOPILOT_REGIONAL = rule(
    "gke-autopilot-regional", "Autopilot clusters are regional: their location is a region, never a zone.",
    "https://cloud.google.com/kubernetes-engine/docs/resources/autopilot-standard-feature-comparison "
    "(Regional availability); gcloud container clusters create-auto takes --location REGION")
PER_ZONE_LIMITS = rule(
    "gke-autoscaling-total-limits", "min/max node counts of a node pool are per zone; a regional pool without "
    "node locations runs them in every zone, so pools are sized with total limits (GKE 1.24.1+).",
    "pulumi-gcp NodePoolAutoscalingArgs (min_node_count: 'per zone'; total_min_node_count: 'Total ... in the "
    "NodePool'); https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler#minimum_and_maximum_node_pool_size")
MAX_SLICES = rule(
    "gke-node-pools-per-cluster", "A Standard cluster has at most 200 node pools; one tpuSlices entry asks for at most "
    "that many slices (each slice is one pool).",
    "https://cloud.google.com/kubernetes-engine/quotas (Node pools per cluster)")
MAX_SLICES_PER_ENTRY = 200

# Compute Engine machine series whose predefined types the system pool may use, with memory (GB) per vCPU by class.
# https://cloud.google.com/compute/docs/general-purpose-machines (E2, N2, N2D, N4, C3 machine type tables).
_CPU_SERIES = {
    "e2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2d": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n4": {"standard": 4, "highmem": 8, "highcpu": 2},
    "c3": {"standard": 4, "highmem": 8, "highcpu": 2},
}
_CPU_MACHINE = re.compile(r"(e2|n2|n2d|n4|c3)-(standard|highmem|highcpu)-([0-9]+)")


def cpu_machine(name: str) -> Optional[tuple[int, float]]:
    """(vCPUs, memory GiB) of a predefined general-purpose machine type, or None if unknown here."""
    match = _CPU_MACHINE.fullmatch(name)
    if not match:
        return None
    series, kind, vcpus = match.group(1), match.group(2), int(match.group(3))
    return vcpus, float(vcpus * _CPU_SERIES[series][kind])


def check_cpu_machine_type(name: str) -> None:
    if cpu_machine(name) is None or cpu_machine(name)[0] < 2:
        raise ValueError("must be a predefined machine type with at least 2 vCPUs of the E2, N2, N2D, N4 or C3 "
                         "series, such as e2-standard-8 (shared-core types leave no room for Ray heads)")


# --- what fits a node ----------------------------------------------------------------------------------------------

ALLOCATABLE = rule(
    "gke-node-allocatable", "A Standard node allocates its capacity less GKE's reservations: CPU 6% of the first "
    "core, 1% of the next, 0.5% of the next 2, 0.25% above 4; memory 25% of the first 4 GiB, 20% of the next 4, 10% "
    "of the next 8, 6% of the next 112, 2% above 128; and a 100 MiB eviction threshold. Node DaemonSets take a "
    "further allowance (an estimate: measure with kubectl describe node).",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations")
FITS = rule(
    "pod-fits-node", "Every Ray pod (containers, the KubeRay autoscaler sidecar of the head, the GCS FUSE sidecar) "
    "requests no more CPU and memory than its node type allocates.",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/#kube-scheduler-implementation "
    "(filtering: NodeResourcesFit)")

# Node DaemonSets (logging, metrics, networking, CSI drivers, the TPU device plugin) request resources of their own.
# GKE publishes no figure for them; this allowance is deliberately generous and is checked after deploy.
DAEMONSET_ALLOWANCE_CPU = 0.4
DAEMONSET_ALLOWANCE_MEMORY_GIB = 1.0
EVICTION_THRESHOLD_GIB = 100 / 1024

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


def allocatable(vcpus: float, memory_gib: float) -> tuple[float, float]:
    """(CPU, memory GiB) that pods may request on a GKE Standard node of this size, after GKE's reservations, the
    eviction threshold and the DaemonSet allowance."""
    cpu_reserved = _tiers(vcpus, ((1, 0.06), (2, 0.01), (4, 0.005)), 0.0025)
    if memory_gib < 1:
        memory_reserved = 255 / 1024
    else:
        memory_reserved = _tiers(memory_gib, ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06)), 0.02)
    return (vcpus - cpu_reserved - DAEMONSET_ALLOWANCE_CPU,
            memory_gib - memory_reserved - EVICTION_THRESHOLD_GIB - DAEMONSET_ALLOWANCE_MEMORY_GIB)


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


def node_worker_resources(vcpus: float, memory_gib: float, gcs_fuse: bool) -> tuple[int, int]:
    """Whole CPUs and GiB the one Ray worker container of a node requests: what the node allocates, less the GCS FUSE
    sidecar beside it."""
    cpu, memory = allocatable(vcpus, memory_gib)
    if gcs_fuse:
        cpu, memory = cpu - GCS_FUSE_SIDECAR[0], memory - GCS_FUSE_SIDECAR[1]
    return math.floor(cpu), math.floor(memory)





