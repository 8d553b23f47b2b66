"""Synthetic stacks of N TPU slices: every generation, single- and multi-host shapes, every capacity type, Ray objects.

Deterministic (slice i always has the same shape), so two runs of one size plan the same resources. Every shape is
taken from the catalogue, and `values(n)` is a config map as the Pulumi engine hands it to the program (see
tests/helpers.minimal_values), valid for `ray_tpu_gke.spec.config.parse_stack_config`.
"""

from __future__ import annotations

from typing import Any

from ray_tpu_gke import catalog

PROJECT = "acme-ml-bench"
REGION = "us-central1"
# A zone of the region per generation; v4 is only known in us-central2, so its slices plan with a zone warning.
ZONE = {"v4": "us-central1-a", "v5e": "us-central1-a", "v5p": "us-central1-a", "v6e": "us-central1-b",
        "tpu7x": "us-central1-c"}
GENERATIONS = ("v4", "v5e", "v5p", "v6e", "tpu7x")
CAPACITIES = ("onDemand", "spot", "reservation", "flexStart")
SLICES_PER_RAY_OBJECT = 8
# Ray object kinds in turn, each in a namespace of its own.
KINDS = (("rayClusters", "train"), ("rayServices", "serving"), ("rayJobs", "batch"))


def _shapes(generation: str) -> tuple[str, ...]:
    """The generation's three smallest topologies: single-host, then multi-host where the generation has them."""
    single = [t for t in catalog.topologies(generation) if not catalog.resolve(generation, t).multi_host]
    multi = [t for t in catalog.topologies(generation) if catalog.resolve(generation, t).multi_host]
    return tuple(single[-1:] + multi[:2])


SHAPES = {g: _shapes(g) for g in GENERATIONS}


def tpu_slice(i: int) -> dict[str, Any]:
    generation = GENERATIONS[i % len(GENERATIONS)]
    shapes = SHAPES[generation]
    topology = shapes[(i // len(GENERATIONS)) % len(shapes)]
    capacity = CAPACITIES[i % len(CAPACITIES)]
    entry: dict[str, Any] = {
        "name": f"s{i:04d}-{generation}",
        "generation": generation,
        "topology": topology,
        "count": 1,
        "capacity": capacity,
        "zone": ZONE[generation],
    }
    if capacity == "reservation":
        entry["reservation"] = f"res-{generation}"
    if capacity == "flexStart" and generation == "v4":
        entry["capacity"] = "spot"  # GKE offers no flex-start for v4
    return entry


def ray_object(k: int, slices: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    key, namespace = KINDS[k % len(KINDS)]
    obj: dict[str, Any] = {
        "name": f"{namespace}-{k:03d}",
        "namespace": namespace,
        "workerGroups": [{"name": f"g-{s['name']}", "slice": s["name"], "replicas": 1, "minReplicas": 0,
                          "maxReplicas": 1} for s in slices],
    }
    if key == "rayServices":
        obj["serveConfig"] = {"applications": [{"name": "app", "import_path": "serve_app:app", "route_prefix": "/"}]}
        obj["upgradeStrategy"] = "None"  # NewCluster would need twice the slices during an upgrade
    elif key == "rayJobs":
        obj["entrypoint"] = "python train.py"
        obj["ttlSecondsAfterFinished"] = 600
    else:
        # Ray 2.56 is the first whose autoscaler knows Ironwood (tpu7x) worker groups.
        obj["autoscaling"] = {"enabled": True, "idleTimeoutSeconds": 900}
        obj["rayVersion"] = "2.56.0"
        # The image's tag names its Ray; a rayVersion that contradicts it is refused (components/spec/operations.py).
        obj["image"] = "rayproject/ray:2.56.0-py311"
    return key, obj


def values(n: int) -> dict[str, Any]:
    """The config map of a regional cluster with `n` slices and one Ray object per 8 slices (one group per slice)."""
    slices = [tpu_slice(i) for i in range(n)]
    config: dict[str, Any] = {
        "gcp:project": PROJECT,
        "gcp:region": REGION,
        "ray-tpu-gke:cluster": {
            "name": "ray-tpu-bench",
            "location": REGION,
            # Ironwood (tpu7x) needs 1.34.1-gke.3084001 or later; a minor alias lets GKE pick the newest patch.
            "minMasterVersion": "1.34",
            "deletionProtection": False,
        },
        "ray-tpu-gke:tpuSlices": slices,
        "ray-tpu-gke:rayClusters": [],
        "ray-tpu-gke:rayServices": [],
        "ray-tpu-gke:rayJobs": [],
    }
    for k, start in enumerate(range(0, n, SLICES_PER_RAY_OBJECT)):
        key, obj = ray_object(k, slices[start:start + SLICES_PER_RAY_OBJECT])
        config[f"ray-tpu-gke:{key}"].append(obj)
    return config
