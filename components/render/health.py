"""The in-cluster slice check as Kubernetes objects (pure: no Pulumi import): its Namespace, ServiceAccount
(Workload Identity to a Google service account that may only write metrics), read-only RBAC, the ConfigMap with what
the stack planned, and the CronJob that runs `python -m workloads.slice_health` in the workloads image.

The check reads what it checks and nothing else: nodes (cluster-scoped, a ClusterRole) and, in each Ray namespace,
pods and the KubeRay objects (a Role per namespace), with get, list and watch only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from .. import admission
from ..spec.config import StackConfig
from ..spec.models import TpuSliceConfig
from . import manifests

NAMESPACE = "slice-health"
SERVICE_ACCOUNT = "slice-health"
NAME = "slice-health"
CONFIG_FILE = "config.json"
CONFIG_DIR = "/etc/slice-health"
READ_ONLY = ["get", "list", "watch"]  # Kubernetes RBAC verbs that read (Kubernetes "Using RBAC Authorization")
# Workload Identity: the annotation that ties a Kubernetes service account to a Google one (GKE "Authenticate to Google
# Cloud APIs from GKE workloads").
WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"
# The repository's workloads image (workloads/Dockerfile; docs/workloads.md): <registry>/ray-tpu-gke/workloads-tpu.
WORKLOADS_IMAGE_REPOSITORY = "/ray-tpu-gke/workloads-tpu"
# Each run must end before the next starts (CronJob concurrencyPolicy Forbid skips a run while one is active).
RUN_DEADLINE_SECONDS = 240
# Autopilot's smallest pod (GKE "Resource requests in Autopilot": 250m CPU and 512Mi for general-purpose pods), which
# Standard takes as well; the check needs far less.
RESOURCES = {"cpu": "250m", "memory": "512Mi"}


class HealthError(ValueError):
    """The check cannot be built as configured: `path` is the stack key to change."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path, self.message = path, message


@dataclass(frozen=True)
class HealthPlan:
    project: str
    cluster: str
    location: str
    image: str
    schedule: str
    namespaces: tuple[str, ...]
    standard: bool
    config: dict  # what workloads/slice_health.py reads (--config)
    head_pool: str = manifests.SYSTEM_POOL

    @property
    def account_id(self) -> str:
        """The Google service account the check writes metrics as."""
        return admission.service_account_id(self.cluster, "health")

    @property
    def google_account(self) -> str:
        # A user-managed service account's email: <account id>@<project>.iam.gserviceaccount.com (IAM "Service
        # accounts", service account email format).
        return f"{self.account_id}@{self.project}.iam.gserviceaccount.com"


def workloads_image(config: StackConfig) -> Optional[str]:
    """The image the check runs in: monitoring.sliceHealth.image, else that of a Ray object on a TPU slice in the
    repository's workloads image (which holds the workloads package)."""
    chosen = config.monitoring.slice_health.image
    if chosen:
        return chosen
    for obj in config.ray_objects:
        repository = obj.image.rsplit(":", 1)[0].split("@", 1)[0]
        if repository.endswith(WORKLOADS_IMAGE_REPOSITORY) and any(g.slice for g in obj.worker_groups):
            return obj.image
    return None


def checker_config(config: StackConfig, pools: Mapping[str, Sequence[str]], ctx: manifests.RenderContext) -> dict:
    """The stack's TPU node pools (Standard) and Ray objects with their TPU worker groups, as
    ray_tpu_gke.workload.slice_checks.PoolPlan and GroupPlan read them (their to_json shape)."""
    out_pools = []
    for tpu_slice in config.tpu_slices:
        shape = tpu_slice.shape
        for pool in pools.get(tpu_slice.name, []):
            out_pools.append(
                {
                    "name": pool,
                    "slice": tpu_slice.name,
                    "accelerator": shape.accelerator,
                    "topology": shape.topology,
                    "machine_type": shape.machine_type.name,
                    "hosts": shape.hosts,
                    "autoscaled_from_zero": tpu_slice.autoscaled and tpu_slice.min_nodes == 0,
                }
            )
    objects = []
    for obj in config.ray_objects:
        manifest = manifests.ray_manifest(obj, config.targets, ctx)
        spec = manifest["spec"]
        cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec
        autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
        by_name = {g.name: g for g in obj.worker_groups}
        groups = []
        for group in manifests.tpu_worker_groups(manifest):  # every worker group: the TPU ones are checked
            slice_name = by_name[group["groupName"]].slice
            if slice_name is None:
                continue
            entry: TpuSliceConfig = config.slice(slice_name)
            shape = entry.shape
            groups.append(
                {
                    "group": group["groupName"],
                    "spec": {
                        "generation": shape.generation.name,
                        "topology": shape.topology,
                        "hosts": shape.hosts,
                        "chips_per_host": shape.chips_per_host,
                    },
                    "selector": dict(group["template"]["spec"].get("nodeSelector") or {}),
                    "replicas": manifests.group_replicas(group),
                    "min_replicas": int(group["minReplicas"]),
                    "max_replicas": int(group["maxReplicas"]),
                    "autoscaling": autoscaling,
                    "slice": entry.name,
                }
            )
        selector = (spec.get("clusterSelector") or {}).get("ray.io/cluster") if manifest["kind"] == "RayJob" else None
        objects.append(
            {
                "kind": manifest["kind"],
                "namespace": obj.namespace,
                "name": obj.name,
                "clusterSelector": selector,
                "groups": groups,
            }
        )
    return {
        "project": config.project,
        "cluster": config.cluster.name,
        "location": config.cluster.location,
        "pools": out_pools,
        "objects": objects,
    }


def runs(config: StackConfig) -> bool:
    """Whether the stack gets the check: monitoring on, monitoring.sliceHealth on, TPU slices, and an image to run in.
    Left on by default, a stack whose Ray objects all run another image goes without (health_plan refuses only an
    explicit `sliceHealth.enabled: true`)."""
    health = config.monitoring.slice_health
    if not (config.monitoring.enabled and health.enabled and config.tpu_slices):
        return False
    return workloads_image(config) is not None or "enabled" in health.model_fields_set


def health_plan(config: StackConfig, pools: Mapping[str, Sequence[str]], ctx: manifests.RenderContext) -> HealthPlan:
    image = workloads_image(config)
    if image is None:
        raise HealthError(
            "monitoring.sliceHealth.image",
            "required: no Ray object of the stack runs on a TPU slice in the repository's workloads "
            f"image (<registry>{WORKLOADS_IMAGE_REPOSITORY}:<ray version>, docs/workloads.md), which "
            "the slice check runs in; name that image here, or set monitoring.sliceHealth.enabled: "
            "false",
        )
    return HealthPlan(
        config.project,
        config.cluster.name,
        config.cluster.location,
        image,
        config.monitoring.slice_health.schedule,
        tuple(config.namespaces),
        config.standard,
        checker_config(config, pools, ctx),
        ctx.head_pool,
    )


def _meta(name: str, labels: Mapping[str, str], namespace: Optional[str] = None, **extra) -> dict:
    meta = {"name": name, "labels": {**labels, "app.kubernetes.io/name": NAME}}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


def namespace(labels: Mapping[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE, labels)}


def service_account(plan: HealthPlan, labels: Mapping[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(
            SERVICE_ACCOUNT, labels, NAMESPACE, annotations={WORKLOAD_IDENTITY_ANNOTATION: plan.google_account}
        ),
    }


def cluster_role(labels: Mapping[str, str]) -> dict:
    """Nodes are cluster-scoped: the one ClusterRole, reading nodes only."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME, labels),
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": list(READ_ONLY)}],
    }


def cluster_role_binding(labels: Mapping[str, str]) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(NAME, labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
    }


def role(ray_namespace: str, labels: Mapping[str, str]) -> dict:
    """In a Ray namespace: its pods and KubeRay objects (KubeRay CRD plural names, group ray.io), read-only."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(NAME, labels, ray_namespace),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": list(READ_ONLY)},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters", "rayservices", "rayjobs"], "verbs": list(READ_ONLY)},
        ],
    }


def role_binding(ray_namespace: str, labels: Mapping[str, str]) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(NAME, labels, ray_namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
    }


def config_map(plan: HealthPlan, labels: Mapping[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(NAME, labels, NAMESPACE),
        "data": {CONFIG_FILE: json.dumps(plan.config, sort_keys=True, indent=1)},
    }


def cron_job(plan: HealthPlan, labels: Mapping[str, str]) -> dict:
    """Every `schedule`, one pod runs the check to its end; a run still going when the next is due keeps the next
    from starting (concurrencyPolicy Forbid), a failed run is not retried (the next run is the retry)."""
    container = {
        "name": NAME,
        "image": plan.image,
        "command": ["python", "-m", "workloads.slice_health", "--config", f"{CONFIG_DIR}/{CONFIG_FILE}"],
        "resources": {"requests": dict(RESOURCES), "limits": dict(RESOURCES)},
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    pod = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "restartPolicy": "Never",
        # The Ray image's user (uid 1000, `ray`), never root.
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": NAME}}],
    }
    if plan.standard:
        pod["nodeSelector"] = {"cloud.google.com/gke-nodepool": plan.head_pool}  # the system pool, never a TPU host
    # Kubernetes batch/v1 CronJobSpec and JobSpec ("CronJob", "Jobs"): timeZone (GA in 1.27) makes the schedule UTC
    # whatever the control plane's zone; a run that cannot start within startingDeadlineSeconds is skipped, not
    # queued; backoffLimit 0 retries nothing; ttlSecondsAfterFinished removes finished Jobs and their pods.
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(NAME, labels, NAMESPACE),
        "spec": {
            "schedule": plan.schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 120,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": RUN_DEADLINE_SECONDS,
                    "ttlSecondsAfterFinished": 3600,
                    "template": {"metadata": {"labels": {"app.kubernetes.io/name": NAME}}, "spec": pod},
                }
            },
        },
    }


def objects(plan: HealthPlan, labels: Mapping[str, str]) -> list[dict]:
    """Every Kubernetes object of the check, in the order they can be created."""
    out = [namespace(labels), service_account(plan, labels), cluster_role(labels), cluster_role_binding(labels)]
    for ray_namespace in plan.namespaces:
        out += [role(ray_namespace, labels), role_binding(ray_namespace, labels)]
    return out + [config_map(plan, labels), cron_job(plan, labels)]
