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

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Optional

# Imported on first use (PEP 562), so that `from ray_tpu_gke import bench` (pure Python, for training jobs in images
# without Pulumi) never imports Pulumi; `from ray_tpu_gke import RayTpuPlatform` works as before. Each import is
# spelt out, so that the layout checks (tests/project/test_layout.py) see every edge.
_ARGS = (
    "ClusterSpecArgs",
    "CpuPoolArgs",
    "GkeClusterArgs",
    "GpuPoolArgs",
    "PoolAutoscalingArgs",
    "RayClusterArgs",
    "RayJobArgs",
    "RayJobSpecArgs",
    "RayObjectArgs",
    "RayServiceArgs",
    "RayServiceSpecArgs",
    "RayTpuPlatformArgs",
    "SliceAutoscalingArgs",
    "SliceMonitoringArgs",
    "StorageArgs",
    "TpuSliceArgs",
    "TpuSlicePoolsArgs",
    "WorkerGroupArgs",
    "WorkerPoolArgs",
)


def _module_of(name: str) -> tuple[Any, Optional[str]]:
    # A submodule is imported by name, not with `from . import X`, which would ask this hook for X again.
    if name == "bench":  # alone: the workloads images carry this package's __init__ and bench/ only
        from .bench import __name__ as loaded
    elif name == "admission":
        from .admission import __name__ as loaded
    elif name in ("catalog", "CatalogError", "SliceShape", "slice_shape"):
        from .catalog import __name__ as loaded
    else:
        return _generated_or_missing(name)
    return sys.modules[loaded], None if name in ("bench", "admission", "catalog") else name


def _generated_or_missing(name: str) -> tuple[Any, Optional[str]]:
    # The generated argument types, the stack loader and the components (None: no such name).
    if name in _ARGS:
        from .spec import args

        return args, name
    if name in ("StackConfig", "ConfigError", "load_stack_config"):
        from .spec import config, problems, stack

        return {"StackConfig": config, "ConfigError": problems, "load_stack_config": stack}[name], name
    from .resources import cluster, monitoring, platform, ray, slice_pool, worker_pool, workload_policy

    found = {
        "GkeCluster": cluster,
        "SliceMonitoring": monitoring,
        "RayTpuPlatform": platform,
        "RayCluster": ray,
        "RayJob": ray,
        "RayService": ray,
        "TpuSlicePools": slice_pool,
        "WorkerPool": worker_pool,
        "ironwood_workload_policy": workload_policy,
    }.get(name)
    return found, name


def __getattr__(name: str):
    if name.startswith("__") or name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _module_of(name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


try:
    __version__ = version("ray-tpu-gke")
except PackageNotFoundError:  # imported from a checkout that is not installed
    __version__ = "0.3.0"

__all__ = [
    "admission",
    "bench",
    "catalog",
    "CatalogError",
    "SliceShape",
    "slice_shape",
    "ConfigError",
    "StackConfig",
    "load_stack_config",
    "SliceMonitoring",
    "SliceMonitoringArgs",
    "ironwood_workload_policy",
    "GkeCluster",
    "TpuSlicePools",
    "WorkerPool",
    "RayCluster",
    "RayService",
    "RayJob",
    "RayTpuPlatform",
    "ClusterSpecArgs",
    "CpuPoolArgs",
    "GkeClusterArgs",
    "GpuPoolArgs",
    "PoolAutoscalingArgs",
    "WorkerPoolArgs",
    "RayClusterArgs",
    "RayJobArgs",
    "RayJobSpecArgs",
    "RayObjectArgs",
    "RayServiceArgs",
    "RayServiceSpecArgs",
    "RayTpuPlatformArgs",
    "SliceAutoscalingArgs",
    "StorageArgs",
    "TpuSliceArgs",
    "TpuSlicePoolsArgs",
    "WorkerGroupArgs",
]
