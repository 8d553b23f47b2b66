"""The slices' observability as plain data: the metric list, the Cloud Monitoring dashboard JSON and the alert policy
specs. Pure (no Pulumi import); `components/monitoring.py` registers what this module builds.

Every metric type, resource label, metric label and node label a filter or a grouping names is read from
`data/metrics.yaml`, which gives each its source; anything else is refused (`ObservabilityError`), so the dashboard
and the alerts only read series Google documents. Dashboards follow the Dashboards API v1 (`mosaicLayout` tiles of
`xyChart`, `text` and `collapsibleGroup` widgets; each chart a `timeSeriesQuery.timeSeriesFilter` with `filter` and
`aggregation`); alert policies follow `projects.alertPolicies` (`conditionThreshold`), spelled in camelCase as the
APIs and the plan spell them.

Which series say what:

- A slice's hosts: node-level series (`k8s_node`). They exist while the node does, busy or not; container series end
  with the last pod, so an idle slice would read as "no data" rather than as idle. Standard mode names the slice's node
  pools (node label `cloud.google.com/gke-nodepool`); Autopilot names its node pools itself, so there a slice's nodes
  are the ones carrying the labels its Ray pods select (`manifests.slice_node_selector`).
- A slice as a whole: GKE's node pool series (`k8s_node_pool`): multi-host availability and interruptions.
- Ray: the Ray metrics the GKE Ray Operator add-on sends to Managed Service for Prometheus (`prometheus_target`), when
  the cluster's `rayOperator.monitoring` is on.

Row builders (`tpu_slice_row`, `gpu_pool_row`, `ray_row`, `cluster_pools_row`) each return one dashboard row; a GPU
pool's row is one more such function. `dashboards` lays the rows out and splits them over several dashboards when one
would hold more widgets than Cloud Monitoring allows. `alert_policies` returns every policy of an environment.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import yaml

from . import catalog

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

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"

# The labels that say which cluster a series belongs to, per monitored resource type.
CLUSTER_LABEL = {"k8s_node": "cluster_name", "k8s_node_pool": "cluster_name", "prometheus_target": "cluster"}

# Alert kinds: what each means and what to do, shared by the policies' documentation and docs/operations.md (a test
# checks that every title is a section there).
ALERTS = {
    "idle": (
        "TPU slice idle",
        "The slice's hosts are up (a multi-host slice whole and available) and paid for, but their TPUs have been busy "
        "less than {idle}% of the time for {idle_minutes} minutes.",
        "Find what should run on it (the Ray worker groups {groups}). If nothing should, scale it down: set the "
        "worker group's replicas (or minReplicas) to 0, and give the slice autoscaling with minNodes 0, so the pool "
        "costs nothing while idle. A reserved slice is paid for anyway: give it work or release the reservation.",
    ),
    "unavailable": (
        "TPU slice not whole or not available",
        "For {unavailable_minutes} minutes the slice has had fewer Ready hosts than the {hosts} it needs, or GKE has "
        "reported its multi-host node pool unavailable. A multi-host slice only works whole: its Ray workers cannot "
        "run.",
        "Open the dashboard row of the slice: the availability chart shows GKE's unavailability reason "
        "(MaintenanceTaint, RebootEvent, Unhealthy, ProvisioningError, ...). Maintenance and repairs end on their own; "
        "a ProvisioningError or a stockout needs capacity (quota, reservation) before the pool can be whole again. "
        "Ray jobs on the slice restart from their last checkpoint once it is.",
    ),
    "interruptions": (
        "TPU slice interrupted repeatedly",
        "GKE interrupted the node pool's hosts (preemption, maintenance, host errors) more than {interruptions} times "
        "in 24 hours.",
        "Read the interruption type and reason on the dashboard. Spot and flex-start capacity is taken back by design; "
        "if jobs cannot keep up, move them to on-demand or reserved capacity, or checkpoint more often. Repeated "
        "maintenance or host errors on reserved or on-demand capacity are worth a support case.",
    ),
    "gpu-idle": (
        "GPU pool idle",
        "The pool's GPU nodes are up and paid for, but their GPUs have been busy less than {idle}% of the time for "
        "{idle_minutes} minutes.",
        "Find what should run on the pool (the Ray worker groups {groups}); if nothing should, scale it to zero.",
    ),
    "gpu-interruptions": (
        "GPU pool interrupted repeatedly",
        "GKE interrupted the pool's nodes more than {interruptions} times in 24 hours.",
        "Read the interruption type and reason on the dashboard; move work off Spot capacity if it cannot keep up.",
    ),
    "cluster-interruptions": (
        "Node pools interrupted repeatedly",
        "GKE interrupted the nodes of one of the cluster's node pools more than {interruptions} times in 24 hours "
        "(Autopilot names its node pools itself, so this policy covers every pool of the cluster).",
        "Read the pool, interruption type and reason on the dashboard; Spot and flex-start capacity is taken back by "
        "design, so move work that cannot keep up to other capacity.",
    ),
}
RUNBOOK = "docs/operations.md"


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
            raise ObservabilityError(f"metric type {metric_type!r} is not in data/metrics.yaml; listed: "
                                     f"{', '.join(self.metrics)}") from None


@functools.lru_cache(maxsize=None)
def metric_list() -> MetricList:
    """data/metrics.yaml, read once."""
    data = yaml.safe_load(METRICS_FILE.read_text())
    resources = {name: ResourceType(name, tuple(r["labels"]), dict(r.get("user_labels") or {}))
                 for name, r in data["resources"].items()}
    metrics = {}
    for m in data["metrics"]:
        metrics[m["type"]] = Metric(m["type"], m["source"], m["resource"], m["kind"], m["value_type"], str(m["unit"]),
                                    tuple(m["labels"]), m.get("launch_stage", ""), m.get("description", ""))
    limits = {name: int(limit["value"]) for name, limit in data["limits"].items()}
    return MetricList(data["sources"], resources, metrics, limits)


def limit(name: str) -> int:
    return metric_list().limits[name]


# --- what is observed -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """When an alert fires (config `ray-tpu-gke:monitoring`, `MonitoringConfig`)."""

    idle_duty_cycle_percent: float = 5.0
    idle_minutes: int = 60
    unavailable_minutes: int = 15
    interruptions_per_day: int = 3


@dataclass(frozen=True)
class Environment:
    """The stack whose slices are observed."""

    project: str
    cluster: str
    environment: str
    autopilot: bool = False
    thresholds: Thresholds = Thresholds()
    notification_channels: tuple[str, ...] = ()
    ray_metrics: bool = False
    """Whether the Ray Operator add-on sends Ray metrics to Managed Service for Prometheus (rayOperator.monitoring)."""
    labels: tuple[tuple[str, str], ...] = ()
    """userLabels of every alert policy (environment, team, cost-center, ...)."""

    @property
    def production(self) -> bool:
        """Production as the policy pack reads it: an environment whose name starts with `prod`."""
        return self.environment.startswith("prod")


@dataclass(frozen=True)
class SliceTarget:
    """One TPU slice entry: its shape, and how its nodes and node pools are found."""

    name: str
    shape: catalog.SliceShape
    capacity: str = "onDemand"
    count: int = 1
    pools: tuple[str, ...] = ()
    """Standard mode: the entry's node pools, one per slice. Empty in Autopilot."""
    node_labels: tuple[tuple[str, str], ...] = ()
    """Autopilot: the node labels the slice's Ray pods select, which GKE puts on the nodes it provisions for them."""
    autoscaled: bool = False
    """The pools scale to zero, so an empty pool is normal (its availability is not alerted on, see `unavailable`)."""
    worker_groups: tuple[str, ...] = ()
    """Ray worker groups that run on the slice (the `node_type` of Ray's autoscaler metrics)."""

    @property
    def describe(self) -> str:
        s = self.shape
        hosts = f"{s.hosts} hosts of {s.machine_type.name}" if s.multi_host else f"1 host of {s.machine_type.name}"
        return f"{s.generation.name} {s.topology}, {s.chips} chips on {hosts}; {self.count} x {self.capacity}"


@dataclass(frozen=True)
class GpuPoolTarget:
    """One GPU pool entry: a node pool of GPU VMs (Standard), or the GPU nodes its pods select (Autopilot)."""

    name: str
    accelerator: str
    machine_type: str
    count: int = 1
    capacity: str = "onDemand"
    pools: tuple[str, ...] = ()
    node_labels: tuple[tuple[str, str], ...] = ()
    autoscaled: bool = False
    worker_groups: tuple[str, ...] = ()

    @property
    def describe(self) -> str:
        return f"{self.count} x {self.machine_type} ({self.accelerator}), {self.capacity}"


Target = Union[SliceTarget, GpuPoolTarget]


# --- filters and aggregations ---------------------------------------------------------------------------------------

Values = Union[str, Sequence[str]]


def _quoted(value: str) -> str:
    if not isinstance(value, str) or '"' in value or "\\" in value or not value:
        raise ObservabilityError(f"{value!r} cannot be matched in a Monitoring filter: a non-empty string without "
                                 "quotes or backslashes is needed")
    return f'"{value}"'


def _match(values: Values) -> str:
    """`= "v"` for one value; a full regular-expression match of the alternatives for several (Monitoring filters,
    `monitoring.regex.full_match`). Dots are bracketed rather than backslash-escaped, which the quoted string would
    need escaped again."""
    if isinstance(values, str):
        return _quoted(values)
    values = list(dict.fromkeys(values))
    if len(values) == 1:
        return _quoted(values[0])
    for v in values:
        _quoted(v)
        if any(c in v for c in "|()[]{}*+?^$"):
            raise ObservabilityError(f"{v!r} cannot be one of several values of a Monitoring filter")
    return "monitoring.regex.full_match(" + _quoted("|".join(v.replace(".", "[.]") for v in values)) + ")"


def _label_key(key: str) -> str:
    return key if key.replace("_", "").isalnum() else f'"{key}"'


def series_filter(env: Environment, metric_type: str, *, resource: Optional[Mapping[str, Values]] = None,
                  metric: Optional[Mapping[str, Values]] = None, user: Optional[Mapping[str, Values]] = None) -> str:
    """A Monitoring filter for one metric type of the environment's project and cluster, checked against
    data/metrics.yaml: the resource labels of the metric's resource type, the metric's own labels, the node labels
    listed for the resource (`metadata.user_labels`)."""
    metrics = metric_list()
    m = metrics.metric(metric_type)
    rtype = metrics.resources[m.resource]
    resource_labels = {"project_id": env.project, CLUSTER_LABEL[m.resource]: env.cluster, **(resource or {})}
    parts = [f'metric.type="{m.type}"', f'resource.type="{m.resource}"']
    for key, values in resource_labels.items():
        if key not in rtype.labels:
            raise ObservabilityError(f"{m.resource} has no resource label {key!r}; it has {', '.join(rtype.labels)}")
        parts.append(f"resource.labels.{key}={_match(values)}")
    for key, values in (metric or {}).items():
        if key not in m.labels:
            raise ObservabilityError(f"{m.type} has no metric label {key!r}; it has {', '.join(m.labels)}")
        parts.append(f"metric.labels.{_label_key(key)}={_match(values)}")
    for key, values in sorted((user or {}).items()):
        if key not in rtype.user_labels:
            raise ObservabilityError(f"node label {key!r} is not listed for {m.resource} in data/metrics.yaml")
        parts.append(f'metadata.user_labels."{key}"={_match(values)}')
    text = " AND ".join(parts)
    if len(text) > limit("filter_chars"):
        raise ObservabilityError(f"the filter of {m.type} would be {len(text)} characters, more than the "
                                 f"{limit('filter_chars')} Cloud Monitoring accepts: too many node pools or values")
    return text


Field = tuple[str, str]  # ("resource" | "metric" | "user", key)


def group_field(metric_type: str, scope: str, key: str) -> str:
    """A groupByFields entry, checked against data/metrics.yaml."""
    metrics = metric_list()
    m = metrics.metric(metric_type)
    rtype = metrics.resources[m.resource]
    if scope == "resource" and key in rtype.labels:
        return f'resource.label."{key}"'
    if scope == "metric" and key in m.labels:
        return f'metric.label."{key}"'
    if scope == "user" and key in rtype.user_labels:
        return f'metadata.user_labels."{key}"'
    raise ObservabilityError(f"{m.type} cannot be grouped by {scope} label {key!r}")


def query(env: Environment, metric_type: str, aligner: str, period_s: int, reducer: Optional[str] = None,
          group_by: Iterable[Field] = (), **selection: Mapping[str, Values]) -> dict:
    """A timeSeriesFilter: {filter, aggregation}. `selection`: resource=, metric=, user= label matches."""
    if period_s < limit("min_alignment_seconds"):
        raise ObservabilityError(f"alignment period {period_s}s is below {limit('min_alignment_seconds')}s")
    aggregation: dict[str, Any] = {"alignmentPeriod": f"{period_s}s", "perSeriesAligner": aligner}
    if reducer is not None:
        aggregation["crossSeriesReducer"] = reducer
        fields = [group_field(metric_type, scope, key) for scope, key in group_by]
        if fields:
            aggregation["groupByFields"] = fields
    return {"filter": series_filter(env, metric_type, **selection), "aggregation": aggregation}


# Which aligners and reducers suit which series (Aggregation.Aligner / Reducer in the Monitoring API: the BOOL ones
# only for Boolean values, the numeric ones only for numbers).
BOOL_ALIGNERS = {"ALIGN_COUNT_TRUE", "ALIGN_COUNT_FALSE", "ALIGN_FRACTION_TRUE"}
NUMERIC_ALIGNERS = {"ALIGN_MIN", "ALIGN_MAX", "ALIGN_MEAN", "ALIGN_SUM", "ALIGN_STDDEV", "ALIGN_INTERPOLATE",
                    "ALIGN_PERCENT_CHANGE"}
ANY_GAUGE_ALIGNERS = {"ALIGN_NEXT_OLDER", "ALIGN_COUNT", "ALIGN_NONE"}
DELTA_ALIGNERS = {"ALIGN_DELTA", "ALIGN_RATE"}
NUMERIC_REDUCERS = {"REDUCE_MEAN", "REDUCE_MIN", "REDUCE_MAX", "REDUCE_SUM", "REDUCE_STDDEV", "REDUCE_PERCENTILE_99",
                    "REDUCE_PERCENTILE_95", "REDUCE_PERCENTILE_50", "REDUCE_PERCENTILE_05"}
BOOL_REDUCERS = {"REDUCE_COUNT_TRUE", "REDUCE_COUNT_FALSE", "REDUCE_FRACTION_TRUE"}


def aggregation_problems(metric: Metric, aggregation: Mapping[str, Any]) -> list[str]:
    """What is wrong with an aggregation of this metric's series, by the Monitoring API's rules (empty: nothing)."""
    problems = []
    aligner = aggregation.get("perSeriesAligner", "ALIGN_NONE")
    reducer = aggregation.get("crossSeriesReducer", "REDUCE_NONE")
    period = aggregation.get("alignmentPeriod")
    if aligner != "ALIGN_NONE":
        if not (isinstance(period, str) and period.endswith("s") and period[:-1].isdigit()):
            problems.append(f"{aligner} needs an alignmentPeriod in seconds (given {period!r})")
        elif int(period[:-1]) < limit("min_alignment_seconds"):
            problems.append(f"alignmentPeriod {period} is below {limit('min_alignment_seconds')}s")
    if aligner in BOOL_ALIGNERS and metric.value_type != "BOOL":
        problems.append(f"{aligner} needs Boolean values; {metric.type} is {metric.value_type}")
    if aligner in NUMERIC_ALIGNERS and metric.value_type not in ("INT64", "DOUBLE"):
        problems.append(f"{aligner} needs numeric values; {metric.type} is {metric.value_type}")
    if aligner in DELTA_ALIGNERS and metric.kind not in ("CUMULATIVE", "DELTA"):
        problems.append(f"{aligner} needs a CUMULATIVE or DELTA metric; {metric.type} is {metric.kind}")
    if aligner not in BOOL_ALIGNERS | NUMERIC_ALIGNERS | ANY_GAUGE_ALIGNERS | DELTA_ALIGNERS:
        problems.append(f"unknown aligner {aligner}")
    if reducer != "REDUCE_NONE":
        if aligner == "ALIGN_NONE":
            problems.append(f"{reducer} needs a per-series aligner")
        # The aligned values: BOOL aligners give numbers, ALIGN_NEXT_OLDER keeps the value type.
        aligned_bool = metric.value_type == "BOOL" and aligner in ("ALIGN_NEXT_OLDER",)
        if reducer in NUMERIC_REDUCERS and aligned_bool:
            problems.append(f"{reducer} needs numeric values; {aligner} of {metric.type} keeps Booleans")
        if reducer in BOOL_REDUCERS and not aligned_bool:
            problems.append(f"{reducer} needs Boolean values")
        if reducer not in NUMERIC_REDUCERS | BOOL_REDUCERS | {"REDUCE_COUNT"}:
            problems.append(f"unknown reducer {reducer}")
    return problems


# --- selections of a target's series ----------------------------------------------------------------------------


def node_selection(target: Target) -> dict[str, Values]:
    """metadata.user_labels matches that select the target's nodes."""
    if target.pools:
        return {NODEPOOL_LABEL: list(target.pools)}
    return dict(target.node_labels)


def pool_selection(target: Target) -> Optional[dict[str, Values]]:
    """resource.labels matches that select the target's node pools (None in Autopilot: GKE names them)."""
    return {"node_pool_name": list(target.pools)} if target.pools else None


BY_POOL: tuple[Field, ...] = (("user", NODEPOOL_LABEL),)
BY_POOL_RESOURCE: tuple[Field, ...] = (("resource", "node_pool_name"),)


def _node_query(env: Environment, target: Target, metric_type: str, aligner: str, period_s: int, reducer: str,
                metric: Optional[Mapping[str, Values]] = None) -> dict:
    return query(env, metric_type, aligner, period_s, reducer, BY_POOL, user=node_selection(target), metric=metric)


def ready_hosts(env: Environment, target: Target, period_s: int = 60) -> dict:
    """Ready hosts per node pool: the fraction of each node's samples with Ready=True, summed over the pool."""
    return _node_query(env, target, NODE_CONDITION, "ALIGN_FRACTION_TRUE", period_s, "REDUCE_SUM",
                       metric={"condition": "Ready", "status": "True"})


def pool_available(env: Environment, target: Target, period_s: int = 60) -> dict:
    """1 while GKE reports the multi-host node pool available (every node of it), per pool."""
    return query(env, MULTI_HOST_AVAILABLE, "ALIGN_FRACTION_TRUE", period_s, "REDUCE_MIN", BY_POOL_RESOURCE,
                 resource=pool_selection(target))


def duty_cycle(env: Environment, target: Target, period_s: int = 60) -> dict:
    """Mean accelerator duty cycle of the pool's chips (node-level: present whether or not a pod runs)."""
    return _node_query(env, target, DUTY_CYCLE, "ALIGN_MEAN", period_s, "REDUCE_MEAN")


def interruptions(env: Environment, target: Optional[Target], period_s: int,
                  by_reason: bool = False) -> dict:
    """Interruptions summed over `period_s`, per pool (and type and reason); every pool of the cluster without a
    target, or for an Autopilot target (GKE names those pools)."""
    group = BY_POOL_RESOURCE + ((("metric", "interruption_type"), ("metric", "interruption_reason")) if by_reason
                                else ())
    selection = pool_selection(target) if target is not None else None
    return query(env, INTERRUPTIONS, "ALIGN_SUM", period_s, "REDUCE_SUM", group, resource=selection)


def ray_nodes(env: Environment, metric_type: str, groups: Sequence[str] = ()) -> dict:
    """A Ray autoscaler node count per namespace and node type (worker group), optionally of some groups only."""
    return query(env, metric_type, "ALIGN_MEAN", 60, "REDUCE_SUM",
                 (("resource", "namespace"), ("metric", "node_type")),
                 metric={"node_type": list(groups)} if groups else None)


# --- dashboard widgets ----------------------------------------------------------------------------------------------


def dataset(series: dict, plot: str = "LINE", axis: str = "Y1") -> dict:
    return {"timeSeriesQuery": {"timeSeriesFilter": series}, "plotType": plot, "targetAxis": axis,
            "minAlignmentPeriod": series["aggregation"]["alignmentPeriod"]}


def chart(title: str, datasets: Sequence[dict], y_label: str, thresholds: Sequence[tuple[str, float]] = (),
          y2_label: Optional[str] = None) -> dict:
    xy: dict[str, Any] = {"dataSets": list(datasets), "chartOptions": {"mode": "COLOR"},
                          "yAxis": {"label": y_label, "scale": "LINEAR"}}
    if y2_label is not None:
        xy["y2Axis"] = {"label": y2_label, "scale": "LINEAR"}
    if thresholds:
        # A threshold of an XyChart has a label and a value; color and direction are not allowed there (Threshold,
        # dashboards API).
        xy["thresholds"] = [{"label": label, "value": value} for label, value in thresholds]
    return {"title": title, "xyChart": xy}


def text(content: str) -> dict:
    return {"text": {"content": content, "format": "MARKDOWN"}}


@dataclass
class Row:
    """A row of the dashboard: a collapsible group titled `title` holding `charts`, three to a line."""

    title: str
    charts: list[dict] = field(default_factory=list)

    @property
    def widgets(self) -> int:
        return 1 + len(self.charts)


CHART_WIDTH, CHART_HEIGHT, HEADER_HEIGHT = 16, 16, 10


def _groups(target: Target) -> str:
    return ", ".join(target.worker_groups) if target.worker_groups else "none"


def tpu_slice_row(env: Environment, target: SliceTarget) -> Row:
    """Availability, TPU duty cycle, TensorCore and HBM bandwidth utilization, HBM used, interruptions and the Ray
    workers of one TPU slice entry, per node pool (one pool is one slice in Standard mode)."""
    try:
        shape = target.shape
        hosts = shape.hosts
        availability = [dataset(ready_hosts(env, target))]
        y2 = None
        if shape.multi_host and target.pools:
            availability.append(dataset(pool_available(env, target), axis="Y2"))
            y2 = "multi-host pool available (1 = whole)"
        charts = [
            chart(f"Ready hosts per slice (of {hosts})", availability, "ready hosts",
                  thresholds=[(f"{hosts} hosts: the whole slice", hosts)], y2_label=y2),
            chart("TPU duty cycle (%)", [dataset(duty_cycle(env, target))], "%",
                  thresholds=[(f"idle below {env.thresholds.idle_duty_cycle_percent:g}%",
                               env.thresholds.idle_duty_cycle_percent)]),
            chart("TensorCore and HBM bandwidth utilization (%)", [
                dataset(_node_query(env, target, TENSORCORE, "ALIGN_MEAN", 60, "REDUCE_MEAN")),
                dataset(_node_query(env, target, HBM_BANDWIDTH, "ALIGN_MEAN", 60, "REDUCE_MEAN")),
            ], "%"),
            chart(f"HBM used and total (bytes; {shape.chips} chips per slice)", [
                dataset(_node_query(env, target, HBM_USED, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                dataset(_node_query(env, target, HBM_TOTAL, "ALIGN_MEAN", 60, "REDUCE_SUM")),
            ], "bytes"),
        ]
        charts += _interruption_and_ray_charts(env, target)
    except ObservabilityError as error:
        raise error.on("slice", target.name) from None
    return Row(f"TPU slice {target.name}: {target.describe}", charts)


def _interruption_and_ray_charts(env: Environment, target) -> list:
    """What a slice's and a GPU pool's rows share: interruptions of named pools, and the Ray workers on them."""
    charts = []
    if target.pools:
        charts.append(chart("Interruptions per hour, by type and reason",
                            [dataset(interruptions(env, target, 3600, by_reason=True), plot="STACKED_BAR")],
                            "interruptions"))
    if env.ray_metrics and target.worker_groups:
        charts.append(chart(f"Ray worker pods of {_groups(target)} (active, pending)", [
            dataset(ray_nodes(env, RAY_ACTIVE_NODES, target.worker_groups)),
            dataset(ray_nodes(env, RAY_PENDING_NODES, target.worker_groups)),
        ], "pods"))
    return charts


def gpu_pool_row(env: Environment, target: GpuPoolTarget) -> Row:
    """Ready nodes, GPU duty cycle, GPU memory, interruptions and the Ray workers of one GPU pool entry.

    Node-level series, as for TPU slices: kubernetes.io/container/accelerator/duty_cycle would read only while a pod
    runs, and a container series cannot be tied to its node pool."""
    try:
        charts = [
            chart("Ready nodes per pool", [dataset(ready_hosts(env, target))], "ready nodes"),
            chart("GPU duty cycle (%)", [dataset(duty_cycle(env, target))], "%",
                  thresholds=[(f"idle below {env.thresholds.idle_duty_cycle_percent:g}%",
                               env.thresholds.idle_duty_cycle_percent)]),
            chart("GPU memory used and total (bytes)", [
                dataset(_node_query(env, target, HBM_USED, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                dataset(_node_query(env, target, HBM_TOTAL, "ALIGN_MEAN", 60, "REDUCE_SUM")),
            ], "bytes"),
        ]
        charts += _interruption_and_ray_charts(env, target)
    except ObservabilityError as error:
        raise error.on("gpu_pool", target.name) from None
    return Row(f"GPU pool {target.name}: {target.describe}", charts)


def ray_row(env: Environment) -> Row:
    """The health of the cluster's Ray clusters, from the Ray metrics the Ray Operator add-on collects."""
    return Row("Ray clusters (Ray metrics from the Ray Operator add-on)", [
        chart("Ray nodes active, by namespace and worker group", [dataset(ray_nodes(env, RAY_ACTIVE_NODES))],
              "Ray nodes"),
        chart("Ray nodes pending and failed", [dataset(ray_nodes(env, RAY_PENDING_NODES)),
                                               dataset(ray_nodes(env, RAY_FAILED_NODES))], "Ray nodes"),
        chart("Ray node CPU utilization (%), mean per namespace", [dataset(query(
            env, RAY_NODE_CPU, "ALIGN_MEAN", 60, "REDUCE_MEAN", (("resource", "namespace"),)))], "%"),
        chart("Ray node memory used (bytes), per namespace", [dataset(query(
            env, RAY_NODE_MEMORY, "ALIGN_MEAN", 60, "REDUCE_SUM", (("resource", "namespace"),)))], "bytes"),
    ])


def cluster_pools_row(env: Environment) -> Row:
    """Autopilot: GKE names the node pools it creates, so pool-level series are shown for every pool of the cluster."""
    return Row("Node pools of the cluster (Autopilot names them itself)", [
        chart("Multi-host TPU node pools available (1 = whole)", [dataset(query(
            env, MULTI_HOST_AVAILABLE, "ALIGN_FRACTION_TRUE", 60, "REDUCE_MIN", BY_POOL_RESOURCE))], "available"),
        chart("Interruptions per hour, by pool, type and reason",
              [dataset(interruptions(env, None, 3600, by_reason=True), plot="STACKED_BAR")], "interruptions"),
    ])


def header(env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget], page: int,
           pages: int) -> dict:
    t = env.thresholds
    channels = (f"{len(env.notification_channels)} notification channel(s)" if env.notification_channels else
                "**none**: incidents open in Cloud Monitoring and notify nobody "
                "(set `ray-tpu-gke:monitoring.notificationChannels`)")
    ray = ("Ray metrics from the Ray Operator add-on (Managed Service for Prometheus); the Ray node counts come from "
           "the Ray autoscaler, so only Ray clusters with autoscaling report them" if env.ray_metrics else
           "Ray metrics are off for this cluster (`rayOperator.monitoring: false`), so no Ray charts")
    lines = [
        f"### {env.cluster} ({env.environment}): TPU slices" + (f", page {page} of {pages}" if pages > 1 else ""),
        f"Project `{env.project}`, {'Autopilot' if env.autopilot else 'Standard'} cluster `{env.cluster}`; "
        f"{len(slices)} TPU slice entr{'y' if len(slices) == 1 else 'ies'}"
        + (f", {len(gpu_pools)} GPU pool(s)" if gpu_pools else "") + ". Charts are per node pool"
        + ("" if env.autopilot else " (one pool is one slice)") + "; host series are node-level, so an idle slice "
        "shows 0%, not a gap.",
        f"Alerts: idle below {t.idle_duty_cycle_percent:g}% duty cycle for {t.idle_minutes} min; not whole or not "
        f"available for {t.unavailable_minutes} min; more than {t.interruptions_per_day} interruptions in 24 h. "
        f"Notifications: {channels}. What each alert means and what to do: `{RUNBOOK}` in the ray-tpu-gke "
        "repository.",
        ray + ".",
    ]
    return text("\n\n".join(lines))


def _rows(env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget]) -> list[Row]:
    rows = []
    if env.ray_metrics:
        rows.append(ray_row(env))
    if env.autopilot:
        rows.append(cluster_pools_row(env))
    rows += [tpu_slice_row(env, s) for s in slices]
    rows += [gpu_pool_row(env, g) for g in gpu_pools]
    return rows


def _pages(rows: list[Row]) -> list[list[Row]]:
    """Rows in order, as few dashboards as the widget limit allows (the header takes one widget on each)."""
    room = limit("widgets_per_dashboard") - 1
    pages: list[list[Row]] = [[]]
    for row in rows:
        if row.widgets > room:
            raise ObservabilityError(f"row {row.title!r} has {row.widgets} widgets, more than a dashboard holds")
        if sum(r.widgets for r in pages[-1]) + row.widgets > room:
            pages.append([])
        pages[-1].append(row)
    return pages


def _layout(head: dict, rows: Sequence[Row]) -> list[dict]:
    columns = limit("dashboard_columns")
    per_line = columns // CHART_WIDTH
    tiles = [{"xPos": 0, "yPos": 0, "width": columns, "height": HEADER_HEIGHT, "widget": head}]
    y = HEADER_HEIGHT
    for row in rows:
        lines = max(1, math.ceil(len(row.charts) / per_line))
        height = lines * CHART_HEIGHT
        # A collapsible group holds the widgets inside the area it spans (Widget.collapsibleGroup).
        tiles.append({"xPos": 0, "yPos": y, "width": columns, "height": height,
                      "widget": {"title": row.title, "collapsibleGroup": {"collapsed": False}}})
        for i, widget in enumerate(row.charts):
            tiles.append({"xPos": (i % per_line) * CHART_WIDTH, "yPos": y + (i // per_line) * CHART_HEIGHT,
                          "width": CHART_WIDTH, "height": CHART_HEIGHT, "widget": widget})
        y += height
    return tiles


def dashboards(env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget] = ()) -> list[dict]:
    """The environment's dashboards (Dashboards API v1 JSON), usually one; more when the rows exceed one's widgets."""
    pages = _pages(_rows(env, slices, gpu_pools))
    out = []
    for number, rows in enumerate(pages, start=1):
        name = f"{env.cluster} ({env.environment}): TPU slices" + (f" {number}/{len(pages)}" if len(pages) > 1 else "")
        out.append({
            "displayName": name,
            "mosaicLayout": {"columns": limit("dashboard_columns"),
                             "tiles": _layout(header(env, slices, gpu_pools, number, len(pages)), rows)},
        })
    return out


def dashboard_json(dashboard: dict) -> str:
    """The dashboard as the `dashboard_json` input: sorted keys, so a plan is byte-for-byte repeatable."""
    return json.dumps(dashboard, sort_keys=True, separators=(",", ":"))


# --- alert policies -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicySpec:
    """One alert policy: `key` names the Pulumi resource (unique in the environment), `policy` is the API's
    AlertPolicy without `project` and `notificationChannels`, which the component adds."""

    key: str
    kind: str
    subject: str  # the slice or pool it watches, or the cluster
    policy: dict


def _condition(title: str, series: dict, comparison: str, value: float, seconds: int) -> dict:
    return {"displayName": title, "conditionThreshold": {
        "filter": series["filter"],
        "aggregations": [series["aggregation"]],
        "comparison": comparison,
        "thresholdValue": value,
        "duration": f"{seconds}s",
        "trigger": {"count": 1},
        # No data is no problem: a pool scaled to zero has no nodes, and a quiet pool reports no interruptions.
        "evaluationMissingData": "EVALUATION_MISSING_DATA_INACTIVE",
    }}


SEVERITY = {"idle": "WARNING", "unavailable": "ERROR", "interruptions": "WARNING", "gpu-idle": "WARNING",
            "gpu-interruptions": "WARNING", "cluster-interruptions": "WARNING"}


def _policy(env: Environment, kind: str, subject: str, title: str, conditions: list[dict], combiner: str,
            facts: Mapping[str, Any]) -> dict:
    if not 1 <= len(conditions) <= limit("conditions_per_policy"):
        raise ObservabilityError(f"a policy holds 1 to {limit('conditions_per_policy')} conditions "
                                 f"({len(conditions)} for {title})")
    heading, meaning, action = ALERTS[kind]
    t = env.thresholds
    values = {"idle": f"{t.idle_duty_cycle_percent:g}", "idle_minutes": t.idle_minutes,
              "unavailable_minutes": t.unavailable_minutes, "interruptions": t.interruptions_per_day, **facts}
    content = (f"**{heading}**: {title}.\n\n{meaning.format(**values)}\n\n**What to do**: {action.format(**values)}"
               f"\n\nRunbook: `{RUNBOOK}`, section \"{heading}\", in the ray-tpu-gke repository. Cluster "
               f"`{env.cluster}`, project `{env.project}`.")
    labels = dict(env.labels)
    labels.update({"alert": kind, "subject": subject})
    return {
        "displayName": f"[{env.environment}] {title}",
        "combiner": combiner,
        "conditions": conditions,
        "documentation": {"content": content, "mimeType": "text/markdown",
                          "subject": f"[{env.environment}] {heading}: {subject}"},
        "severity": SEVERITY[kind],
        "userLabels": labels,
        # An incident whose series stop (a pool scaled to zero) closes after 30 minutes, the shortest allowed.
        "alertStrategy": {"autoClose": f"{limit('min_auto_close_seconds')}s"},
        "enabled": True,
    }


def _slice_policies(env: Environment, s: SliceTarget) -> list[PolicySpec]:
    t = env.thresholds
    shape = s.shape
    idle_s, unavailable_s = t.idle_minutes * 60, t.unavailable_minutes * 60
    facts = {"groups": _groups(s), "hosts": shape.hosts}
    specs = []
    idle = f"duty cycle below {t.idle_duty_cycle_percent:g}% for {t.idle_minutes} min"
    if shape.multi_host and s.pools:
        # Cloud Monitoring combines the conditions of one policy, never pairs them per pool: a policy per slice ANDs
        # "this pool is available" with "this pool is idle".
        for index, pool in enumerate(s.pools):
            one = SliceTarget(s.name, shape, s.capacity, 1, (pool,), (), s.autoscaled, s.worker_groups)
            conditions = [
                _condition(f"{pool}: multi-host pool available", pool_available(env, one, 300),
                           "COMPARISON_GT", 0.99, idle_s),
                _condition(f"{pool}: {idle}", duty_cycle(env, one, 300), "COMPARISON_LT",
                           t.idle_duty_cycle_percent, idle_s),
            ]
            specs.append(PolicySpec(f"{s.name}-idle-{index}", "idle", pool, _policy(
                env, "idle", pool, f"{env.cluster}: TPU slice {pool} ({s.name}) idle", conditions, "AND", facts)))
    else:
        conditions = [_condition(f"{s.name}: {idle}", duty_cycle(env, s, 300), "COMPARISON_LT",
                                 t.idle_duty_cycle_percent, idle_s)]
        specs.append(PolicySpec(f"{s.name}-idle", "idle", s.name, _policy(
            env, "idle", s.name, f"{env.cluster}: TPU slice {s.name} idle", conditions, "OR", facts)))

    # Not whole: fewer Ready hosts than the slice has, per pool. A pool scaled to zero has no nodes and no series, so
    # this never fires for it; a pool that is coming up is given the same grace as any other.
    conditions = [_condition(f"{s.name}: fewer than {shape.hosts} Ready hosts for {t.unavailable_minutes} min",
                             ready_hosts(env, s), "COMPARISON_LT", shape.hosts - 0.5, unavailable_s)]
    if shape.multi_host and s.pools and not s.autoscaled:
        # GKE documents the availability of multi-host pools, not what an empty (scaled-to-zero) pool reports, so it is
        # alerted on for fixed-size pools only; the Ready-hosts condition covers autoscaled ones.
        conditions.append(_condition(f"{s.name}: multi-host pool unavailable for {t.unavailable_minutes} min",
                                     pool_available(env, s), "COMPARISON_LT", 1, unavailable_s))
    specs.append(PolicySpec(f"{s.name}-unavailable", "unavailable", s.name, _policy(
        env, "unavailable", s.name, f"{env.cluster}: TPU slice {s.name} not whole or not available", conditions,
        "OR", facts)))

    if s.pools:
        conditions = [_condition(f"{s.name}: more than {t.interruptions_per_day} interruptions in 24 h",
                                 interruptions(env, s, 86400), "COMPARISON_GT", t.interruptions_per_day, 0)]
        specs.append(PolicySpec(f"{s.name}-interruptions", "interruptions", s.name, _policy(
            env, "interruptions", s.name, f"{env.cluster}: TPU slice {s.name} interrupted repeatedly", conditions,
            "OR", facts)))
    return specs


def _gpu_policies(env: Environment, g: GpuPoolTarget) -> list[PolicySpec]:
    t = env.thresholds
    facts = {"groups": _groups(g)}
    specs = [PolicySpec(f"{g.name}-gpu-idle", "gpu-idle", g.name, _policy(
        env, "gpu-idle", g.name, f"{env.cluster}: GPU pool {g.name} idle",
        [_condition(f"{g.name}: GPU duty cycle below {t.idle_duty_cycle_percent:g}% for {t.idle_minutes} min",
                    duty_cycle(env, g, 300), "COMPARISON_LT", t.idle_duty_cycle_percent, t.idle_minutes * 60)],
        "OR", facts))]
    if g.pools:
        specs.append(PolicySpec(f"{g.name}-gpu-interruptions", "gpu-interruptions", g.name, _policy(
            env, "gpu-interruptions", g.name, f"{env.cluster}: GPU pool {g.name} interrupted repeatedly",
            [_condition(f"{g.name}: more than {t.interruptions_per_day} interruptions in 24 h",
                        interruptions(env, g, 86400), "COMPARISON_GT", t.interruptions_per_day, 0)],
            "OR", facts)))
    return specs


def alert_policies(env: Environment, slices: Sequence[SliceTarget],
                   gpu_pools: Sequence[GpuPoolTarget] = ()) -> list[PolicySpec]:
    """Every alert policy of the environment: per TPU slice entry idle (per slice for multi-host entries), not whole
    or not available, and interrupted repeatedly; per GPU pool idle and interrupted; in Autopilot one interruption
    policy for the cluster's node pools."""
    specs: list[PolicySpec] = []
    for s in slices:
        try:
            specs += _slice_policies(env, s)
        except ObservabilityError as error:
            raise error.on("slice", s.name) from None
    for g in gpu_pools:
        try:
            specs += _gpu_policies(env, g)
        except ObservabilityError as error:
            raise error.on("gpu_pool", g.name) from None
    if env.autopilot and (slices or gpu_pools):
        t = env.thresholds
        specs.append(PolicySpec("node-pools-interruptions", "cluster-interruptions", env.cluster, _policy(
            env, "cluster-interruptions", env.cluster, f"{env.cluster}: node pools interrupted repeatedly",
            [_condition(f"a node pool: more than {t.interruptions_per_day} interruptions in 24 h",
                        interruptions(env, None, 86400), "COMPARISON_GT", t.interruptions_per_day, 0)],
            "OR", {"groups": "", "hosts": ""})))
    keys = [s.key for s in specs]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        raise ObservabilityError(f"two alert policies would both be named {duplicate!r}: give slices and GPU pools "
                                 "names that differ")
    return specs
