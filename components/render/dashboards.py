"""The Cloud Monitoring dashboards of a stack's slices and GPU pools, as the Dashboards API v1 JSON (`mosaicLayout`
tiles of `xyChart`, `text` and `collapsibleGroup` widgets; each chart a `timeSeriesQuery.timeSeriesFilter` with
`filter` and `aggregation`), spelled in camelCase as the API and the plan spell it.

Row builders (`tpu_slice_row`, `gpu_pool_row`, `ray_row`, `cluster_pools_row`) each return one dashboard row.
`dashboards` lays the rows out and splits them over several dashboards when one would hold more widgets than Cloud
Monitoring allows."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..catalog.metrics import (
    HBM_BANDWIDTH,
    HBM_TOTAL,
    HBM_USED,
    MULTI_HOST_AVAILABLE,
    RAY_ACTIVE_NODES,
    RAY_FAILED_NODES,
    RAY_NODE_CPU,
    RAY_NODE_MEMORY,
    RAY_PENDING_NODES,
    STARTUP_DURATION,
    TENSORCORE,
    TIMES_BETWEEN_INTERRUPTIONS,
    TIMES_TO_RECOVER,
    ObservabilityError,
    limit,
)
from .series import (
    BY_POOL_RESOURCE,
    RUNBOOK,
    Environment,
    GpuPoolTarget,
    SliceTarget,
    _node_query,
    duty_cycle,
    interruptions,
    pool_available,
    pool_durations,
    pool_status,
    query,
    ray_nodes,
    ray_objects_ready,
    ready_hosts,
    slice_health,
    unschedulable_pods,
    worker_groups_text,
)

# --- dashboard widgets ----------------------------------------------------------------------------------------------


def dataset(series: dict, plot: str = "LINE", axis: str = "Y1") -> dict:
    return {
        "timeSeriesQuery": {"timeSeriesFilter": series},
        "plotType": plot,
        "targetAxis": axis,
        "minAlignmentPeriod": series["aggregation"]["alignmentPeriod"],
    }


def chart(
    title: str,
    datasets: Sequence[dict],
    y_label: str,
    thresholds: Sequence[tuple[str, float]] = (),
    y2_label: Optional[str] = None,
) -> dict:
    # No chartOptions: its mode COLOR is the proto's default (ChartOptions.Mode COLOR = 0), which the API leaves out of
    # what it returns, so the plan would always differ from the live dashboard (#22.7).
    xy: dict[str, Any] = {"dataSets": list(datasets), "yAxis": {"label": y_label, "scale": "LINEAR"}}
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
            chart(
                f"Ready hosts per slice (of {hosts})",
                availability,
                "ready hosts",
                thresholds=[(f"{hosts} hosts: the whole slice", hosts)],
                y2_label=y2,
            ),
            chart(
                "TPU duty cycle (%)",
                [dataset(duty_cycle(env, target))],
                "%",
                thresholds=[
                    (f"idle below {env.thresholds.idle_duty_cycle_percent:g}%", env.thresholds.idle_duty_cycle_percent)
                ],
            ),
            chart(
                "TensorCore and HBM bandwidth utilization (%)",
                [
                    dataset(_node_query(env, target, TENSORCORE, "ALIGN_MEAN", 60, "REDUCE_MEAN")),
                    dataset(_node_query(env, target, HBM_BANDWIDTH, "ALIGN_MEAN", 60, "REDUCE_MEAN")),
                ],
                "%",
            ),
            chart(
                f"HBM used and total (bytes; {shape.chips} chips per slice)",
                [
                    dataset(_node_query(env, target, HBM_USED, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                    dataset(_node_query(env, target, HBM_TOTAL, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                ],
                "bytes",
            ),
        ]
        if env.slice_health:
            charts.append(
                chart(
                    "Slice check: 1 = labels right and whole in Ray's view, by slice and problem",
                    [dataset(slice_health(env, target))],
                    "healthy",
                    thresholds=[("healthy", 1)],
                )
            )
        if shape.multi_host and target.pools:  # Autopilot names its pools: cluster_pools_row charts them all
            charts += multi_host_charts(env, target)
        charts += _interruption_and_ray_charts(env, target)
    except ObservabilityError as error:
        raise error.on("slice", target.name) from None
    return Row(f"TPU slice {target.name}: {target.describe}", charts)


def multi_host_charts(env: Environment, target) -> list[dict]:
    """GKE's own series of multi-host TPU node pools: status and availability by reason, and the start-up, recovery
    and between-interruption durations (distributions, emitted up to an hour late: charted, never alerted on)."""
    return [
        chart(
            "Node pool status, and unavailable by GKE's reason (1 = available)",
            [
                dataset(pool_status(env, target), plot="STACKED_BAR"),
                dataset(pool_available(env, target, by_reason=True), axis="Y2"),
            ],
            "fraction of time in status",
            y2_label="available, by unavailability reason",
        ),
        chart(
            "Start-up, recovery and time between interruptions (s)",
            [
                dataset(pool_durations(env, target, STARTUP_DURATION, "ALIGN_MAX", 300)),
                dataset(pool_durations(env, target, TIMES_TO_RECOVER, "ALIGN_PERCENTILE_50")),
                dataset(pool_durations(env, target, TIMES_BETWEEN_INTERRUPTIONS, "ALIGN_PERCENTILE_50")),
            ],
            "seconds",
        ),
    ]


def _interruption_and_ray_charts(env: Environment, target) -> list:
    """What a slice's and a GPU pool's rows share: interruptions of named pools, and the Ray workers on them."""
    charts = []
    if target.pools:
        charts.append(
            chart(
                "Interruptions per hour, by type and reason",
                [dataset(interruptions(env, target, 3600, by_reason=True), plot="STACKED_BAR")],
                "interruptions",
            )
        )
    if env.ray_metrics and target.worker_groups:
        charts.append(
            chart(
                f"Ray worker pods of {worker_groups_text(target)} (active, pending)",
                [
                    dataset(ray_nodes(env, RAY_ACTIVE_NODES, target.worker_groups)),
                    dataset(ray_nodes(env, RAY_PENDING_NODES, target.worker_groups)),
                ],
                "pods",
            )
        )
    return charts


def gpu_pool_row(env: Environment, target: GpuPoolTarget) -> Row:
    """Ready nodes, GPU duty cycle, GPU memory, interruptions and the Ray workers of one GPU pool entry.

    Node-level series, as for TPU slices: kubernetes.io/container/accelerator/duty_cycle would read only while a pod
    runs, and a container series cannot be tied to its node pool."""
    try:
        charts = [
            chart("Ready nodes per pool", [dataset(ready_hosts(env, target))], "ready nodes"),
            chart(
                "GPU duty cycle (%)",
                [dataset(duty_cycle(env, target))],
                "%",
                thresholds=[
                    (f"idle below {env.thresholds.idle_duty_cycle_percent:g}%", env.thresholds.idle_duty_cycle_percent)
                ],
            ),
            chart(
                "GPU memory used and total (bytes)",
                [
                    dataset(_node_query(env, target, HBM_USED, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                    dataset(_node_query(env, target, HBM_TOTAL, "ALIGN_MEAN", 60, "REDUCE_SUM")),
                ],
                "bytes",
            ),
        ]
        charts += _interruption_and_ray_charts(env, target)
    except ObservabilityError as error:
        raise error.on("gpu_pool", target.name) from None
    return Row(f"GPU pool {target.name}: {target.describe}", charts)


def ray_row(env: Environment) -> Row:
    """The health of the cluster's Ray clusters, from the Ray metrics the Ray Operator add-on collects."""
    return Row(
        "Ray clusters (Ray metrics from the Ray Operator add-on)",
        [
            chart(
                "Ray nodes active, by namespace and worker group",
                [dataset(ray_nodes(env, RAY_ACTIVE_NODES))],
                "Ray nodes",
            ),
            chart(
                "Ray nodes pending and failed",
                [dataset(ray_nodes(env, RAY_PENDING_NODES)), dataset(ray_nodes(env, RAY_FAILED_NODES))],
                "Ray nodes",
            ),
            chart(
                "Ray node CPU utilization (%), mean per namespace",
                [dataset(query(env, RAY_NODE_CPU, "ALIGN_MEAN", 60, "REDUCE_MEAN", (("resource", "namespace"),)))],
                "%",
            ),
            chart(
                "Ray node memory used (bytes), per namespace",
                [dataset(query(env, RAY_NODE_MEMORY, "ALIGN_MEAN", 60, "REDUCE_SUM", (("resource", "namespace"),)))],
                "bytes",
            ),
        ],
    )


def ray_objects_row(env: Environment) -> Row:
    """The stack's Ray objects as the slice check reads their status, and Ray pods that cannot be scheduled."""
    charts = []
    if env.slice_health and env.ray_kinds:
        charts.append(
            chart(
                "Ray objects ready (1), by object and the state its status gives",
                [dataset(ray_objects_ready(env, env.ray_kinds))],
                "ready",
            )
        )
    if env.ray_namespaces:
        charts.append(
            chart(
                "Unschedulable pods per Ray namespace (stockout, quota, flex-start wait)",
                [dataset(unschedulable_pods(env), plot="STACKED_BAR")],
                "pods",
            )
        )
    return Row("Ray objects and pending pods", charts)


def cluster_pools_row(env: Environment) -> Row:
    """Autopilot: GKE names the node pools it creates, so pool-level series are shown for every pool of the cluster."""
    return Row(
        "Node pools of the cluster (Autopilot names them itself)",
        [
            chart(
                "Multi-host TPU node pools available (1 = whole)",
                [dataset(query(env, MULTI_HOST_AVAILABLE, "ALIGN_FRACTION_TRUE", 60, "REDUCE_MIN", BY_POOL_RESOURCE))],
                "available",
            ),
            chart(
                "Interruptions per hour, by pool, type and reason",
                [dataset(interruptions(env, None, 3600, by_reason=True), plot="STACKED_BAR")],
                "interruptions",
            ),
            *multi_host_charts(env, None),
        ],
    )


def header(
    env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget], page: int, pages: int
) -> dict:
    t = env.thresholds
    channels = (
        f"{len(env.notification_channels)} notification channel(s)"
        if env.notification_channels
        else "**none**: incidents open in Cloud Monitoring and notify nobody "
        "(set `ray-tpu-gke:monitoring.notificationChannels`)"
    )
    ray = (
        "Ray metrics from the Ray Operator add-on (Managed Service for Prometheus); the Ray node counts come from "
        "the Ray autoscaler, so only Ray clusters with autoscaling report them"
        if env.ray_metrics
        else "Ray metrics are off for this cluster (`rayOperator.monitoring: false`), so no Ray charts"
    )
    lines = [
        f"### {env.cluster} ({env.environment}): TPU slices" + (f", page {page} of {pages}" if pages > 1 else ""),
        f"Project `{env.project}`, {'Autopilot' if env.autopilot else 'Standard'} cluster `{env.cluster}`; "
        f"{len(slices)} TPU slice entr{'y' if len(slices) == 1 else 'ies'}"
        + (f", {len(gpu_pools)} GPU pool(s)" if gpu_pools else "")
        + ". Charts are per node pool"
        + ("" if env.autopilot else " (one pool is one slice)")
        + "; host series are node-level, so an idle slice "
        "shows 0%, not a gap.",
        f"Alerts: idle below {t.idle_duty_cycle_percent:g}% duty cycle for {t.idle_minutes} min; not whole or not "
        f"available for {t.unavailable_minutes} min; more than {t.interruptions_per_day} interruptions in 24 h"
        + (
            f"; the in-cluster slice check finding a slice wrong for {t.slice_health_minutes} min, a Ray cluster not "
            "ready, a RayJob failed"
            if env.slice_health
            else ""
        )
        + (f"; Ray pods unschedulable for {t.pending_pods_minutes} min" if env.ray_namespaces else "")
        + ". "
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
    objects = ray_objects_row(env)
    if objects.charts:
        rows.append(objects)
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


def prune(value: Any, key: str = "") -> Any:
    """The dashboard as the Monitoring API returns it (#22.7): proto3 JSON leaves out every field at its default
    (0, false, "", empty lists and messages), and the provider's diff keeps what the config has and the API left out
    (terraform-provider-google resource_monitoring_dashboard.go removeComputedKeys, issue #16173), so a default in the
    config is a change in every preview. Empty messages that select a widget kind (collapsibleGroup) stay."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, (dict, list)):
                v = prune(v, k)
            # Falsy and of a JSON type with a default (0, false, "", [], {}): left out; None and the rest stay.
            if v or k in KEEP_EMPTY or not isinstance(v, _DEFAULTED):
                out[k] = v
        return out
    if isinstance(value, list):
        return [prune(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


_DEFAULTED = (int, float, str, list, dict)  # bool is an int


KEEP_EMPTY = {"collapsibleGroup"}  # Widget.collapsibleGroup: its presence is the widget (CollapsibleGroup {})


def _layout(head: dict, rows: Sequence[Row]) -> list[dict]:
    columns = limit("dashboard_columns")
    per_line = columns // CHART_WIDTH
    tiles = [{"xPos": 0, "yPos": 0, "width": columns, "height": HEADER_HEIGHT, "widget": head}]
    y = HEADER_HEIGHT
    for row in rows:
        lines = max(1, math.ceil(len(row.charts) / per_line))
        height = lines * CHART_HEIGHT
        # A collapsible group holds the widgets inside the area it spans (Widget.collapsibleGroup); expanded, its
        # default (collapsed: false, which prune leaves out).
        tiles.append(
            {
                "xPos": 0,
                "yPos": y,
                "width": columns,
                "height": height,
                "widget": {"title": row.title, "collapsibleGroup": {"collapsed": False}},
            }
        )
        for i, widget in enumerate(row.charts):
            tiles.append(
                {
                    "xPos": (i % per_line) * CHART_WIDTH,
                    "yPos": y + (i // per_line) * CHART_HEIGHT,
                    "width": CHART_WIDTH,
                    "height": CHART_HEIGHT,
                    "widget": widget,
                }
            )
        y += height
    return tiles


def dashboards(env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget] = ()) -> list[dict]:
    """The environment's dashboards (Dashboards API v1 JSON), usually one; more when the rows exceed one's widgets."""
    pages = _pages(_rows(env, slices, gpu_pools))
    out = []
    for number, rows in enumerate(pages, start=1):
        name = f"{env.cluster} ({env.environment}): TPU slices" + (f" {number}/{len(pages)}" if len(pages) > 1 else "")
        out.append(
            prune(
                {
                    "displayName": name,
                    "mosaicLayout": {
                        "columns": limit("dashboard_columns"),
                        "tiles": _layout(header(env, slices, gpu_pools, number, len(pages)), rows),
                    },
                }
            )
        )
    return out


def dashboard_json(dashboard: dict) -> str:
    """The dashboard as the `dashboard_json` input: sorted keys, so a plan is byte-for-byte repeatable."""
    return json.dumps(dashboard, sort_keys=True, separators=(",", ":"))
