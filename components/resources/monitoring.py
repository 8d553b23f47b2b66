"""The stack's observability: a Cloud Monitoring dashboard and alert policies for its TPU slices (and GPU pools).

What the dashboard shows and what the policies watch is built as plain data in `observability` (pure, tested against
the metric list in `data/metrics.yaml`); this component validates its arguments, then registers one
`gcp.monitoring.Dashboard` per page of rows (one for any stack of up to five slice entries) and one
`gcp.monitoring.AlertPolicy` per policy. Nothing is installed in the cluster: GKE's system metrics and the Ray
Operator add-on's Ray metrics already carry everything read here (docs/operations.md).
"""

from __future__ import annotations

import re
from typing import Any, Optional, Required, TypedDict

import pulumi
import pulumi_gcp as gcp
from pydantic import ValidationError

from .. import admission, catalog
from ..catalog import metrics
from ..render import alerts, dashboards, health, manifests, series
from ..spec import checks, models
from ..spec.args import MonitoringArgs, TpuSliceArgs
from ..spec.config import StackConfig
from ..spec.models import MonitoringConfig, TpuSliceConfig, validate_as
from ..spec.paths import ClusterContext, Paths
from ..spec.problems import ConfigError, Problem, _problems, show


class MonitoredSliceArgs(TypedDict, total=False):
    """A TPU slice entry to observe, and where its nodes are."""

    slice: Required[TpuSliceArgs]
    """The slice entry (shape, count, capacity, autoscaling), as TpuSlicePools takes it."""
    pools: list[str]
    """Standard mode: the entry's node pools, one per slice (`count` names; TpuSlicePools names them
    `<name>-<index>`). Autopilot: leave out; the slice's nodes are found by the labels its Ray pods select."""
    worker_groups: list[str]
    """Names of the Ray worker groups that run on the slice (charted from the Ray autoscaler's metrics)."""


class MonitoredGpuPoolArgs(TypedDict, total=False):
    """A GPU pool entry to observe."""

    pool: Required[dict[str, Any]]
    """The GPU pool entry (name, accelerator, machine_type, count, capacity, autoscaling)."""
    pools: list[str]
    """Standard mode: its node pools. Autopilot: leave out (its nodes are found by their GPU accelerator label)."""
    worker_groups: list[str]


class SliceMonitoringArgs(TypedDict, total=False):
    """A dashboard and alert policies for the TPU slices (and GPU pools) of one GKE cluster."""

    project: Required[str]
    """Project of the cluster; the dashboard and policies are created there."""
    cluster: Required[str]
    """The cluster's name, as a plain string: the filters are written before anything is deployed."""
    environment: str
    """Environment label and prefix of every policy's name (default: the cluster's name); a name starting with `prod`
    is production: a production environment without notification channels is warned about."""
    mode: str
    """standard (default: the slices name their node pools) or autopilot."""
    slices: list[MonitoredSliceArgs]
    gpu_pools: list[MonitoredGpuPoolArgs]
    monitoring: MonitoringArgs
    """Notification channels and thresholds (MonitoringConfig defaults: idle below 5% for 60 min, unavailable for
    15 min, more than 3 interruptions a day)."""
    ray_metrics: bool
    """Whether the cluster's Ray Operator add-on collects Ray metrics (rayOperator.monitoring): adds the Ray charts."""
    labels: dict[str, str]
    """userLabels of every alert policy (GCP label keys and values)."""
    ray_namespaces: list[str]
    """Namespaces of the Ray objects: the unschedulable-pods alert watches them."""
    ray_kinds: list[str]
    """Kinds of the Ray objects on the cluster (RayCluster, RayService, RayJob): with slice_health, the not-ready
    and failed alerts watch them."""
    slice_health: bool
    """Whether the in-cluster slice check runs (SliceHealth, workloads/slice_health.py): adds its alert policies and
    charts, which read the series it writes (default false)."""


PROJECT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")


def _validated(args: Any, name: str) -> tuple[series.Environment, MonitoringConfig, list[dict],
                                               list[alerts.PolicySpec]]:
    """The environment and monitoring settings of SliceMonitoringArgs, with its dashboards and alert policies, built
    before anything is registered to prove they can be; ConfigError names every bad argument."""
    root = f"SliceMonitoring({name}).args"
    if not isinstance(args, dict):
        raise ConfigError([Problem(root, f"must be SliceMonitoringArgs, a mapping (given {show(args)})")])
    problems = [Problem(f"{root}.{key}", f"unknown argument (given {show(value)}); allowed: "
                                         f"{', '.join(SliceMonitoringArgs.__annotations__)}")
                for key, value in args.items() if key not in SliceMonitoringArgs.__annotations__]
    project, cluster = args.get("project"), args.get("cluster")
    if not (isinstance(project, str) and PROJECT_ID.fullmatch(project)):
        problems.append(Problem(f"{root}.project", f"required: the Google Cloud project ID (given {show(project)})"))
    try:
        admission.check_dns_label(cluster, 40)
    except (TypeError, ValueError) as error:
        problems.append(Problem(f"{root}.cluster", f"required: the cluster's name as a string (given {show(cluster)}): "
                                                   f"{error}"))
    environment = args.get("environment", cluster if isinstance(cluster, str) else "")
    try:
        admission.check_gcp_label_value(environment)
    except (TypeError, ValueError) as error:
        problems.append(Problem(f"{root}.environment", f"{show(environment)} is invalid: {error}"))
    mode = args.get("mode", "standard")
    if mode not in ("standard", "autopilot"):
        problems.append(Problem(f"{root}.mode", f"{show(mode)} is invalid; allowed: standard, autopilot"))
    ray_metrics, slice_health = args.get("ray_metrics", False), args.get("slice_health", False)
    for key, value in (("ray_metrics", ray_metrics), ("slice_health", slice_health)):
        if not isinstance(value, bool):
            problems.append(Problem(f"{root}.{key}", f"must be true or false (given {show(value)})"))
    labels = args.get("labels") or {}
    if not isinstance(labels, dict):
        problems.append(Problem(f"{root}.labels", f"must be a mapping of label keys to values (given {show(labels)})"))
        labels = {}
    for key, value in labels.items():
        try:
            if not (isinstance(key, str) and re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", key)):
                raise ValueError("a key is 1-63 lowercase letters, digits, - and _, starting with a letter")
            admission.check_gcp_label_value(value)
        except (TypeError, ValueError) as error:
            problems.append(Problem(f"{root}.labels.{key}", f"{show(value)} is invalid: {error}"))

    monitoring = None
    try:
        monitoring = validate_as(MonitoringConfig, args.get("monitoring") or {}, "args")
    except ValidationError as exc:
        problems += _problems(exc, f"{root}.monitoring", MonitoringConfig, "args")

    namespaces, kinds = args.get("ray_namespaces") or [], args.get("ray_kinds") or []
    for i, namespace in enumerate(namespaces if isinstance(namespaces, list) else [namespaces]):
        try:
            admission.check_namespace(namespace)
        except (TypeError, ValueError) as error:
            problems.append(Problem(f"{root}.ray_namespaces[{i}]", f"{show(namespace)} is invalid: {error}"))
    if not (isinstance(kinds, list) and set(kinds) <= {"RayCluster", "RayService", "RayJob"}):
        problems.append(Problem(f"{root}.ray_kinds", f"must be a list of RayCluster, RayService, RayJob (given "
                                                     f"{show(kinds)})"))
    pools: dict[str, str] = {}  # node pool name -> the entry that names it, across slices and GPU pools
    slices = _targets(args, "slices", root, mode, problems, pools, cluster if isinstance(cluster, str) else "")
    gpu_pools = _targets(args, "gpu_pools", root, mode, problems, pools)
    if problems:
        raise ConfigError(problems)

    env = series.Environment(
        project=project, cluster=cluster, environment=environment, autopilot=mode == "autopilot",
        thresholds=series.Thresholds(monitoring.idle_duty_cycle_percent, monitoring.idle_minutes,
                                     monitoring.unavailable_minutes, monitoring.interruptions_per_day,
                                     monitoring.pending_pods_minutes, monitoring.slice_health.alert_after_minutes),
        notification_channels=tuple(monitoring.notification_channels), ray_metrics=ray_metrics,
        labels=tuple(sorted(labels.items())), slice_health=slice_health is True,
        ray_namespaces=tuple(sorted(set(namespaces))), ray_kinds=tuple(sorted(set(kinds))),
        runbook_base_url=monitoring.runbook_base_url)
    slice_targets = [t for _, t in slices]
    gpu_targets = [t for _, t in gpu_pools]
    try:
        pages = dashboards.dashboards(env, slice_targets, gpu_targets)
        policies = alerts.alert_policies(env, slice_targets, gpu_targets)
    except metrics.ObservabilityError as error:
        where = root
        if error.about is not None:
            kind, subject = error.about
            section = "slices" if kind == "slice" else "gpu_pools"
            index = next(i for i, t in (slices if kind == "slice" else gpu_pools) if t.name == subject)
            where = f"{root}.{section}[{index}]"
        raise ConfigError([Problem(where, error.message)]) from None
    return env, monitoring, pages, policies


def _targets(args: dict, section: str, root: str, mode: str, problems: list[Problem],
             seen_pools: dict[str, str], cluster: str = "") -> list[tuple[int, Any]]:
    """The validated slice or GPU pool entries of one section, with their index; problems appended."""
    raw = args.get(section) or []
    if not isinstance(raw, list):
        problems.append(Problem(f"{root}.{section}", f"must be a list (given {show(raw)})"))
        return []
    gpu = section == "gpu_pools"
    key, model = ("pool", models.GpuPoolConfig) if gpu else ("slice", TpuSliceConfig)
    out, seen_names = [], {}
    for index, item in enumerate(raw):
        path = f"{root}.{section}[{index}]"
        if not isinstance(item, dict):
            problems.append(Problem(path, f"must be a mapping with `{key}` (given {show(item)})"))
            continue
        unknown = [k for k in item if k not in ("pool" if gpu else "slice", "pools", "worker_groups")]
        problems += [Problem(f"{path}.{k}", f"unknown argument (given {show(item[k])}); allowed: {key}, pools, "
                                            "worker_groups") for k in unknown]
        entry = None
        if item.get(key) is None:
            problems.append(Problem(f"{path}.{key}", "required argument is missing"))
        else:
            try:
                entry = validate_as(model, item[key], "args")
            except ValidationError as exc:
                problems += _problems(exc, f"{path}.{key}", model, "args")
            entry = _checked_entry(entry, item[key], path, key, mode, problems)
        if entry is not None:
            if entry.name in seen_names:
                problems.append(Problem(f"{path}.{key}.name", f"{show(entry.name)} is also "
                                                              f"{root}.{section}[{seen_names[entry.name]}]"))
            seen_names.setdefault(entry.name, index)
        pools = item.get("pools")
        if mode == "autopilot" and pools:
            problems.append(Problem(f"{path}.pools", f"Autopilot names its node pools itself: leave pools out "
                                                     f"(given {show(pools)})"))
        elif mode == "standard":
            if not isinstance(pools, list) or not pools:
                problems.append(Problem(f"{path}.pools", f"required in Standard mode: the entry's node pool names "
                                                         f"(given {show(pools)})"))
                pools = None
            else:
                for i, pool in enumerate(pools):
                    try:
                        admission.check_dns_label(pool, 40)
                    except (TypeError, ValueError) as error:
                        problems.append(Problem(f"{path}.pools[{i}]", f"{show(pool)} is invalid: {error}"))
                        pools = None
                        break
                    if pool in seen_pools:
                        problems.append(Problem(f"{path}.pools[{i}]", f"{show(pool)} is also a pool of "
                                                                      f"{root}.{seen_pools[pool]}"))
                    seen_pools.setdefault(pool, f"{section}[{index}]")
                if pools is not None and entry is not None and not gpu and len(pools) != entry.count:
                    problems.append(Problem(f"{path}.pools", f"{len(pools)} pool(s) for a count of {entry.count}: "
                                                             "one node pool per slice"))
        groups = item.get("worker_groups") or []
        if not (isinstance(groups, list) and all(isinstance(g, str) and g for g in groups)):
            problems.append(Problem(f"{path}.worker_groups", f"must be a list of worker group names (given "
                                                             f"{show(groups)})"))
            groups = []
        if entry is None or (mode == "standard" and pools is None):
            continue
        out.append((index, _gpu_target(entry, pools, groups) if gpu else _slice_target(entry, pools, groups, mode,
                                                                                        cluster)))
    if section == "gpu_pools":
        names = {t.name for _, t in out}
        for index, target in _slices_seen(args):
            if target in names:
                problems.append(Problem(f"{root}.gpu_pools", f"GPU pool {show(target)} has the name of "
                                                              f"{root}.slices[{index}]: names must differ"))
    return out


class _EntryPaths(Paths):
    """Paths of the rules written for a platform's `tpu_slices[i]`, read as this component's `slices[i].slice`."""

    def __call__(self, section, *parts):
        if section == "tpu_slices":
            return Paths.__call__(self, "slice", *parts[1:])
        return Paths.__call__(self, section, *parts)


def _checked_entry(entry: Any, raw: Any, path: str, key: str, mode: str, problems: list[Problem]) -> Any:
    """The entry when the rules across its fields hold (a topology of its generation, a reservation with capacity
    reservation, ...: the same checks as a stack file's), else None with the problems appended."""
    if isinstance(entry, TpuSliceConfig):
        found = checks.check_slices(ClusterContext(mode, None), [raw if isinstance(raw, dict) else
                                                                 entry.model_dump()], [entry],
                                    _EntryPaths("args", path), [])
        problems += found
        return None if found else entry
    if entry is not None:  # a GPU pool: its machine type must carry its accelerator
        try:
            entry.machine
        except catalog.CatalogError as error:
            problems.append(Problem(f"{path}.{key}.machine_type", f"{show(entry.machine_type)} is invalid: {error}"))
            return None
    return entry


def _slices_seen(args: dict) -> list[tuple[int, str]]:
    out = []
    for index, item in enumerate(args.get("slices") or []):
        entry = item.get("slice") if isinstance(item, dict) else None
        name = entry.get("name") if isinstance(entry, dict) else getattr(entry, "name", None)
        if isinstance(name, str):
            out.append((index, name))
    return out


def _slice_target(tpu_slice: TpuSliceConfig, pools: Optional[list[str]], groups: list[str],
                  mode: str, cluster: str) -> series.SliceTarget:
    # Autopilot: the labels the slice's Ray pods select, the workload policy's name (<cluster>-<slice>) included
    # (manifests.workload_policy_name), so the filters find the nodes GKE provisions for them.
    labels = () if pools else tuple(sorted(manifests.slice_node_selector(tpu_slice, mode == "standard",
                                                                         cluster).items()))
    return series.SliceTarget(
        name=tpu_slice.name, shape=tpu_slice.shape, capacity=tpu_slice.capacity, count=tpu_slice.count,
        pools=tuple(pools or ()), node_labels=labels, autoscaled=tpu_slice.autoscaled,
        worker_groups=tuple(dict.fromkeys(groups)))


def _gpu_target(pool: Any, pools: Optional[list[str]], groups: list[str]) -> series.GpuPoolTarget:
    labels = () if pools else ((metrics.GPU_ACCELERATOR_LABEL, pool.accelerator),)
    return series.GpuPoolTarget(
        name=pool.name, accelerator=pool.accelerator, machine_type=pool.machine_type, count=pool.count,
        capacity=pool.capacity, pools=tuple(pools or ()), node_labels=labels, autoscaled=pool.autoscaled,
        worker_groups=tuple(dict.fromkeys(groups)))


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_MAPS = {"userLabels"}  # map-valued inputs: their keys are data, not field names


def snake(value: Any) -> Any:
    """An API-shaped (camelCase) dict as pulumi-gcp's Python inputs (snake_case), which the SDK sends as camelCase."""
    if isinstance(value, dict):
        return {_CAMEL.sub("_", k).lower(): (dict(v) if k in _MAPS else snake(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


class SliceMonitoring(pulumi.ComponentResource):
    """A Cloud Monitoring dashboard (one row per TPU slice entry and GPU pool, plus the Ray clusters' health) and the
    alert policies of one environment: an idle slice, a slice not whole or not available, repeated interruptions.

    Notification channels are existing channel IDs (`projects/<project>/notificationChannels/<id>`). Without any,
    the policies still exist and open incidents in Cloud Monitoring, but notify nobody: in production (an environment
    starting with `prod`) the component warns; elsewhere it logs an info message, so a development stack may go
    without channels quietly.
    """

    dashboards: pulumi.Output[list[str]]
    """IDs of the dashboards (usually one)."""
    alert_policies: pulumi.Output[list[str]]
    """IDs of the alert policies."""

    def __init__(self, name: str, args: SliceMonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        env, monitoring, pages, policies = _validated(args, name)  # before anything is registered
        super().__init__("ray-tpu-gke:index:SliceMonitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.dashboard_resources: list[gcp.monitoring.Dashboard] = []
        self.policy_resources: list[gcp.monitoring.AlertPolicy] = []
        if monitoring.enabled:
            if not env.notification_channels:
                message = (f"{name}: no notification channels (ray-tpu-gke:monitoring.notificationChannels): the alert "
                           "policies open incidents in Cloud Monitoring but notify nobody")
                (pulumi.log.warn if env.production else pulumi.log.info)(message, self)
            for number, dashboard in enumerate(pages, start=1):
                self.dashboard_resources.append(gcp.monitoring.Dashboard(
                    f"{name}-slices" + (f"-{number}" if number > 1 else ""),
                    project=env.project,
                    dashboard_json=dashboards.dashboard_json(dashboard),
                    opts=child,
                ))
            for spec in policies:
                self.policy_resources.append(gcp.monitoring.AlertPolicy(
                    f"{name}-{spec.key}",
                    project=env.project,
                    notification_channels=list(env.notification_channels),
                    **snake(spec.policy),
                    opts=child,
                ))
        self.dashboards = pulumi.Output.all(*[d.id for d in self.dashboard_resources])
        self.alert_policies = pulumi.Output.all(*[p.id for p in self.policy_resources])
        self.register_outputs({"dashboards": self.dashboards, "alertPolicies": self.alert_policies})


def platform_args(config: StackConfig, labels: dict[str, str]) -> SliceMonitoringArgs:
    """SliceMonitoringArgs of a whole validated stack: its slice entries with the node pools TpuSlicePools creates
    (Standard mode), the Ray worker groups on each, and the stack's monitoring section."""
    from .slice_pool import pool_name

    groups: dict[str, list[str]] = {}
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            groups.setdefault(group.target[1], []).append(group.name)
    slices: list[MonitoredSliceArgs] = []
    for tpu_slice in config.tpu_slices:
        entry: MonitoredSliceArgs = {"slice": tpu_slice, "worker_groups": sorted(set(groups.get(tpu_slice.name, [])))}
        if config.standard:
            entry["pools"] = [pool_name(tpu_slice, index) for index in range(tpu_slice.count)]
        slices.append(entry)
    gpu_pools: list[MonitoredGpuPoolArgs] = []
    for pool in config.gpu_pools:
        gpu_entry: MonitoredGpuPoolArgs = {"pool": pool, "worker_groups": sorted(set(groups.get(pool.name, [])))}
        if config.standard:
            gpu_entry["pools"] = [pool.name]  # worker_pool.WorkerPool names its node pool after the entry
        gpu_pools.append(gpu_entry)
    return {
        "project": config.project, "cluster": config.cluster.name, "environment": config.environment,
        "mode": config.cluster.mode, "slices": slices, "gpu_pools": gpu_pools, "monitoring": config.monitoring,
        "ray_metrics": config.cluster.ray_operator.monitoring, "labels": labels,
        "ray_namespaces": config.namespaces, "ray_kinds": sorted({manifests.kind_of(o) for o in config.ray_objects}),
        "slice_health": health.runs(config),
    }
