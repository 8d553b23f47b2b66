"""GPU pool invariants: what the GPU catalogue, GKE's driver installation and the scheduler need."""

from __future__ import annotations

from ray_tpu_gke import catalog

from ..view import NODE_POOL, Resource
from .base import ADVISORY, MANDATORY, Messages, resource_rule

TAINT = {"key": catalog.GPU_RESOURCE, "value": "present", "effect": "NO_SCHEDULE"}


def _accelerators(pool: Resource) -> list[dict]:
    value = pool.get("nodeConfig.guestAccelerators") or []
    return [a for a in value if isinstance(a, dict)]


@resource_rule(
    "gpu-pool-shape",
    MANDATORY,
    "Every GPU pool attaches the GPUs its machine type carries, of the type the catalogue knows for it.",
    "GKE rejects a node pool whose accelerator count or type does not match the machine type (A2, A3, A4 and G2 "
    "machines come with a fixed number of GPUs); a wrong count also leaves Ray's GPU resource wrong.",
    types=(NODE_POOL,),
)
def pool_shape(pool: Resource) -> Messages:
    machine_type = pool.get("nodeConfig.machineType")
    for accelerator in _accelerators(pool):
        kind = accelerator.get("type")
        if kind not in catalog.GPUS:
            yield f"node pool {pool.name}: accelerator {kind!r} is not in the GPU catalogue ({', '.join(catalog.GPUS)})"
            continue
        machine = catalog.GPUS[kind].machine(machine_type)
        if machine is None:
            yield f"node pool {pool.name}: {machine_type} does not carry {kind}"
        elif accelerator.get("count") != machine.gpus:
            yield (
                f"node pool {pool.name}: {machine_type} carries {machine.gpus} {kind}, the pool attaches "
                f"{accelerator.get('count')}"
            )


@resource_rule(
    "gpu-driver-and-taint",
    MANDATORY,
    "Every GPU pool lets GKE install the NVIDIA driver and carries the nvidia.com/gpu NoSchedule taint.",
    "Without a driver the GPUs are invisible to pods; without the taint (GKE adds it only beside non-GPU pools, and "
    "never later) CPU pods fill the expensive GPU nodes.",
    types=(NODE_POOL,),
)
def driver_and_taint(pool: Resource) -> Messages:
    accelerators = _accelerators(pool)
    if not accelerators:
        return
    for accelerator in accelerators:
        version = (accelerator.get("gpuDriverInstallationConfig") or {}).get("gpuDriverVersion")
        if version not in ("DEFAULT", "LATEST"):
            yield f"node pool {pool.name}: gpuDriverVersion is {version!r}; expected DEFAULT or LATEST"
    if TAINT not in (pool.get("nodeConfig.taints") or []):
        yield f"node pool {pool.name}: no {TAINT['key']}={TAINT['value']}:{TAINT['effect']} taint"


@resource_rule(
    "gpu-pool-autoscaling",
    ADVISORY,
    "GPU pools outside production scale from zero.",
    "A fixed-size GPU pool bills every GPU around the clock; with autoscaling from zero, idle GPUs cost nothing.",
    types=(NODE_POOL,),
)
def autoscaling(pool: Resource) -> Messages:
    if not _accelerators(pool) or pool.production:
        return
    minimum = pool.get("autoscaling.minNodeCount", pool.get("autoscaling.totalMinNodeCount"))
    if pool.get("autoscaling") is None:
        yield f"node pool {pool.name}: {pool.get('nodeCount')} GPU node(s) always on; enable autoscaling from 0"
    elif minimum:
        yield f"node pool {pool.name}: keeps {minimum} GPU node(s) when idle; consider minNodes 0"
