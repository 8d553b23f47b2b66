"""What is observed (a stack's slices and GPU pools) and the Cloud Monitoring series that say how they are: filters,
aggregations and the queries of each target. Pure data, checked against the metric list (`catalog.metrics`).

Which series say what:

- A slice's hosts: node-level series (`k8s_node`). They exist while the node does, busy or not; container series end
  with the last pod, so an idle slice would read as "no data" rather than as idle. Standard mode names the slice's node
  pools (node label `cloud.google.com/gke-nodepool`); Autopilot names its node pools itself, so there a slice's nodes
  are the ones carrying the labels its Ray pods select (`manifests.slice_node_selector`).
- A slice as a whole: GKE's node pool series (`k8s_node_pool`): multi-host availability and interruptions.
- Ray: the Ray metrics the GKE Ray Operator add-on sends to Managed Service for Prometheus (`prometheus_target`), when
  the cluster's `rayOperator.monitoring` is on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from .. import catalog
from ..catalog.metrics import (
    CLUSTER_LABEL,
    DUTY_CYCLE,
    INTERRUPTIONS,
    MULTI_HOST_AVAILABLE,
    NODE_CONDITION,
    NODE_POOL_STATUS,
    NODEPOOL_LABEL,
    POD_UNSCHEDULABLE,
    RAY_OBJECT_READY,
    SLICE_HEALTHY,
    Metric,
    ObservabilityError,
    limit,
    metric_list,
)
from ..spec.models import MonitoringConfig
from ..spec.operations import cron_interval_minutes

# --- what is observed -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """When an alert fires: the values of `ray-tpu-gke:monitoring`, whose defaults `MonitoringConfig` declares."""

    idle_duty_cycle_percent: float
    idle_minutes: int
    unavailable_minutes: int
    interruptions_per_day: int
    pending_pods_minutes: int
    slice_health_minutes: int
    slice_check_minutes: int
    """The longest time between two runs of the slice check's CronJob (monitoring.sliceHealth.schedule)."""

    @classmethod
    def of(cls, monitoring: Optional[MonitoringConfig] = None) -> Thresholds:
        """The thresholds a monitoring config sets (unset: the config's defaults)."""
        monitoring = monitoring if monitoring is not None else MonitoringConfig()
        check_minutes = cron_interval_minutes(monitoring.slice_health.schedule)
        if check_minutes is None:  # validation refuses a schedule that never runs (admission.parse_cron)
            raise ValueError(f"the slice check's schedule {monitoring.slice_health.schedule!r} never runs")
        return cls(
            idle_duty_cycle_percent=monitoring.idle_duty_cycle_percent,
            idle_minutes=monitoring.idle_minutes,
            unavailable_minutes=monitoring.unavailable_minutes,
            interruptions_per_day=monitoring.interruptions_per_day,
            pending_pods_minutes=monitoring.pending_pods_minutes,
            slice_health_minutes=monitoring.slice_health.alert_after_minutes,
            slice_check_minutes=check_minutes,
        )


@dataclass(frozen=True)
class Environment:
    """The stack whose slices are observed."""

    project: str
    cluster: str
    environment: str
    autopilot: bool = False
    thresholds: Thresholds = field(default_factory=Thresholds.of)
    notification_channels: tuple[str, ...] = ()
    ray_metrics: bool = False
    """Whether the Ray Operator add-on sends Ray metrics to Managed Service for Prometheus (rayOperator.monitoring)."""
    labels: tuple[tuple[str, str], ...] = ()
    """userLabels of every alert policy (environment, team, cost-center, ...)."""
    slice_health: bool = False
    """Whether the in-cluster slice check (workloads/slice_health.py) runs and writes its series."""
    ray_namespaces: tuple[str, ...] = ()
    """Namespaces of the stack's Ray objects (the unschedulable-pods alert watches them)."""
    ray_kinds: tuple[str, ...] = ()
    """Kinds of the stack's Ray objects (RayCluster, RayService, RayJob), which the slice check reports on."""
    runbook_base_url: str | None = None
    """The https base under which the repository's files are served (monitoring.runbookBaseUrl): runbook links."""

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

RUNBOOK = "docs/operations.md"  # what each alert means and what to do, linked from the dashboards and the alerts


def worker_groups_text(target: Target) -> str:
    return ", ".join(target.worker_groups) if target.worker_groups else "none"


# --- filters and aggregations ---------------------------------------------------------------------------------------

Values = Union[str, Sequence[str]]


def _quoted(value: str) -> str:
    if not isinstance(value, str) or '"' in value or "\\" in value or not value:
        raise ObservabilityError(
            f"{value!r} cannot be matched in a Monitoring filter: a non-empty string without "
            "quotes or backslashes is needed"
        )
    return f'"{value}"'


_REGEX_SPECIAL = re.compile(r"[|()\[\]{}*+?^$]")  # what cannot be one of several alternatives (dots are bracketed)


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
        if _REGEX_SPECIAL.search(v):
            raise ObservabilityError(f"{v!r} cannot be one of several values of a Monitoring filter")
    return "monitoring.regex.full_match(" + _quoted("|".join(v.replace(".", "[.]") for v in values)) + ")"


def _label_key(key: str) -> str:
    return key if key.replace("_", "").isalnum() else f'"{key}"'


def series_filter(
    env: Environment,
    metric_type: str,
    *,
    resource: Optional[Mapping[str, Values]] = None,
    metric: Optional[Mapping[str, Values]] = None,
    user: Optional[Mapping[str, Values]] = None,
) -> str:
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
        raise ObservabilityError(
            f"the filter of {m.type} would be {len(text)} characters, more than the "
            f"{limit('filter_chars')} Cloud Monitoring accepts: too many node pools or values"
        )
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


def query(
    env: Environment,
    metric_type: str,
    aligner: str,
    period_s: int,
    reducer: Optional[str] = None,
    group_by: Iterable[Field] = (),
    **selection: Optional[Mapping[str, Values]],
) -> dict:
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
NUMERIC_ALIGNERS = {
    "ALIGN_MIN",
    "ALIGN_MAX",
    "ALIGN_MEAN",
    "ALIGN_SUM",
    "ALIGN_STDDEV",
    "ALIGN_INTERPOLATE",
    "ALIGN_PERCENT_CHANGE",
}
ANY_GAUGE_ALIGNERS = {"ALIGN_NEXT_OLDER", "ALIGN_COUNT", "ALIGN_NONE"}
DELTA_ALIGNERS = {"ALIGN_DELTA", "ALIGN_RATE"}
NUMERIC_REDUCERS = {
    "REDUCE_MEAN",
    "REDUCE_MIN",
    "REDUCE_MAX",
    "REDUCE_SUM",
    "REDUCE_STDDEV",
    "REDUCE_PERCENTILE_99",
    "REDUCE_PERCENTILE_95",
    "REDUCE_PERCENTILE_50",
    "REDUCE_PERCENTILE_05",
}
BOOL_REDUCERS = {"REDUCE_COUNT_TRUE", "REDUCE_COUNT_FALSE", "REDUCE_FRACTION_TRUE"}
# "valid for GAUGE and DELTA metrics with distribution values" (Aggregation.Aligner ALIGN_PERCENTILE_*).
DISTRIBUTION_ALIGNERS = {"ALIGN_PERCENTILE_99", "ALIGN_PERCENTILE_95", "ALIGN_PERCENTILE_50", "ALIGN_PERCENTILE_05"}


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
    if aligner in DISTRIBUTION_ALIGNERS and metric.value_type != "DISTRIBUTION":
        problems.append(f"{aligner} needs distribution values; {metric.type} is {metric.value_type}")
    if aligner not in BOOL_ALIGNERS | NUMERIC_ALIGNERS | ANY_GAUGE_ALIGNERS | DELTA_ALIGNERS | DISTRIBUTION_ALIGNERS:
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


def _node_query(
    env: Environment,
    target: Target,
    metric_type: str,
    aligner: str,
    period_s: int,
    reducer: str,
    metric: Optional[Mapping[str, Values]] = None,
) -> dict:
    return query(env, metric_type, aligner, period_s, reducer, BY_POOL, user=node_selection(target), metric=metric)


def ready_hosts(env: Environment, target: Target, period_s: int = 60) -> dict:
    """Ready hosts per node pool: the fraction of each node's samples with Ready=True, summed over the pool."""
    return _node_query(
        env,
        target,
        NODE_CONDITION,
        "ALIGN_FRACTION_TRUE",
        period_s,
        "REDUCE_SUM",
        metric={"condition": "Ready", "status": "True"},
    )


def pool_available(env: Environment, target: Optional[Target], period_s: int = 60, by_reason: bool = False) -> dict:
    """1 while GKE reports the multi-host node pool available (every node of it), per pool (and, by_reason, per
    unavailability reason: the series of a reason is 0 while GKE gives it); every pool of the cluster without a
    target."""
    group = BY_POOL_RESOURCE + ((("metric", "unavailability_reason"),) if by_reason else ())
    return query(
        env,
        MULTI_HOST_AVAILABLE,
        "ALIGN_FRACTION_TRUE",
        period_s,
        "REDUCE_MIN",
        group,
        resource=pool_selection(target) if target is not None else None,
    )


def pool_status(env: Environment, target: Optional[Target], period_s: int = 60) -> dict:
    """The fraction of the period each multi-host pool spent in each status GKE reports (RUNNING, RECONCILING, ...)."""
    return query(
        env,
        NODE_POOL_STATUS,
        "ALIGN_FRACTION_TRUE",
        period_s,
        "REDUCE_MAX",
        BY_POOL_RESOURCE + (("metric", "status"),),
        resource=pool_selection(target) if target is not None else None,
    )


def pool_durations(
    env: Environment, target: Optional[Target], metric_type: str, aligner: str, period_s: int = 3600
) -> dict:
    """A multi-host pool duration series (start-up, recovery, time between interruptions), per pool."""
    return query(
        env,
        metric_type,
        aligner,
        period_s,
        "REDUCE_MAX",
        BY_POOL_RESOURCE,
        resource=pool_selection(target) if target is not None else None,
    )


SLICE_CHECK_JOB = "slice-health"  # generic_task `job` of the slice check's series (workloads/slice_health.py JOB)


def slice_health(env: Environment, target: Optional[SliceTarget], period_s: int = 60) -> dict:
    """The in-cluster check's verdict per slice and problem (1 healthy), of one slice entry or of all."""
    return query(
        env,
        SLICE_HEALTHY,
        "ALIGN_FRACTION_TRUE",
        period_s,
        "REDUCE_MIN",
        (("metric", "entry"), ("metric", "slice"), ("metric", "problem")),
        resource={"job": SLICE_CHECK_JOB},
        metric={"entry": target.name} if target is not None else None,
    )


def slice_check_runs(env: Environment, period_s: int = 300) -> dict:
    """How many slice series the check wrote in the period, over the whole stack (absent: the check is silent)."""
    return query(env, SLICE_HEALTHY, "ALIGN_COUNT", period_s, "REDUCE_SUM", resource={"job": SLICE_CHECK_JOB})


def ray_objects_ready(env: Environment, kinds: Sequence[str], period_s: int = 60) -> dict:
    """Per Ray object of these kinds and the state its status gives: 1 ready (a RayJob: not failed)."""
    return query(
        env,
        RAY_OBJECT_READY,
        "ALIGN_FRACTION_TRUE",
        period_s,
        "REDUCE_MIN",
        (("metric", "kind"), ("metric", "namespace"), ("metric", "name"), ("metric", "state")),
        resource={"job": SLICE_CHECK_JOB},
        metric={"kind": list(kinds)},
    )


def unschedulable_pods(env: Environment, period_s: int = 60) -> dict:
    """Unschedulable pods per namespace of the stack's Ray objects (kube state metrics)."""
    if not env.ray_namespaces:
        raise ObservabilityError("no Ray namespace to watch for unschedulable pods")
    return query(
        env,
        POD_UNSCHEDULABLE,
        "ALIGN_MAX",
        period_s,
        "REDUCE_SUM",
        (("resource", "namespace"),),
        resource={"namespace": list(env.ray_namespaces)},
    )


def duty_cycle(env: Environment, target: Target, period_s: int = 60) -> dict:
    """Mean accelerator duty cycle of the pool's chips (node-level: present whether or not a pod runs)."""
    return _node_query(env, target, DUTY_CYCLE, "ALIGN_MEAN", period_s, "REDUCE_MEAN")


def interruptions(env: Environment, target: Optional[Target], period_s: int, by_reason: bool = False) -> dict:
    """Interruptions summed over `period_s`, per pool (and type and reason); every pool of the cluster without a
    target, or for an Autopilot target (GKE names those pools)."""
    group = BY_POOL_RESOURCE + (
        (("metric", "interruption_type"), ("metric", "interruption_reason")) if by_reason else ()
    )
    selection = pool_selection(target) if target is not None else None
    return query(env, INTERRUPTIONS, "ALIGN_SUM", period_s, "REDUCE_SUM", group, resource=selection)


def ray_nodes(env: Environment, metric_type: str, groups: Sequence[str] = ()) -> dict:
    """A Ray autoscaler node count per namespace and node type (worker group), optionally of some groups only."""
    return query(
        env,
        metric_type,
        "ALIGN_MEAN",
        60,
        "REDUCE_SUM",
        (("resource", "namespace"), ("metric", "node_type")),
        metric={"node_type": list(groups)} if groups else None,
    )
