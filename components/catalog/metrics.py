"""The metric list (catalog/data/metrics.yaml): every metric type, resource label, metric label and node label a
dashboard or an alert may read, each with its source. Anything not listed is refused (`ObservabilityError`), so the
dashboards and alerts only read series Google documents."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import yaml

METRICS_FILE = Path(__file__).resolve().parent / "data" / "metrics.yaml"

# Metric types, each of which data/metrics.yaml lists with its source.
DUTY_CYCLE = "kubernetes.io/node/accelerator/duty_cycle"
TENSORCORE = "kubernetes.io/node/accelerator/tensorcore_utilization"
HBM_BANDWIDTH = "kubernetes.io/node/accelerator/memory_bandwidth_utilization"
HBM_USED = "kubernetes.io/node/accelerator/memory_used"
HBM_TOTAL = "kubernetes.io/node/accelerator/memory_total"
NODE_CONDITION = "kubernetes.io/node/status_condition"
MULTI_HOST_AVAILABLE = "kubernetes.io/node_pool/multi_host/available"
INTERRUPTIONS = "kubernetes.io/node_pool/interruption_count"
RAY_ACTIVE_NODES = "prometheus.googleapis.com/ray_cluster_active_nodes/gauge"
RAY_PENDING_NODES = "prometheus.googleapis.com/ray_cluster_pending_nodes/gauge"
RAY_FAILED_NODES = "prometheus.googleapis.com/ray_cluster_failed_nodes/gauge"
RAY_NODE_CPU = "prometheus.googleapis.com/ray_node_cpu_utilization/gauge"
RAY_NODE_MEMORY = "prometheus.googleapis.com/ray_node_mem_used/gauge"
NODE_POOL_STATUS = "kubernetes.io/node_pool/status"
STARTUP_DURATION = "kubernetes.io/node_pool/accelerator/startup_duration"
TIMES_TO_RECOVER = "kubernetes.io/node_pool/accelerator/times_to_recover"
TIMES_BETWEEN_INTERRUPTIONS = "kubernetes.io/node_pool/accelerator/times_between_interruptions"
POD_UNSCHEDULABLE = "prometheus.googleapis.com/kube_pod_status_unschedulable/gauge"
# The slice check's own series (workloads/slice_health.py writes them; the same strings there).
SLICE_HEALTHY = "custom.googleapis.com/ray_tpu_gke/slice_healthy"
RAY_OBJECT_READY = "custom.googleapis.com/ray_tpu_gke/ray_object_ready"

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"

# The labels that say which cluster a series belongs to, per monitored resource type.
CLUSTER_LABEL = {
    "k8s_node": "cluster_name",
    "k8s_node_pool": "cluster_name",
    "prometheus_target": "cluster",
    "generic_task": "namespace",
}  # the slice check writes the cluster's name as generic_task's namespace


class ObservabilityError(ValueError):
    """A dashboard or an alert policy that cannot be built as asked; `about` names the slice or pool, when there is
    one, so a component can report the argument path."""

    def __init__(self, message: str, about: Optional[tuple[str, str]] = None):
        super().__init__(message)
        self.message = message
        self.about = about

    def on(self, kind: str, name: str) -> "ObservabilityError":
        return self if self.about else ObservabilityError(self.message, (kind, name))


# --- the metric list (data/metrics.yaml) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    type: str
    source: str
    resource: str
    kind: str
    value_type: str
    unit: str
    labels: tuple[str, ...]
    launch_stage: str = ""
    description: str = ""


@dataclass(frozen=True)
class ResourceType:
    type: str
    labels: tuple[str, ...]
    user_labels: Mapping[str, str]


@dataclass(frozen=True)
class MetricList:
    sources: Mapping[str, Mapping[str, str]]
    resources: Mapping[str, ResourceType]
    metrics: Mapping[str, Metric]
    limits: Mapping[str, int]

    def metric(self, metric_type: str) -> Metric:
        try:
            return self.metrics[metric_type]
        except KeyError:
            raise ObservabilityError(
                f"metric type {metric_type!r} is not in data/metrics.yaml; listed: {', '.join(self.metrics)}"
            ) from None


@functools.lru_cache(maxsize=None)
def metric_list() -> MetricList:
    """data/metrics.yaml, read once."""
    data = yaml.safe_load(METRICS_FILE.read_text())
    resources = {
        name: ResourceType(name, tuple(r["labels"]), dict(r.get("user_labels") or {}))
        for name, r in data["resources"].items()
    }
    metrics = {}
    for m in data["metrics"]:
        metrics[m["type"]] = Metric(
            m["type"],
            m["source"],
            m["resource"],
            m["kind"],
            m["value_type"],
            str(m["unit"]),
            tuple(m["labels"]),
            m.get("launch_stage", ""),
            m.get("description", ""),
        )
    limits = {name: int(limit["value"]) for name, limit in data["limits"].items()}
    return MetricList(data["sources"], resources, metrics, limits)


def limit(name: str) -> int:
    return metric_list().limits[name]
