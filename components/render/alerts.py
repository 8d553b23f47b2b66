"""The alert policies of a stack's slices and GPU pools, as `projects.alertPolicies` bodies (`conditionThreshold`),
and what each alert means and what to do (shared with docs/operations.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..catalog.metrics import ObservabilityError, limit
from .series import (
    RUNBOOK,
    Environment,
    GpuPoolTarget,
    SliceTarget,
    duty_cycle,
    interruptions,
    pool_available,
    ready_hosts,
    worker_groups_text,
)

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
    facts = {"groups": worker_groups_text(s), "hosts": shape.hosts}
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
    facts = {"groups": worker_groups_text(g)}
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


