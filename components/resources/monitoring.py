"""The stack's observability: a Cloud Monitoring dashboard and alert policies for its TPU slices (and GPU pools).

What the dashboard shows and what the policies watch is built as plain data in `observability` (pure, tested against
the metric list in `data/metrics.yaml`); this component validates its arguments, then registers one
`gcp.monitoring.Dashboard` per page of rows (one for any stack of up to five slice entries) and one
`gcp.monitoring.AlertPolicy` per policy. Nothing is installed in the cluster: GKE's system metrics and the Ray
Operator add-on's Ray metrics already carry everything read here (docs/operations.md).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pulumi
import pulumi_gcp as gcp

from .. import admission
from ..catalog import metrics
from ..render import alerts, dashboards, health, manifests, series
from ..spec.args import SliceMonitoringArgs
from ..spec.component_args import validated
from ..spec.config import StackConfig
from ..spec.models import MonitoringConfig, TpuSliceConfig
from ..spec.monitoring_args import validate_monitoring_args
from ..spec.paths import Paths
from ..spec.problems import ConfigError, Problem
from . import metric_waits
from .outputs import gathered


def _validated(
    args: Any, name: str
) -> tuple[series.Environment, MonitoringConfig, list[dict], list[alerts.PolicySpec]]:
    """The environment and monitoring settings of SliceMonitoringArgs (validated in spec/monitoring_args.py), with its
    dashboards and alert policies, built before anything is registered to prove they can be; ConfigError names every
    bad argument."""
    request = validate_monitoring_args(args, name)
    root = f"SliceMonitoring({name}).args"
    monitoring = request.monitoring
    slices = [
        (e.index, _slice_target(e.tpu_slice, e.pools, e.worker_groups, request.mode, request.cluster))
        for e in request.slices
    ]
    gpu_pools = [(e.index, _gpu_target(e.gpu_pool, e.pools, e.worker_groups)) for e in request.gpu_pools]
    env = series.Environment(
        project=request.project,
        cluster=request.cluster,
        environment=request.environment,
        autopilot=request.mode == "autopilot",
        thresholds=series.Thresholds.of(monitoring),
        notification_channels=tuple(monitoring.notification_channels),
        ray_metrics=request.ray_metrics,
        labels=tuple(sorted(request.labels.items())),
        slice_health=request.slice_health,
        ray_namespaces=request.ray_namespaces,
        ray_kinds=request.ray_kinds,
        runbook_base_url=monitoring.runbook_base_url,
    )
    slice_targets = [t for _, t in slices]
    gpu_targets = [t for _, t in gpu_pools]
    try:
        pages = dashboards.dashboards(env, slice_targets, gpu_targets)
        policies = alerts.alert_policies(env, slice_targets, gpu_targets)
    except metrics.ObservabilityError as error:
        where = root
        if monitoring.runbook_base_url and admission.ALERT_DOCUMENTATION_SIZE.id in error.message:
            where = f"{root}.monitoring.runbook_base_url"  # the one part of the documentation the stack sets
        elif error.about is not None:
            kind, subject = error.about
            section = "slices" if kind == "slice" else "gpu_pools"
            index = next(i for i, t in (slices if kind == "slice" else gpu_pools) if t.name == subject)
            where = f"{root}.{section}[{index}]"
        raise ConfigError([Problem(where, error.message)]) from None
    return env, monitoring, pages, policies


def _slice_target(
    tpu_slice: TpuSliceConfig, pools: tuple[str, ...], groups: tuple[str, ...], mode: str, cluster: str
) -> series.SliceTarget:
    # Autopilot: the labels the slice's Ray pods select, the workload policy's name (<cluster>-<slice>) included
    # (manifests.workload_policy_name), so the filters find the nodes GKE provisions for them.
    labels = (
        () if pools else tuple(sorted(manifests.slice_node_selector(tpu_slice, mode == "standard", cluster).items()))
    )
    return series.SliceTarget(
        name=tpu_slice.name,
        shape=tpu_slice.shape,
        capacity=tpu_slice.capacity,
        count=tpu_slice.count,
        pools=tuple(pools or ()),
        node_labels=labels,
        autoscaled=tpu_slice.autoscaled,
        worker_groups=tuple(dict.fromkeys(groups)),
    )


def _gpu_target(pool: Any, pools: tuple[str, ...], groups: tuple[str, ...]) -> series.GpuPoolTarget:
    labels = () if pools else ((metrics.GPU_ACCELERATOR_LABEL, pool.accelerator),)
    return series.GpuPoolTarget(
        name=pool.name,
        accelerator=pool.accelerator,
        machine_type=pool.machine_type,
        count=pool.count,
        capacity=pool.capacity,
        pools=tuple(pools or ()),
        node_labels=labels,
        autoscaled=pool.autoscaled,
        worker_groups=tuple(dict.fromkeys(groups)),
    )


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@functools.lru_cache(maxsize=None)
def _snake_key(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def policy_kwargs(policy: dict[str, Any]) -> dict[str, Any]:
    """An AlertPolicy body (API-shaped, camelCase) as pulumi-gcp's keyword arguments: the top-level field names in
    snake_case. The values stay camelCase: the SDK sends a nested key that is none of its input type's Python names
    as it is (rpc.serialize_property: `py_name_to_pulumi_name.get(k) or k`), which is the API's own spelling."""
    return {_snake_key(k): v for k, v in policy.items()}


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
                message = (
                    f"{name}: no notification channels (ray-tpu-gke:monitoring.notificationChannels): the alert "
                    "policies open incidents in Cloud Monitoring but notify nobody"
                )
                (pulumi.log.warn if env.production else pulumi.log.info)(message, self)
            for number, dashboard in enumerate(pages, start=1):
                self.dashboard_resources.append(
                    gcp.monitoring.Dashboard(
                        f"{name}-slices" + (f"-{number}" if number > 1 else ""),
                        project=env.project,
                        dashboard_json=dashboards.dashboard_json(dashboard),
                        opts=child,
                    )
                )
            watched = [metric_waits.watched_metrics(spec.policy) for spec in policies]  # once per policy
            waits = _metric_waits(name, env.project, watched, child)
            for spec, metric_types in zip(policies, watched):
                after = [w for kind, w in waits.items() if kind in metric_types]
                self.policy_resources.append(
                    gcp.monitoring.AlertPolicy(
                        f"{name}-{spec.key}",
                        project=env.project,
                        notification_channels=list(env.notification_channels),
                        **policy_kwargs(spec.policy),
                        # `child` (parent only) and the waits: built directly, not by merging (a copy per policy).
                        opts=pulumi.ResourceOptions(parent=self, depends_on=after),
                    )
                )
        self.dashboards = gathered([d.id for d in self.dashboard_resources])
        self.alert_policies = gathered([p.id for p in self.policy_resources])
        self.register_outputs({"dashboards": self.dashboards, "alertPolicies": self.alert_policies})


def _metric_waits(
    name: str, project: str, watched_per_policy: list[set[str]], child: pulumi.ResourceOptions
) -> dict[str, pulumi.Resource]:
    """Per metric type that a policy may not be created before, the wait it depends on: the slice check's custom
    metrics after their descriptors."""
    watched = set().union(*watched_per_policy)
    waits: dict[str, pulumi.Resource] = {}
    custom = watched & set(metric_waits.DESCRIPTORS)
    if custom:
        known = metric_waits.wait(f"{name}-custom-metrics-known", metric_waits.descriptors(name, project, child), child)
        waits.update(dict.fromkeys(custom, known))
    return waits


def check_platform(config: StackConfig, labels: dict[str, str], paths: Paths) -> None:
    """The stack's dashboards and alert policies built once before RayTpuPlatform registers anything, so that one the
    Monitoring API would refuse stops the deploy first; ConfigError with the platform's key paths."""
    name = config.cluster.name
    try:
        _validated(platform_args(config, labels), name)
    except ConfigError as error:
        root = f"SliceMonitoring({name}).args"
        sections = {"slices": "tpu_slices", "gpu_pools": "gpu_pools", "monitoring": "monitoring"}

        def reroot(path: str) -> str:
            match = re.fullmatch(
                re.escape(root) + r"(?:\.(slices|gpu_pools|monitoring)(?:\[(\d+)\])?(?:\.(\w+))?)?", path
            )
            if match is None or match.group(1) is None:
                return paths("monitoring")
            section, index, key = match.groups()
            parts: list[Any] = [int(index)] if index is not None else []
            return paths(sections[section], *parts, *([key] if key else []))

        raise ConfigError([Problem(reroot(p.path), p.message) for p in error.problems]) from None


def platform_args(config: StackConfig, labels: dict[str, str]) -> SliceMonitoringArgs:
    """SliceMonitoringArgs of a whole validated stack: its slice entries with the node pools TpuSlicePools creates
    (Standard mode), the Ray worker groups on each, and the stack's monitoring section."""
    from .slice_pool import pool_name

    groups: dict[str, list[str]] = {}
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            _, target = group.target
            if target is not None:  # every validated group names where it runs
                groups.setdefault(target, []).append(group.name)
    slices: list[dict[str, Any]] = []
    for tpu_slice in config.tpu_slices:
        entry: dict[str, Any] = {"slice": tpu_slice, "worker_groups": sorted(set(groups.get(tpu_slice.name, [])))}
        if config.standard:
            entry["pools"] = [pool_name(tpu_slice, index) for index in range(tpu_slice.count)]
        slices.append(entry)
    gpu_pools: list[dict[str, Any]] = []
    for pool in config.gpu_pools:
        gpu_entry: dict[str, Any] = {"pool": pool, "worker_groups": sorted(set(groups.get(pool.name, [])))}
        if config.standard:
            gpu_entry["pools"] = [pool.name]  # worker_pool.WorkerPool names its node pool after the entry
        gpu_pools.append(gpu_entry)
    # Validated: the stack's slices and pools were checked with the whole stack (spec/config.py), not again here.
    return validated(
        {
            "project": config.project,
            "cluster": config.cluster.name,
            "environment": config.environment,
            "mode": config.cluster.mode,
            "slices": slices,
            "gpu_pools": gpu_pools,
            "monitoring": config.monitoring,
            "ray_metrics": config.cluster.ray_operator.monitoring,
            "labels": labels,
            "ray_namespaces": config.namespaces,
            "ray_kinds": sorted({manifests.kind_of(o) for o in config.ray_objects}),
            "slice_health": health.runs(config),
        }
    )
