"""The alert policies of a stack's slices and GPU pools, as `projects.alertPolicies` bodies: their conditions are
alert_conditions', what each alert means and what to do alert_docs' (shared with docs/operations.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import admission
from ..catalog.metrics import ObservabilityError, limit
from .alert_conditions import absence, multiple, promql, threshold, unschedulable_pods_query
from .alert_docs import ALERTS, HEALTH_NAMESPACE, SEVERITY, runbook_text
from .series import (
    Environment,
    GpuPoolTarget,
    SliceTarget,
    duty_cycle,
    interruptions,
    pool_available,
    ray_objects_ready,
    ready_hosts,
    slice_check_runs,
    slice_health,
    worker_groups_text,
)


@dataclass(frozen=True)
class PolicySpec:
    """One alert policy: `key` names the Pulumi resource (unique in the environment), `policy` is the API's
    AlertPolicy without `project` and `notificationChannels`, which the component adds."""

    key: str
    kind: str
    subject: str  # the slice or pool it watches, or the cluster
    policy: dict


def _policy(
    env: Environment,
    kind: str,
    subject: str,
    title: str,
    conditions: list[dict],
    combiner: str,
    facts: Mapping[str, Any],
) -> dict:
    if not 1 <= len(conditions) <= limit("conditions_per_policy"):
        raise ObservabilityError(
            f"a policy holds 1 to {limit('conditions_per_policy')} conditions ({len(conditions)} for {title})"
        )
    heading, meaning, action = ALERTS[kind]
    t = env.thresholds
    values = {
        "idle": f"{t.idle_duty_cycle_percent:g}",
        "idle_minutes": t.idle_minutes,
        "unavailable_minutes": t.unavailable_minutes,
        "interruptions": t.interruptions_per_day,
        "pending_pods_minutes": t.pending_pods_minutes,
        "slice_health_minutes": t.slice_health_minutes,
        "silent_minutes": 2 * t.slice_health_minutes,
        "health_namespace": HEALTH_NAMESPACE,
        "namespaces": ", ".join(env.ray_namespaces),
        **facts,
    }
    content = (
        f"**{heading}**: {title}.\n\n{meaning.format(**values)}\n\n**What to do**: {action.format(**values)}"
        f"\n\n{runbook_text(env, heading)} Cluster `{env.cluster}`, project `{env.project}`."
    )
    labels = dict(env.labels)
    labels.update({"alert": kind, "subject": subject})
    return {
        "displayName": f"[{env.environment}] {title}",
        "combiner": combiner,
        "conditions": conditions,
        "documentation": {
            "content": content,
            "mimeType": "text/markdown",
            "subject": f"[{env.environment}] {heading}: {subject}",
        },
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
    facts = {"groups": worker_groups_text(s), "hosts": shape.hosts}
    specs = []
    idle = f"duty cycle below {t.idle_duty_cycle_percent:g}% for {t.idle_minutes} min"
    if shape.multi_host and s.pools:
        # Cloud Monitoring combines the conditions of one policy, never pairs them per pool: a policy per slice ANDs
        # "this pool is available" with "this pool is idle".
        for index, pool in enumerate(s.pools):
            one = SliceTarget(s.name, shape, s.capacity, 1, (pool,), (), s.autoscaled, s.worker_groups)
            conditions = [
                threshold(
                    f"{pool}: multi-host pool available", pool_available(env, one, 300), "COMPARISON_GT", 0.99, idle_s
                ),
                threshold(
                    f"{pool}: {idle}", duty_cycle(env, one, 300), "COMPARISON_LT", t.idle_duty_cycle_percent, idle_s
                ),
            ]
            specs.append(
                PolicySpec(
                    f"{s.name}-idle-{index}",
                    "idle",
                    pool,
                    _policy(
                        env, "idle", pool, f"{env.cluster}: TPU slice {pool} ({s.name}) idle", conditions, "AND", facts
                    ),
                )
            )
    else:
        conditions = [
            threshold(f"{s.name}: {idle}", duty_cycle(env, s, 300), "COMPARISON_LT", t.idle_duty_cycle_percent, idle_s)
        ]
        specs.append(
            PolicySpec(
                f"{s.name}-idle",
                "idle",
                s.name,
                _policy(env, "idle", s.name, f"{env.cluster}: TPU slice {s.name} idle", conditions, "OR", facts),
            )
        )

    # Not whole: fewer Ready hosts than the slice has, per pool. A pool scaled to zero has no nodes and no series, so
    # this never fires for it; a pool that is coming up is given the same grace as any other.
    conditions = [
        threshold(
            f"{s.name}: fewer than {shape.hosts} Ready hosts for {t.unavailable_minutes} min",
            ready_hosts(env, s),
            "COMPARISON_LT",
            shape.hosts - 0.5,
            unavailable_s,
        )
    ]
    if shape.multi_host and s.pools and not s.autoscaled:
        # GKE documents the availability of multi-host pools, not what an empty (scaled-to-zero) pool reports, so it is
        # alerted on for fixed-size pools only; the Ready-hosts condition covers autoscaled ones.
        # By GKE's unavailability reason, so the incident names it (${metric.label.unavailability_reason}).
        conditions.append(
            threshold(
                f"{s.name}: multi-host pool unavailable for {t.unavailable_minutes} min",
                pool_available(env, s, by_reason=True),
                "COMPARISON_LT",
                1,
                unavailable_s,
            )
        )
    specs.append(
        PolicySpec(
            f"{s.name}-unavailable",
            "unavailable",
            s.name,
            _policy(
                env,
                "unavailable",
                s.name,
                f"{env.cluster}: TPU slice {s.name} not whole or not available",
                conditions,
                "OR",
                facts,
            ),
        )
    )

    if s.pools:
        conditions = [
            threshold(
                f"{s.name}: more than {t.interruptions_per_day} interruptions in 24 h",
                interruptions(env, s, 86400),
                "COMPARISON_GT",
                t.interruptions_per_day,
                0,
            )
        ]
        specs.append(
            PolicySpec(
                f"{s.name}-interruptions",
                "interruptions",
                s.name,
                _policy(
                    env,
                    "interruptions",
                    s.name,
                    f"{env.cluster}: TPU slice {s.name} interrupted repeatedly",
                    conditions,
                    "OR",
                    facts,
                ),
            )
        )
    return specs


def _gpu_policies(env: Environment, g: GpuPoolTarget) -> list[PolicySpec]:
    t = env.thresholds
    facts = {"groups": worker_groups_text(g)}
    specs = [
        PolicySpec(
            f"{g.name}-gpu-idle",
            "gpu-idle",
            g.name,
            _policy(
                env,
                "gpu-idle",
                g.name,
                f"{env.cluster}: GPU pool {g.name} idle",
                [
                    threshold(
                        f"{g.name}: GPU duty cycle below {t.idle_duty_cycle_percent:g}% for {t.idle_minutes} min",
                        duty_cycle(env, g, 300),
                        "COMPARISON_LT",
                        t.idle_duty_cycle_percent,
                        t.idle_minutes * 60,
                    )
                ],
                "OR",
                facts,
            ),
        )
    ]
    if g.pools:
        specs.append(
            PolicySpec(
                f"{g.name}-gpu-interruptions",
                "gpu-interruptions",
                g.name,
                _policy(
                    env,
                    "gpu-interruptions",
                    g.name,
                    f"{env.cluster}: GPU pool {g.name} interrupted repeatedly",
                    [
                        threshold(
                            f"{g.name}: more than {t.interruptions_per_day} interruptions in 24 h",
                            interruptions(env, g, 86400),
                            "COMPARISON_GT",
                            t.interruptions_per_day,
                            0,
                        )
                    ],
                    "OR",
                    facts,
                ),
            )
        )
    return specs


def _stack_policies(env: Environment, slices: Sequence[SliceTarget]) -> list[PolicySpec]:
    """The policies of the whole stack: the slice check's verdicts (and its silence), unschedulable Ray pods, Ray
    objects not ready and RayJobs failed (from the slice check's series of the objects' status)."""
    t, specs = env.thresholds, []
    facts: dict[str, str | int] = {"groups": "", "hosts": ""}
    if env.slice_health and slices:
        period, seconds = admission.slice_check_windows(t.slice_health_minutes, t.slice_check_minutes)
        facts.update(slice_health_minutes=seconds // 60, silent_minutes=2 * seconds // 60)
        conditions = [
            threshold(
                f"a slice wrong for {seconds // 60} min", slice_health(env, None, period), "COMPARISON_LT", 1, seconds
            ),
            absence(f"no slice check result for {2 * seconds // 60} min", slice_check_runs(env, period), 2 * seconds),
        ]
        specs.append(
            PolicySpec(
                "slice-health",
                "slice-health",
                env.cluster,
                _policy(
                    env,
                    "slice-health",
                    env.cluster,
                    f"{env.cluster}: TPU slice wrong in the cluster's own check",
                    conditions,
                    "OR",
                    facts,
                ),
            )
        )
        clusters = [k for k in ("RayCluster", "RayService") if k in env.ray_kinds]
        not_ready = multiple(t.unavailable_minutes * 60, period)
        if clusters:
            specs.append(
                PolicySpec(
                    "ray-not-ready",
                    "ray-not-ready",
                    env.cluster,
                    _policy(
                        env,
                        "ray-not-ready",
                        env.cluster,
                        f"{env.cluster}: Ray cluster not ready",
                        [
                            threshold(
                                f"a {' or '.join(clusters)} not ready for {not_ready // 60} min",
                                ray_objects_ready(env, clusters, period),
                                "COMPARISON_LT",
                                1,
                                not_ready,
                            )
                        ],
                        "OR",
                        {**facts, "unavailable_minutes": not_ready // 60},
                    ),
                )
            )
        if "RayJob" in env.ray_kinds:
            specs.append(
                PolicySpec(
                    "rayjob-failed",
                    "rayjob-failed",
                    env.cluster,
                    _policy(
                        env,
                        "rayjob-failed",
                        env.cluster,
                        f"{env.cluster}: RayJob failed",
                        [
                            threshold(
                                "a RayJob failed", ray_objects_ready(env, ["RayJob"], period), "COMPARISON_LT", 1, 0
                            )
                        ],
                        "OR",
                        facts,
                    ),
                )
            )
    if env.ray_namespaces and (slices or env.ray_kinds):
        # PromQL, not a threshold filter: the metric exists only once a pod has been unschedulable, and Cloud
        # Monitoring refuses a filter on a metric it does not know yet (resources/metric_waits.py).
        specs.append(
            PolicySpec(
                "pending-pods",
                "pending-pods",
                env.cluster,
                _policy(
                    env,
                    "pending-pods",
                    env.cluster,
                    f"{env.cluster}: Ray pods unschedulable",
                    [
                        promql(
                            f"pods unschedulable for {t.pending_pods_minutes} min",
                            unschedulable_pods_query(env),
                            t.pending_pods_minutes * 60,
                            60,
                        )
                    ],
                    "OR",
                    facts,
                ),
            )
        )
    return specs


def alert_policies(
    env: Environment, slices: Sequence[SliceTarget], gpu_pools: Sequence[GpuPoolTarget] = ()
) -> list[PolicySpec]:
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
    specs += _stack_policies(env, slices)
    if env.autopilot and (slices or gpu_pools):
        t = env.thresholds
        specs.append(
            PolicySpec(
                "node-pools-interruptions",
                "cluster-interruptions",
                env.cluster,
                _policy(
                    env,
                    "cluster-interruptions",
                    env.cluster,
                    f"{env.cluster}: node pools interrupted repeatedly",
                    [
                        threshold(
                            f"a node pool: more than {t.interruptions_per_day} interruptions in 24 h",
                            interruptions(env, None, 86400),
                            "COMPARISON_GT",
                            t.interruptions_per_day,
                            0,
                        )
                    ],
                    "OR",
                    {"groups": "", "hosts": ""},
                ),
            )
        )
    for spec in specs:  # what the Monitoring API refuses, before anything is registered (library path included)
        problems = admission.alert_policy_problems(spec.policy)
        if problems:
            raise ObservabilityError(f"alert policy {spec.key}: {'; '.join(problems)}")
    keys = [s.key for s in specs]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        raise ObservabilityError(
            f"two alert policies would both be named {duplicate!r}: give slices and GPU pools names that differ"
        )
    return specs
