"""The alert policies of a stack's slices and GPU pools, as `projects.alertPolicies` bodies (`conditionThreshold`),
and what each alert means and what to do (shared with docs/operations.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import admission
from ..catalog.metrics import ObservabilityError, limit
from .series import (
    RUNBOOK,
    Environment,
    GpuPoolTarget,
    SliceTarget,
    Thresholds,
    duty_cycle,
    interruptions,
    pool_available,
    ray_objects_ready,
    ready_hosts,
    slice_check_runs,
    slice_health,
    unschedulable_pods,
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
        "GKE's unavailability reason, when it gave one: ${{metric.label.unavailability_reason}} (MaintenanceTaint, "
        "RebootEvent, Unhealthy, ProvisioningError, ...; the slice's dashboard row charts it). Maintenance and repairs "
        "end on their own; "
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
    "slice-health": (
        "TPU slice wrong in the cluster's own check",
        "For {slice_health_minutes} minutes the in-cluster slice check (the slice-health CronJob) has found slice "
        "${{metric.label.slice}} of entry ${{metric.label.entry}} wrong: ${{metric.label.problem}}. Or the check has "
        "written nothing for {silent_minutes} minutes (the CronJob does not run, or cannot write its series).",
        "Read the check's last run: `kubectl -n {health_namespace} logs job/<latest>` lists every failing check. "
        "missing-host, host-not-ready or host-labels: a host is gone, not Ready or lacks GKE's TPU labels, and Ray "
        "cannot place the slice; GKE usually repairs the pool, else recreate the slice. webhook-env or worker-ids: "
        "the TPU webhook did not inject TPU_WORKER_ID/TPU_NAME/TPU_WORKER_HOSTNAMES, or injected duplicates; delete "
        "the slice's worker pods so the webhook sees them again. ray-head: the Ray head's dashboard does not answer. "
        "ray-view: Ray's own nodes lack the ray.io/tpu-* labels or a host: Ray schedules by them, so jobs on the "
        "slice stall; restart the slice's worker pods. No series at all: check the CronJob's pods and its Workload "
        "Identity (it may only write metrics).",
    ),
    "pending-pods": (
        "Ray pods unschedulable",
        "For {pending_pods_minutes} minutes pods in a Ray namespace ({namespaces}) could not be scheduled: namespace "
        "${{resource.label.namespace}}.",
        "`kubectl get events -n <namespace> --field-selector reason=FailedScheduling` names why. For TPU workers it "
        "is usually capacity: a stockout in the zone, TPU quota (`make plan` prints the quota the stack needs), a "
        "reservation that is used up, or a flex-start request still waiting. Free the capacity, move the slice to "
        "another zone or capacity type, or scale the worker group down.",
    ),
    "ray-not-ready": (
        "Ray cluster not ready",
        "For {unavailable_minutes} minutes ${{metric.label.kind}} ${{metric.label.namespace}}/${{metric.label.name}} "
        "has not been ready (its status says ${{metric.label.state}}): its head is down or its workers cannot start.",
        "`kubectl describe` the object and its head pod: a head pod that does not start (image, resources) or a "
        "worker group whose slice is not whole keeps it from ready. Fix the cause; KubeRay recreates the head.",
    ),
    "rayjob-failed": (
        "RayJob failed",
        "RayJob ${{metric.label.namespace}}/${{metric.label.name}} has failed (${{metric.label.state}}).",
        "Read its driver's log (`kubectl logs -n <namespace> job/<name>`) and `kubectl describe rayjob`. A job that "
        "failed for capacity (its slice was taken back) restarts from its checkpoint when submitted again.",
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
    body = {"displayName": title, "conditionThreshold": {
        "filter": series["filter"],
        "aggregations": [series["aggregation"]],
        "comparison": comparison,
        "thresholdValue": value,
        "duration": f"{seconds}s",
        "trigger": {"count": 1},
    }}
    if seconds >= 60:
        # No data is no problem: a pool scaled to zero has no nodes, and a quiet pool reports no interruptions. The
        # API refuses it on a condition of duration 0 (admission ALERT_CONDITION_MISSING_DATA), where a missing
        # point cannot hold a condition open anyway.
        body["conditionThreshold"]["evaluationMissingData"] = "EVALUATION_MISSING_DATA_INACTIVE"
    return body


SEVERITY = {"idle": "WARNING", "unavailable": "ERROR", "interruptions": "WARNING", "gpu-idle": "WARNING",
            "gpu-interruptions": "WARNING", "cluster-interruptions": "WARNING", "slice-health": "ERROR",
            "pending-pods": "WARNING", "ray-not-ready": "ERROR", "rayjob-failed": "ERROR"}
HEALTH_NAMESPACE = "slice-health"  # the slice check's namespace (render/health.py NAMESPACE)


def _absent(title: str, series: dict, seconds: int) -> dict:
    # conditionAbsent: no point at all for `duration` (at least 120 s, AlertPolicy.Condition.MetricAbsence).
    return {"displayName": title, "conditionAbsent": {
        "filter": series["filter"], "aggregations": [series["aggregation"]], "duration": f"{max(120, seconds)}s",
        "trigger": {"count": 1}}}


def runbook_anchor(heading: str) -> str:
    """The anchor a git host's Markdown view gives a heading: lower case, punctuation dropped, spaces as hyphens
    (GitHub's and GitLab's rule for headings of letters, digits, spaces and hyphens, as the runbook's are)."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def runbook_text(env: Environment, heading: str) -> str:
    """The runbook line of an alert's documentation: a URL where the stack sets monitoring.runbookBaseUrl."""
    if env.runbook_base_url:
        return f"Runbook: [{heading}]({env.runbook_base_url}/{RUNBOOK}#{runbook_anchor(heading)})."
    return f"Runbook: `{RUNBOOK}`, section \"{heading}\", in the ray-tpu-gke repository."


def _policy(env: Environment, kind: str, subject: str, title: str, conditions: list[dict], combiner: str,
            facts: Mapping[str, Any]) -> dict:
    if not 1 <= len(conditions) <= limit("conditions_per_policy"):
        raise ObservabilityError(f"a policy holds 1 to {limit('conditions_per_policy')} conditions "
                                 f"({len(conditions)} for {title})")
    heading, meaning, action = ALERTS[kind]
    t = env.thresholds
    values = {"idle": f"{t.idle_duty_cycle_percent:g}", "idle_minutes": t.idle_minutes,
              "unavailable_minutes": t.unavailable_minutes, "interruptions": t.interruptions_per_day,
              "pending_pods_minutes": t.pending_pods_minutes, "slice_health_minutes": t.slice_health_minutes,
              "silent_minutes": 2 * t.slice_health_minutes, "health_namespace": HEALTH_NAMESPACE,
              "namespaces": ", ".join(env.ray_namespaces), **facts}
    content = (f"**{heading}**: {title}.\n\n{meaning.format(**values)}\n\n**What to do**: {action.format(**values)}"
               f"\n\n{runbook_text(env, heading)} Cluster `{env.cluster}`, project `{env.project}`.")
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
        # By GKE's unavailability reason, so the incident names it (${metric.label.unavailability_reason}).
        conditions.append(_condition(f"{s.name}: multi-host pool unavailable for {t.unavailable_minutes} min",
                                     pool_available(env, s, by_reason=True), "COMPARISON_LT", 1, unavailable_s))
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


def check_alignment_seconds(t: Thresholds) -> int:
    """The alignment period of the conditions on the slice check's series: the check writes one point per run, so
    every window holds at least two runs (twice the longest time between runs). With an aligner over 60 s, four
    windows in five would hold no point and count as not failing (missing data), resetting the duration."""
    return 2 * t.slice_check_minutes * 60


def _multiple(seconds: int, period: int) -> int:
    """`seconds` rounded up to a whole number of alignment periods (a duration the windows can fill)."""
    return -(-seconds // period) * period


def _stack_policies(env: Environment, slices: Sequence[SliceTarget]) -> list[PolicySpec]:
    """The policies of the whole stack: the slice check's verdicts (and its silence), unschedulable Ray pods, Ray
    objects not ready and RayJobs failed (from the slice check's series of the objects' status)."""
    t, specs = env.thresholds, []
    facts = {"groups": "", "hosts": ""}
    if env.slice_health and slices:
        period = check_alignment_seconds(t)
        seconds = _multiple(t.slice_health_minutes * 60, period)
        facts.update(slice_health_minutes=seconds // 60, silent_minutes=2 * seconds // 60)
        conditions = [
            _condition(f"a slice wrong for {seconds // 60} min", slice_health(env, None, period),
                       "COMPARISON_LT", 1, seconds),
            _absent(f"no slice check result for {2 * seconds // 60} min", slice_check_runs(env, period),
                    2 * seconds),
        ]
        specs.append(PolicySpec("slice-health", "slice-health", env.cluster, _policy(
            env, "slice-health", env.cluster, f"{env.cluster}: TPU slice wrong in the cluster's own check",
            conditions, "OR", facts)))
        clusters = [k for k in ("RayCluster", "RayService") if k in env.ray_kinds]
        not_ready = _multiple(t.unavailable_minutes * 60, period)
        if clusters:
            specs.append(PolicySpec("ray-not-ready", "ray-not-ready", env.cluster, _policy(
                env, "ray-not-ready", env.cluster, f"{env.cluster}: Ray cluster not ready",
                [_condition(f"a {' or '.join(clusters)} not ready for {not_ready // 60} min",
                            ray_objects_ready(env, clusters, period), "COMPARISON_LT", 1, not_ready)],
                "OR", {**facts, "unavailable_minutes": not_ready // 60})))
        if "RayJob" in env.ray_kinds:
            specs.append(PolicySpec("rayjob-failed", "rayjob-failed", env.cluster, _policy(
                env, "rayjob-failed", env.cluster, f"{env.cluster}: RayJob failed",
                [_condition("a RayJob failed", ray_objects_ready(env, ["RayJob"], period), "COMPARISON_LT", 1, 0)],
                "OR", facts)))
    if env.ray_namespaces and (slices or env.ray_kinds):
        specs.append(PolicySpec("pending-pods", "pending-pods", env.cluster, _policy(
            env, "pending-pods", env.cluster, f"{env.cluster}: Ray pods unschedulable",
            [_condition(f"pods unschedulable for {t.pending_pods_minutes} min", unschedulable_pods(env),
                        "COMPARISON_GT", 0, t.pending_pods_minutes * 60)], "OR", facts)))
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
    specs += _stack_policies(env, slices)
    if env.autopilot and (slices or gpu_pools):
        t = env.thresholds
        specs.append(PolicySpec("node-pools-interruptions", "cluster-interruptions", env.cluster, _policy(
            env, "cluster-interruptions", env.cluster, f"{env.cluster}: node pools interrupted repeatedly",
            [_condition(f"a node pool: more than {t.interruptions_per_day} interruptions in 24 h",
                        interruptions(env, None, 86400), "COMPARISON_GT", t.interruptions_per_day, 0)],
            "OR", {"groups": "", "hosts": ""})))
    for spec in specs:  # what the Monitoring API refuses, before anything is registered (library path included)
        problems = admission.alert_policy_problems(spec.policy)
        if problems:
            raise ObservabilityError(f"alert policy {spec.key}: {'; '.join(problems)}")
    keys = [s.key for s in specs]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        raise ObservabilityError(f"two alert policies would both be named {duplicate!r}: give slices and GPU pools "
                                 "names that differ")
    return specs


