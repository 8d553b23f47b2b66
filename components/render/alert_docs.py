"""What each alert means and what to do, shared by the alert policies' documentation and docs/operations.md (a test
checks that every title is a section there), with each kind's severity and the runbook link of its documentation."""

from __future__ import annotations

import re

from .series import RUNBOOK, Environment

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

SEVERITY = {
    "idle": "WARNING",
    "unavailable": "ERROR",
    "interruptions": "WARNING",
    "gpu-idle": "WARNING",
    "gpu-interruptions": "WARNING",
    "cluster-interruptions": "WARNING",
    "slice-health": "ERROR",
    "pending-pods": "WARNING",
    "ray-not-ready": "ERROR",
    "rayjob-failed": "ERROR",
}
HEALTH_NAMESPACE = "slice-health"  # the slice check's namespace (render/health.py NAMESPACE)


def runbook_anchor(heading: str) -> str:
    """The anchor a git host's Markdown view gives a heading: lower case, punctuation dropped, spaces as hyphens
    (GitHub's and GitLab's rule for headings of letters, digits, spaces and hyphens, as the runbook's are)."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def runbook_text(env: Environment, heading: str) -> str:
    """The runbook line of an alert's documentation: a URL where the stack sets monitoring.runbookBaseUrl."""
    if env.runbook_base_url:
        return f"Runbook: [{heading}]({env.runbook_base_url}/{RUNBOOK}#{runbook_anchor(heading)})."
    return f'Runbook: `{RUNBOOK}`, section "{heading}", in the ray-tpu-gke repository.'
