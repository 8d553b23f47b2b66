"""ray-tpu-gke: Pulumi components for Ray on Google Cloud TPUs in GKE.

Public API (everything else is internal):

- Components, each taking `(name, args, opts)` with typed args: `RayTpuPlatform` (the whole environment),
  `GkeCluster`, `TpuSlicePools` (one node pool per TPU slice), `WorkerPool` (a GPU or CPU pool), `RayCluster`,
  `RayService`, `RayJob`, `SliceMonitoring` (a dashboard and alert policies of the slices and GPU pools);
  `ironwood_workload_policy` creates the workload policy an Autopilot multi-host Ironwood slice is placed by.
- Their arguments: `RayTpuPlatformArgs`, `GkeClusterArgs`, `TpuSlicePoolsArgs`, `TpuSliceArgs`, `RayClusterArgs`,
  `RayServiceArgs`, `RayJobArgs` and the nested `*Args`.
- The catalogue: `slice_shape(generation, topology, machine_type=None)` -> `SliceShape` (chips, hosts, machine
  type, node selector, minimum GKE version); `catalog.gpu_machine(accelerator, machine_type=None)` for GPUs.
- `ConfigError` (bad arguments or configuration, every problem with its path), `load_stack_config` (the stack file
  front end) and `admission` (the rules GKE, Kubernetes, KubeRay and Ray enforce, with their sources).

Layers, each importing only those before it: `catalog` (numbers and data tables) and `admission` (service rules),
no Pulumi; `spec` (validated declarations); `render` (pure builders); `resources` (the ComponentResources).
"""

from importlib.metadata import PackageNotFoundError, version

from . import admission, catalog
from .catalog import CatalogError, SliceShape, slice_shape
from .resources.cluster import GkeCluster
from .resources.monitoring import SliceMonitoring
from .resources.platform import RayTpuPlatform
from .resources.ray import RayCluster, RayJob, RayService
from .resources.slice_pool import TpuSlicePools
from .resources.worker_pool import WorkerPool
from .resources.workload_policy import ironwood_workload_policy
from .spec.args import (
    ClusterSpecArgs,
    CpuPoolArgs,
    GkeClusterArgs,
    GpuPoolArgs,
    PoolAutoscalingArgs,
    RayClusterArgs,
    RayJobArgs,
    RayJobSpecArgs,
    RayObjectArgs,
    RayServiceArgs,
    RayServiceSpecArgs,
    RayTpuPlatformArgs,
    SliceAutoscalingArgs,
    SliceMonitoringArgs,
    StorageArgs,
    TpuSliceArgs,
    TpuSlicePoolsArgs,
    WorkerGroupArgs,
    WorkerPoolArgs,
)
from .spec.config import StackConfig
from .spec.problems import ConfigError
from .spec.stack import load_stack_config

try:
    __version__ = version("ray-tpu-gke")
except PackageNotFoundError:  # imported from a checkout that is not installed
    __version__ = "0.3.0"

__all__ = [
    "admission", "catalog", "CatalogError", "SliceShape", "slice_shape", "ConfigError", "StackConfig",
    "load_stack_config", "SliceMonitoring", "SliceMonitoringArgs", "ironwood_workload_policy",
    "GkeCluster", "TpuSlicePools", "WorkerPool",
    "RayCluster", "RayService", "RayJob",
    "RayTpuPlatform", "ClusterSpecArgs", "CpuPoolArgs", "GkeClusterArgs", "GpuPoolArgs", "PoolAutoscalingArgs",
    "WorkerPoolArgs", "RayClusterArgs", "RayJobArgs", "RayJobSpecArgs", "RayObjectArgs",
    "RayServiceArgs", "RayServiceSpecArgs", "RayTpuPlatformArgs", "SliceAutoscalingArgs", "StorageArgs",
    "TpuSliceArgs", "TpuSlicePoolsArgs", "WorkerGroupArgs",
]
