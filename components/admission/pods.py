"""Pods: reservation selectors, what KubeRay and Ray's autoscaler do with a Ray object's pods, and the label rules of
every pod the plan emits."""

from __future__ import annotations

import re

from ..catalog import ray_versions
from .names import _RFC1035, check_label_key, check_label_value
from .rules import rule

__all__ = [
    "RAY_AUTOSCALER_OWNS_REPLICAS",
    "RAYSERVICE_NONE_APPLIES_NO_CLUSTER_CHANGE",
    "RESERVATION_SELECTOR",
    "check_reservation",
    "RAYSERVICE_SURGE",
    "NEVER_RUNS",
    "RAY_AUTOSCALER_TPU",
    "RAY_AUTOSCALER_ACCELERATORS",
    "check_ray_version",
    "ray_autoscaler_accelerators",
    "pod_label_problems",
    "RAY_DRAIN_GRACE",
    "RAY_TRAIN_START_TIMEOUT",
    "RAY_MULTISLICE",
    "RAYJOB_SUSPEND_SHUTDOWN",
    "RAYJOB_SUSPEND_CLUSTER_SELECTOR",
    "RAYJOB_SUSPEND_WAIT",
]


# --- capacity, reservations, Ray -----------------------------------------------------------------------------------

RESERVATION_SELECTOR = rule(
    "gke-reservation-selector",
    "Autopilot pods select a reservation by its short name "
    "(cloud.google.com/reservation-name), a shared reservation's owner by cloud.google.com/reservation-project, "
    "with cloud.google.com/reservation-affinity: specific.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations",
)


def check_reservation(value: str) -> None:
    parts = value.split("/")
    if len(parts) == 1 and _RFC1035.fullmatch(value) and len(value) <= 63:
        return
    if (
        len(parts) == 4
        and parts[0] == "projects"
        and parts[2] == "reservations"
        and re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", parts[1])
        and _RFC1035.fullmatch(parts[3])
        and len(parts[3]) <= 63
    ):
        return
    raise ValueError("must be a reservation name, or projects/<project>/reservations/<name> when shared")


RAYSERVICE_SURGE = rule(
    "kuberay-rayservice-surge",
    "A RayService with upgradeStrategy NewCluster starts a whole second Ray cluster during "
    "an upgrade, so its TPU worker groups need twice their slices while it runs.",
    "https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html; KubeRay "
    "rayservice_types.go (NewCluster: create new upgraded cluster and switch to it when it becomes ready)",
)
NEVER_RUNS = rule(
    "kuberay-group-never-runs",
    "A worker group with replicas 0 and Ray autoscaling off never gets a pod.",
    "KubeRay raycluster_controller.go: the operator creates `replicas` pods per group; only the autoscaler "
    "changes replicas",
)

# Ray's in-tree autoscaler maps the GKE accelerator label of a TPU worker group to a generation and raises on values
# it does not know (2.55), or names its head resource after it. The map of each release is data:
# catalog.ray_versions (read from ray/autoscaler/_private/kuberay/utils.py of each wheel).
RAY_AUTOSCALER_TPU = rule(
    "ray-autoscaler-tpu-generations",
    "Ray's autoscaler knows only some GKE TPU accelerator values; a Ray cluster "
    "with autoscaling and a worker group of another generation fails in the autoscaler (tpu7x before Ray 2.56.0), "
    "and before 2.56.0 it names v5e head resources TPU-v5e-N-head, which no v5e host advertises.",
    "ray python/ray/autoscaler/_private/kuberay/utils.py gke_tpu_accelerator_to_generation (Ray 2.55.0, 2.56.0); "
    "ray-project/ray#62786",
)
RAY_AUTOSCALER_ACCELERATORS: dict[str, tuple[str, ...]] = {
    # Ray version: the accelerators its autoscaler maps. Older releases are taken to know no more than 2.55.
    version: tuple(mapping)
    for version, mapping in ray_versions.RAY_AUTOSCALER_TPU_GENERATIONS.items()
}
RAY_DRAIN_GRACE = rule(
    "ray-drain-grace-period",
    "From Ray 2.57.0 a Ray pod drains its node for RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S "
    "(30 s) on SIGTERM, and Kubernetes kills it after terminationGracePeriodSeconds (30 s unless set): TPU worker "
    "pods, and from 2.57.0 every Ray pod, get 60 s unless the stack says otherwise, and a grace period not longer "
    "than the drain is a warning.",
    "ray python/ray/_private/ray_constants.py and node.py _drain_node_before_shutdown (Ray 2.57.0, "
    "ray-project/ray#64454); https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#lifecycle",
)
RAY_TRAIN_START_TIMEOUT = rule(
    "ray-train-worker-group-start-timeout",
    "Ray Train gives up on a worker group that is not placed within "
    "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S (60 s), read in the driver's environment, and retries; a cold multi-host "
    "slice takes longer, so the head of a Ray object with TPU groups gets a longer timeout. Before Ray 2.56.0 a TPU "
    "slice reservation waits a hard-coded 100 s and a timeout fails the run.",
    "ray python/ray/train/v2/_internal/constants.py and worker_group.py (Ray 2.55.0, 2.56.0); "
    "python/ray/_private/accelerators/tpu.py reserve_tpu_slice (Ray 2.55.0); ray-project/ray#62893",
)
RAY_MULTISLICE = rule(
    "ray-multislice-whole-slices",
    "A multislice JaxTrainer reserves all of its slices before its first step (one "
    "placement group over N slices): the N slices of a worker group with replicas N must be able to exist at once, "
    "beside what other Ray objects ask of the same slice entry.",
    "ray python/ray/util/tpu.py SlicePlacementGroup and python/ray/train/v2/jax/config.py (Ray 2.55.0)",
)

RAY_AUTOSCALER_OWNS_REPLICAS = rule(
    "ray-autoscaler-owns-replicas",
    "Ray's autoscaler resizes an autoscaled RayCluster by patching the RayCluster's own worker group list "
    "(replicas, scaleStrategy.workersToDelete); server-side apply treats that list as atomic, so after the first "
    "scaling the autoscaler owns it and an apply of any other list value is a field conflict. The plan declares no "
    "replicas there (KubeRay starts the group at minReplicas) and applies the list with pulumi.com/patchForce; a "
    "replicas other than minReplicas is a warning. A RayService's or RayJob's cluster is KubeRay's own RayCluster.",
    "ray python/ray/autoscaler/_private/kuberay/node_provider.py (worker_replica_patch, worker_delete_patch, Ray "
    "2.55.0); KubeRay v1.7.0 ray.io_rayclusters.yaml (no list type on workerGroupSpecs, replicas default 0) and "
    "utils.GetWorkerGroupDesiredReplicas; https://kubernetes.io/docs/reference/using-api/server-side-apply/ "
    "(custom resources' lists are atomic); pulumi-kubernetes provider/pkg/await/await.go patchForce",
)
RAYSERVICE_NONE_APPLIES_NO_CLUSTER_CHANGE = rule(
    "rayservice-none-replaces-on-cluster-change",
    "KubeRay applies a RayService's changed cluster spec only by preparing a new cluster, which upgradeStrategy None "
    "turns off: the change is accepted and never reaches the running cluster (a Serve config change does). Under "
    "None the plan replaces the RayService, deleted first, when spec.rayClusterConfig changes.",
    "KubeRay v1.7.0 ray-operator/controllers/ray/rayservice_controller.go shouldPrepareNewCluster, "
    "isZeroDowntimeUpgradeEnabled",
)


def check_ray_version(value: str) -> None:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", value):
        raise ValueError("must be a Ray release such as 2.55.0")


def ray_autoscaler_accelerators(ray_version: str) -> tuple[str, ...]:
    return tuple(ray_versions.autoscaler_tpu_generations(ray_version))


# --- every pod the plan emits --------------------------------------------------------------------------------------


def pod_label_problems(pod_spec: dict, labels: dict | None = None) -> list[str]:
    """Node selector and label entries of a pod that Kubernetes would refuse, one line each."""
    problems = []
    for kind, mapping in (("nodeSelector", pod_spec.get("nodeSelector") or {}), ("labels", labels or {})):
        for key, value in mapping.items():
            for check, what in ((check_label_key, key), (check_label_value, value)):
                try:
                    check(what)
                except ValueError as error:
                    problems.append(f"{kind} {key}={value!r}: {what!r} {error}")
    return problems


# --- RayJob suspend ------------------------------------------------------------------------------------------------

RAYJOB_SUSPEND_SHUTDOWN = rule(
    "kuberay-rayjob-suspend-shutdown",
    "A RayJob may be suspended (spec.suspend: true) only with shutdownAfterJobFinishes: true.",
    'KubeRay v1.7.0 ray-operator/controllers/ray/utils/validation.go ValidateRayJobSpec: "a RayJob with '
    'shutdownAfterJobFinishes set to false is not allowed to be suspended"',
)
RAYJOB_SUSPEND_CLUSTER_SELECTOR = rule(
    "kuberay-rayjob-suspend-cluster-selector",
    "A RayJob on an existing RayCluster (clusterSelector) cannot be "
    "suspended; a suspended RayJob of its own gets no RayCluster until suspend is false.",
    'KubeRay v1.7.0 ray-operator/controllers/ray/utils/validation.go ValidateRayJobSpec: "the ClusterSelector mode '
    "doesn't support the suspend operation\"; rayjob_controller.go: Initializing turns to Suspending before "
    "getOrCreateRayClusterInstance",
)
RAYJOB_SUSPEND_WAIT = rule(
    "kuberay-rayjob-suspend-wait",
    "A suspended RayJob never runs, so a deploy that waits for it to run "
    "(waitForReady: the pulumi.com/waitFor annotation on jobDeploymentStatus Running) never ends.",
    "KubeRay v1.7.0 rayjob_controller.go: a suspended RayJob goes to Suspending, then Suspended, and stays there "
    "until spec.suspend is false; Pulumi Kubernetes provider, pulumi.com/waitFor: waits until the condition holds",
)
