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

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that `from ray_tpu_gke import bench` (pure Python, for training jobs in images
# without Pulumi) never imports Pulumi; `from ray_tpu_gke import RayTpuPlatform` works as before.
_LAZY = {
    "admission": None, "catalog": None, "bench": None,
    "CatalogError": "catalog", "SliceShape": "catalog", "slice_shape": "catalog",
    "GkeCluster": "resources.cluster", "SliceMonitoring": "resources.monitoring",
    "SliceMonitoringArgs": "spec.args", "RayTpuPlatform": "resources.platform",
    "RayCluster": "resources.ray", "RayJob": "resources.ray", "RayService": "resources.ray",
    "TpuSlicePools": "resources.slice_pool", "WorkerPool": "resources.worker_pool",
    "ironwood_workload_policy": "resources.workload_policy",
    **{name: "spec.args" for name in (
        "ClusterSpecArgs", "CpuPoolArgs", "GkeClusterArgs", "GpuPoolArgs", "PoolAutoscalingArgs", "RayClusterArgs",
        "RayJobArgs", "RayJobSpecArgs", "RayObjectArgs", "RayServiceArgs", "RayServiceSpecArgs",
        "RayTpuPlatformArgs", "SliceAutoscalingArgs", "StorageArgs", "TpuSliceArgs", "TpuSlicePoolsArgs",
        "WorkerGroupArgs", "WorkerPoolArgs")},
    "StackConfig": "spec.config", "ConfigError": "spec.problems", "load_stack_config": "spec.stack",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _LAZY[name]
    value = import_module(f"{__name__}.{name}") if module is None else getattr(
        import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


try:
    __version__ = version("ray-tpu-gke")
except PackageNotFoundError:  # imported from a checkout that is not installed
    __version__ = "0.3.0"

__all__ = [
    "admission", "bench", "catalog", "CatalogError", "SliceShape", "slice_shape", "ConfigError", "StackConfig",
    "load_stack_config", "SliceMonitoring", "SliceMonitoringArgs", "ironwood_workload_policy",
    "GkeCluster", "TpuSlicePools", "WorkerPool",
    "RayCluster", "RayService", "RayJob",
    "RayTpuPlatform", "ClusterSpecArgs", "CpuPoolArgs", "GkeClusterArgs", "GpuPoolArgs", "PoolAutoscalingArgs",
    "WorkerPoolArgs", "RayClusterArgs", "RayJobArgs", "RayJobSpecArgs", "RayObjectArgs",
    "RayServiceArgs", "RayServiceSpecArgs", "RayTpuPlatformArgs", "SliceAutoscalingArgs", "StorageArgs",
    "TpuSliceArgs", "TpuSlicePoolsArgs", "WorkerGroupArgs",
]
