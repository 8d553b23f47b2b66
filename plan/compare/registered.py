"""The comparison's config of a program that configures the library itself (plan/planned.py): what its plan
registered, read back by plan/inventory.py, written in the stack file's spelling that sides.py and serving/services.py
read (`ray-tpu-gke:tpuSlices`, `gpuPools`, `rayJobs`, `rayServices`: names, shapes, and which slice or GPU pool each
worker group runs on). So both kinds of project give the comparison one kind of input; nothing is read that the
program did not register.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel

from ..inventory import Inventory
from .sides import PROJECT, SidePlan


def _spelled(model: BaseModel) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def values(found: Inventory) -> dict:
    """The config values the comparison reads, from the slices, GPU pools and Ray objects the program registered
    (inventory.read reads every KubeRay kind as a RayClusterConfig and keeps each object's kind apart)."""
    config = found.config
    by_kind: dict[str, list[dict]] = {"RayJob": [], "RayService": []}
    for obj in config.ray_clusters:
        kind = found.kinds.get((obj.namespace, obj.name))
        if kind in by_kind:
            by_kind[kind].append(_spelled(obj))
    return {
        f"{PROJECT}:tpuSlices": [_spelled(s) for s in config.tpu_slices],
        f"{PROJECT}:gpuPools": [_spelled(p) for p in config.gpu_pools],
        f"{PROJECT}:rayJobs": by_kind["RayJob"],
        f"{PROJECT}:rayServices": by_kind["RayService"],
    }


def missing(project: str, registered: dict, planned: list[SidePlan]) -> Optional[str]:
    """One line naming what a program's registered `values` lack for a comparison (a RayJob on a TPU slice beside one
    on a GPU pool) and what to add; None when it has both."""
    kinds = {s.kind for s in planned}
    lacks = []
    if not registered.get(f"{PROJECT}:tpuSlices"):
        lacks.append("no TPU slice (TpuSlicePools, or RayTpuPlatformArgs tpu_slices)")
    if not registered.get(f"{PROJECT}:gpuPools"):
        lacks.append("no GPU pool (WorkerPool with gpu=GpuPoolArgs, or RayTpuPlatformArgs gpu_pools)")
    for kind, what in (("tpu", "TPU slice"), ("gpu", "GPU pool")):
        if kind not in kinds:
            lacks.append(f"no RayJob on a {what} (RayJob, or RayTpuPlatformArgs ray_jobs, with a worker group on it)")
    if not lacks:
        return None
    return (
        f"program {project} registers {'; '.join(lacks)}: a comparison runs a RayJob on a TPU slice beside one "
        'on a GPU pool; add what is missing (docs/compare.md, "A program of your own")'
    )
