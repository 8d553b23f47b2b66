"""TPU node pools in a plan, as the catalogue reads them: which pools hold TPUs, their shape, hosts and chips.

A node pool holds TPUs when the catalogue knows its machine type (`nodeConfig.machineType`). Its hosts are its nodes:
the autoscaling maximum where it autoscales, else its node count. Its chips are its hosts times the chips of one host
of that machine type. No TPU number is written here: every one comes from `ray_tpu_gke.catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ray_tpu_gke import catalog
from ray_tpu_gke.render.manifests import SLICE_LABEL, SLICE_TOPOLOGY_LABEL

from .paths import ABSENT, lookup
from .replacement import NODE_POOL

# SLICE_LABEL: the tpuSlices entry a pool provisions; pools are also named <slice>-<index>.


@dataclass(frozen=True)
class PoolSize:
    """The capacity one TPU node pool holds: the `tpuSlices` entry it provisions, its hosts and chips."""

    slice: str
    hosts: int
    chips: int


def _state(step: dict) -> dict:
    return step["newState"]


def _machine_type(step: dict | None) -> catalog.MachineType | None:
    if not step or _state(step)["type"] != NODE_POOL:
        return None
    name = lookup(_state(step)["inputs"], ("nodeConfig", "machineType"))
    generation = catalog.generation_of_machine_type(name) if isinstance(name, str) else None
    return generation.machine_type(name) if generation else None


def is_tpu_pool(*steps: dict | None) -> bool:
    """Whether any of these steps is a node pool whose machine type has TPUs."""
    return any(_machine_type(step) for step in steps)


def gpus_of(step: dict | None) -> str:
    """`4 x nvidia-l4 per node` for a node pool with GPUs; empty for any other step."""
    if not step or _state(step)["type"] != NODE_POOL:
        return ""
    accelerators = lookup(_state(step)["inputs"], ("nodeConfig", "guestAccelerators"))
    if not isinstance(accelerators, list) or not accelerators:
        return ""
    return ", ".join(f"{a.get('count')} x {a.get('type')} per node" for a in accelerators if isinstance(a, dict))


def _hosts(inputs: dict) -> Any:
    """The pool's nodes: its autoscaling maximum where it autoscales, else its node count; ABSENT if neither."""
    hosts = lookup(inputs, ("autoscaling", "maxNodeCount"))
    return lookup(inputs, ("nodeCount",)) if hosts is ABSENT else hosts


def slice_of_pool(name: str) -> str:
    """The `tpuSlices` entry of a pool named `<slice>-<index>`."""
    return name.rsplit("-", 1)[0]


def summary(step: dict) -> str:
    """`ct6e-standard-4t, topology 4x4, 4 hosts, us-east5-b`: what the pool is."""
    inputs = _state(step)["inputs"]
    machine = lookup(inputs, ("nodeConfig", "machineType"))
    topology = lookup(inputs, ("placementPolicy", "tpuTopology"))
    if topology is ABSENT:
        topology = lookup(inputs, ("nodeConfig", "labels", SLICE_TOPOLOGY_LABEL))
    hosts = _hosts(inputs)
    zones = lookup(inputs, ("nodeLocations",))
    parts = [str(machine)]
    if topology is not ABSENT:
        parts.append(f"topology {topology}")
    if hosts is not ABSENT:
        parts.append(f"{hosts} host{'s' if hosts != 1 else ''}")
    if isinstance(zones, list) and zones:
        parts.append(", ".join(map(str, zones)))
    return ", ".join(parts)


def size(step: dict | None) -> PoolSize | None:
    """The pool's slice, hosts and chips; None for a pool without TPUs or without a known number of nodes."""
    machine = _machine_type(step)
    if machine is None:
        return None
    inputs = _state(step)["inputs"]
    hosts = _hosts(inputs)
    if not isinstance(hosts, int) or isinstance(hosts, bool):
        return None
    label = lookup(inputs, ("nodeConfig", "labels", SLICE_LABEL))
    name = label if isinstance(label, str) else slice_of_pool(_state(step)["name"])
    return PoolSize(name, hosts, hosts * machine.chips)
