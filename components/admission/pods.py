"""Pods: reservation selectors, what KubeRay and Ray's autoscaler do with a Ray object's pods, and the label rules of
every pod the plan emits."""

from __future__ import annotations

import re

from .names import _RFC1035, check_label_key, check_label_value
from .rules import rule

__all__ = ["RESERVATION_SELECTOR", "check_reservation", "RAYSERVICE_SURGE", "NEVER_RUNS", "RAY_AUTOSCALER_TPU",
    "RAY_AUTOSCALER_ACCELERATORS", "check_ray_version", "ray_autoscaler_accelerators", "pod_label_problems"]


# --- capacity, reservations, Ray -----------------------------------------------------------------------------------

RESERVATION_SELECTOR = rule(
    "gke-reservation-selector", "Autopilot pods select a reservation by its short name "
    "(cloud.google.com/reservation-name), a shared reservation's owner by cloud.google.com/reservation-project, "
    "with cloud.google.com/reservation-affinity: specific.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations")


def check_reservation(value: str) -> None:
    parts = value.split("/")
    if len(parts) == 1 and _RFC1035.fullmatch(value) and len(value) <= 63:
        return
    if (len(parts) == 4 and parts[0] == "projects" and parts[2] == "reservations"
            and re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", parts[1])
            and _RFC1035.fullmatch(parts[3]) and len(parts[3]) <= 63):
        return
    raise ValueError("must be a reservation name, or projects/<project>/reservations/<name> when shared")


RAYSERVICE_SURGE = rule(
    "kuberay-rayservice-surge", "A RayService with upgradeStrategy NewCluster starts a whole second Ray cluster during "
    "an upgrade, so its TPU worker groups need twice their slices while it runs.",
    "https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html; KubeRay "
    "rayservice_types.go (NewCluster: create new upgraded cluster and switch to it when it becomes ready)")
NEVER_RUNS = rule(
    "kuberay-group-never-runs", "A worker group with replicas 0 and Ray autoscaling off never gets a pod.",
    "KubeRay raycluster_controller.go: the operator creates `replicas` pods per group; only the autoscaler "
    "changes replicas")

# Ray's in-tree autoscaler maps the GKE accelerator label of a TPU worker group to a generation and raises on values
# it does not know. Ray 2.55: python/ray/autoscaler/_private/kuberay/utils.py (gke_tpu_accelerator_to_generation).
RAY_AUTOSCALER_TPU = rule(
    "ray-autoscaler-tpu-generations", "Ray's autoscaler knows only some GKE TPU accelerator values; a Ray cluster "
    "with autoscaling and a worker group of another generation fails in the autoscaler.",
    "ray python/ray/autoscaler/_private/kuberay/utils.py (Ray 2.55)")
RAY_AUTOSCALER_ACCELERATORS: dict[str, tuple[str, ...]] = {
    # Ray version: the accelerators its autoscaler maps (read from the released wheels). Older releases are taken to
    # know no more than 2.55.
    "2.55.0": ("tpu-v4-podslice", "tpu-v5-lite-device", "tpu-v5-lite-podslice", "tpu-v5p-slice", "tpu-v6e-slice"),
    # Ray 2.56.0 (ray-project/ray#62786) adds "tpu7x" to the map and stops raising on unknown values.
    "2.56.0": ("tpu-v4-podslice", "tpu-v5-lite-device", "tpu-v5-lite-podslice", "tpu-v5p-slice", "tpu-v6e-slice",
               "tpu7x"),
}


def check_ray_version(value: str) -> None:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", value):
        raise ValueError("must be a Ray release such as 2.55.0")


def _ray_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def ray_autoscaler_accelerators(ray_version: str) -> tuple[str, ...]:
    known = [v for v in RAY_AUTOSCALER_ACCELERATORS if _ray_key(v) <= _ray_key(ray_version)]
    return RAY_AUTOSCALER_ACCELERATORS[max(known or ["2.55.0"], key=_ray_key)]


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




