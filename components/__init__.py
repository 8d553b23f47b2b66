"""ray-tpu-gke: Pulumi components for Ray on Google Cloud TPUs in GKE.

Public API (everything else is internal):

- Components, each taking `(name, args, opts)` with typed args: `RayTpuPlatform` (the whole environment),
  `GkeCluster`, `TpuSlicePools` (one node pool per TPU slice), `RayCluster`, `RayService`, `RayJob`.
- Their arguments: `RayTpuPlatformArgs`, `GkeClusterArgs`, `TpuSlicePoolsArgs`, `TpuSliceArgs`, `RayClusterArgs`,
  `RayServiceArgs`, `RayJobArgs` and the nested `*Args`.
- The TPU catalogue: `slice_shape(generation, topology, machine_type=None)` -> `SliceShape` (chips, hosts, machine
  type, node selector, minimum GKE version).
- `ConfigError` (bad arguments or configuration, every problem with its path), `load_stack_config` (the stack file
  front end) and `admission` (the rules GKE, Kubernetes, KubeRay and Ray enforce, with their sources).

Pure modules (no Pulumi import): `catalog`, `admission`, `models`, `config`, `checks`, `manifests`.
"""

from importlib.metadata import PackageNotFoundError, version

from . import admission, catalog
from .args import (ClusterSpecArgs, GkeClusterArgs, RayClusterArgs, RayJobArgs, RayJobSpecArgs, RayObjectArgs,
                   RayServiceArgs, RayServiceSpecArgs, RayTpuPlatformArgs, SliceAutoscalingArgs, StorageArgs,
                   TpuSliceArgs, TpuSlicePoolsArgs, WorkerGroupArgs)
from .catalog import CatalogError, SliceShape, slice_shape
from .cluster import GkeCluster
from .config import ConfigError, StackConfig
from .platform import RayTpuPlatform
from .ray import RayCluster, RayJob, RayService
from .slice_pool import TpuSlicePools
from .stack import load_stack_config

try:
    __version__ = version("ray-tpu-gke")
except PackageNotFoundError:  # imported from a checkout that is not installed
    __version__ = "0.2.0"

__all__ = [
    "admission", "catalog", "CatalogError", "SliceShape", "slice_shape", "ConfigError", "StackConfig",
    "load_stack_config", "GkeCluster", "TpuSlicePools", "RayCluster", "RayService", "RayJob", "RayTpuPlatform",
    "ClusterSpecArgs", "GkeClusterArgs", "RayClusterArgs", "RayJobArgs", "RayJobSpecArgs", "RayObjectArgs",
    "RayServiceArgs", "RayServiceSpecArgs", "RayTpuPlatformArgs", "SliceAutoscalingArgs", "StorageArgs",
    "TpuSliceArgs", "TpuSlicePoolsArgs", "WorkerGroupArgs",
]
