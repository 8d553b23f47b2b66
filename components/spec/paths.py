"""Key paths in the spelling of each front end (stack file or Python arguments), and what the rules of other sections
need to know of the cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from .. import admission
from .models import ClusterConfig

PROJECT = "ray-tpu-gke"
# Namespaces a stack file may set keys in: this project's, and the providers' own.
CONFIG_NAMESPACES = (PROJECT, "gcp", "kubernetes", "pulumi")


# --- key paths in the spelling of each front end -------------------------------------------------------------------

# Sections of the platform: Python argument name -> stack file key.
SECTIONS = {
    "project": "gcp:project",
    "region": "gcp:region",
    "environment": f"{PROJECT}:environment",
    "team": f"{PROJECT}:team",
    "cost_center": f"{PROJECT}:costCenter",
    "cluster": f"{PROJECT}:cluster",
    "storage": f"{PROJECT}:storage",
    "tpu_slices": f"{PROJECT}:tpuSlices",
    "gpu_pools": f"{PROJECT}:gpuPools",
    "cpu_pools": f"{PROJECT}:cpuPools",
    "ray_clusters": f"{PROJECT}:rayClusters",
    "ray_services": f"{PROJECT}:rayServices",
    "ray_jobs": f"{PROJECT}:rayJobs",
    "pricing": f"{PROJECT}:pricing",
    "monitoring": f"{PROJECT}:monitoring",
}
RAY_KINDS = ("ray_clusters", "ray_services", "ray_jobs")


@dataclass(frozen=True)
class Paths:
    """How a key path reads: as the stack file spells it (`ray-tpu-gke:tpuSlices[0].minNodes`), or as Python
    arguments do (`RayTpuPlatform(p).args.tpu_slices[0].min_nodes`)."""

    style: str  # "stack" | "args"
    root: str = "args"

    def __call__(self, section: str, *parts: Union[str, int]) -> str:
        path = SECTIONS.get(section, section) if self.style == "stack" else f"{self.root}.{section}"
        for part in parts:
            if isinstance(part, int):
                path += f"[{part}]"
            else:
                path += "." + (to_camel(part) if self.style == "stack" else part)
        return path

    def key(self, name: str) -> str:
        return to_camel(name) if self.style == "stack" else name


@dataclass(frozen=True)
class EntryPaths(Paths):
    """Paths of the rules written for a platform's list entries (`tpu_slices[i]`), read as one argument of a component
    (`renames={"tpu_slices": "slice"}`: TpuSlicePools' `slice`), for the component front ends."""

    renames: tuple[tuple[str, str], ...] = ()

    def __call__(self, section: str, *parts: Union[str, int]) -> str:
        renamed = dict(self.renames).get(section)
        if renamed is not None:
            return Paths.__call__(self, renamed, *parts[1:])
        return Paths.__call__(self, section, *parts)


# --- the validated platform ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterContext:
    """What the rules of other sections need to know of the cluster, each part known where it alone is valid, so a
    bad cluster block does not hide the problems of the slices and Ray objects."""

    mode: Optional[str] = None
    location: Optional[str] = None
    min_master_version: Optional[str] = None

    @property
    def region(self) -> Optional[str]:
        return admission.region_of(self.location) if self.location else None

    @property
    def zonal(self) -> bool:
        return self.location is not None and admission.is_zone(self.location)


def _cluster_context(raw: Any, cluster: Optional[ClusterConfig], style: str) -> ClusterContext:
    if cluster is not None:
        return ClusterContext(cluster.mode, cluster.location, cluster.min_master_version)
    if not isinstance(raw, dict):
        return ClusterContext()
    fields = ClusterConfig.model_fields

    def part(name):
        key = to_camel(name) if style == "stack" else name
        value = raw.get(key, fields[name].default)
        try:
            return (
                ClusterConfig.__pydantic_validator__.validate_assignment(
                    ClusterConfig.model_construct(), name, value
                ).__dict__[name]
                if value is not None
                else None
            )
        except (ValidationError, TypeError):
            return None

    return ClusterContext(part("mode"), part("location"), part("min_master_version"))


# --- the arguments of a component used on its own ------------------------------------------------------------------
