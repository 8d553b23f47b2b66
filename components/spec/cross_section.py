"""Rules across sections of the configuration for the cluster, its TPU slices and its worker pools (a slice and its
cluster, a GPU pool and its mode), pure; those of the Ray objects are `ray_cross_section`'s.

Each function returns problems (and appends warnings) with paths in the front end's spelling; the rules themselves,
and their sources, are in `admission`.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import admission, catalog
from . import platform_rules
from .models import ClusterConfig, TpuSliceConfig
from .paths import ClusterContext, Paths
from .problems import Problem, show


def check_cluster(cluster: Optional[ClusterConfig], context: ClusterContext, paths: Paths) -> list[Problem]:
    problems = platform_rules.network(cluster, paths) + platform_rules.service_accounts(cluster, paths)
    if context.mode == "autopilot" and context.zonal:
        problems.append(
            Problem(
                paths("cluster", "location"),
                f"{show(context.location)} is a zone; Autopilot clusters "
                f"are regional: allowed: a region such as "
                f"{context.region}",
            )
        )
    if cluster is not None and cluster.system_pool.min_nodes > cluster.system_pool.max_nodes:
        pool = cluster.system_pool
        problems.append(
            Problem(
                paths("cluster", "system_pool", "min_nodes"),
                f"{pool.min_nodes} exceeds maxNodes {pool.max_nodes}; allowed: 0 to {pool.max_nodes}",
            )
        )
    return problems


def _zones_hint(generation: str, capacity: str, region: Optional[str]) -> str:
    zones = (
        admission.FLEX_START_ZONES.get(generation, ()) if capacity == "flexStart" else catalog.ZONES.get(generation, ())
    )
    what = f"TPU {generation}" + (" flex-start" if capacity == "flexStart" else "")
    local = [z for z in zones if region and z.startswith(region + "-")]
    return f"zones known to offer {what}: {', '.join(local or zones) or 'none known'}"


def _slice_shape(item: Any, path: str, paths: Paths, problems: list[Problem]) -> Optional[catalog.SliceShape]:
    """A slice's shape, judged from the raw entry so it is checked even when other keys of the slice are bad."""
    if not isinstance(item, dict):
        return None
    generation, topology = item.get("generation"), item.get("topology")
    machine_type = item.get(paths.key("machine_type"))
    if not isinstance(generation, str) or generation not in catalog.GENERATIONS or not isinstance(topology, str):
        return None  # the field error itself is reported by the model
    try:
        catalog.resolve(generation, topology)
    except catalog.CatalogError as exc:
        problems.append(Problem(f"{path}.topology", f"{show(topology)} is {exc}"))
        return None
    if machine_type is not None and not isinstance(machine_type, str):
        return None
    try:
        return catalog.resolve(generation, topology, machine_type)
    except catalog.CatalogError as exc:
        problems.append(Problem(f"{path}.{paths.key('machine_type')}", f"{show(machine_type)} is {exc}"))
        return None


def check_slices(
    context: ClusterContext, raw: Optional[list], slices: list, paths: Paths, warnings: list[str]
) -> list[Problem]:
    problems: list[Problem] = []
    seen = set()
    for i, item in enumerate(raw or []):
        path = paths("tpu_slices", i)
        shape = _slice_shape(item, path, paths, problems)
        s: Optional[TpuSliceConfig] = slices[i]
        if s is None:
            continue
        if s.name in seen:
            problems.append(Problem(f"{path}.name", f"{show(s.name)} is used by an earlier slice; names are unique"))
        seen.add(s.name)
        if s.capacity == "reservation" and s.reservation is None:
            problems.append(
                Problem(
                    paths("tpu_slices", i, "reservation"),
                    "required when capacity is reservation: the reservation name, or "
                    "projects/<project>/reservations/<name>",
                )
            )
        if s.capacity != "reservation" and s.reservation is not None:
            problems.append(
                Problem(
                    paths("tpu_slices", i, "reservation"),
                    f"{show(s.reservation)} is only allowed with capacity reservation (capacity is {show(s.capacity)})",
                )
            )
        if s.capacity == "flexStart" and s.generation in admission.FLEX_START_UNSUPPORTED:
            problems.append(
                Problem(
                    paths("tpu_slices", i, "capacity"),
                    f'"flexStart" is not offered for TPU {s.generation} '
                    f"({admission.FLEX_START.source}); allowed: onDemand, spot, reservation",
                )
            )
        problems += _slice_in_cluster(s, shape, i, context, paths, warnings)
    return problems


def _slice_in_cluster(
    s: TpuSliceConfig, shape, i: int, context: ClusterContext, paths: Paths, warnings: list[str]
) -> list[Problem]:
    problems = []
    zone_path = paths("tpu_slices", i, "zone")
    if context.location is not None:
        region = context.region
        if s.zone is not None and admission.region_of(s.zone) != region:
            problems.append(
                Problem(
                    zone_path,
                    f"{show(s.zone)} is outside the cluster's region {show(region)}; "
                    f"{_zones_hint(s.generation, s.capacity, region)}",
                )
            )
        elif s.zone is not None and context.zonal and s.zone != context.location:
            problems.append(
                Problem(
                    zone_path,
                    f"{show(s.zone)} differs from the zonal cluster's location "
                    f"{show(context.location)}; a zonal cluster's pools are in its zone",
                )
            )
        elif s.zone is None and not context.zonal and context.mode == "standard":
            problems.append(
                Problem(
                    zone_path,
                    f"required for a regional cluster: a zone of {region} that offers the "
                    f"generation; {_zones_hint(s.generation, s.capacity, region)}",
                )
            )
        zone = s.zone or (context.location if context.zonal else None)
        known = (
            admission.FLEX_START_ZONES.get(s.generation, ())
            if s.capacity == "flexStart"
            else catalog.ZONES.get(s.generation, ())
        )
        if zone and zone not in known and not problems:
            offer = f"TPU {s.generation}" + (" with flex-start" if s.capacity == "flexStart" else "")
            warnings.append(
                f"{zone_path}: {zone} is not known to offer {offer} "
                f"({_zones_hint(s.generation, s.capacity, region)}); check your quota and the Cloud TPU "
                "regions and zones page"
            )
    if context.mode == "autopilot" and s.autoscaling is not None:
        problems.append(
            Problem(paths("tpu_slices", i, "autoscaling"), "Autopilot has no node pools to autoscale; remove the key")
        )
    if context.mode == "standard":
        if s.capacity == "flexStart" and not s.autoscaled:
            problems.append(
                Problem(
                    paths("tpu_slices", i, "autoscaling"),
                    "flexStart capacity needs autoscaling: flex-start nodes are created on demand from "
                    "zero (leave the key out, or enable it)",
                )
            )
        if shape is not None and s.autoscaled:
            low = s.min_nodes
            min_path = paths("tpu_slices", i, "autoscaling", "min_nodes")
            if shape.multi_host and low not in (0, shape.hosts):
                problems.append(
                    Problem(
                        min_path,
                        f"{low} would split a {shape.hosts}-host slice; a multi-host pool "
                        f"scales atomically: allowed: 0 or {shape.hosts}",
                    )
                )
            elif low > shape.hosts:
                problems.append(
                    Problem(min_path, f"{low} exceeds the slice's {shape.hosts} host(s); allowed: 0 to {shape.hosts}")
                )
    if shape is not None and context.mode is not None:
        problems += _pin_problems(
            admission.gke_version_needs(s.generation, s.capacity, context.mode == "autopilot"),
            context,
            paths,
            f"tpuSlices[{i}]",
        )
    return problems


def _pin_problems(needs, context: ClusterContext, paths: Paths, who: str) -> list[Problem]:
    """A minMasterVersion pin older than what a slice or pool needs."""
    pin = context.min_master_version
    return [
        Problem(
            paths("cluster", "min_master_version"),
            f"{show(pin)} is older than {need.reason} ({who}) needs; allowed: {need.version} or later, or "
            "leave it unset for the release channel",
        )
        for need in needs
        if pin and not admission.version_satisfies(pin, need.version)
    ]


def check_worker_pools(context: ClusterContext, lists: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    """GPU and CPU pools: names unique among every pool the cluster gets, machine types that carry the GPU, capacity
    the machine is sold with, zones, autoscaling bounds and the GKE version each GPU needs."""
    problems: list[Problem] = []
    taken = {"system": "the system pool"}
    for s in lists["tpu_slices"]:
        if s is not None:
            taken.update({f"{s.name}-{index}": f"a node pool of slice {s.name}" for index in range(s.count)})
            taken.setdefault(s.name, f"slice {s.name}")
    for section in ("gpu_pools", "cpu_pools"):
        for i, pool in enumerate(lists[section]):
            if pool is None:
                continue
            if pool.name in taken:
                problems.append(
                    Problem(
                        paths(section, i, "name"),
                        f"{show(pool.name)} is already {taken[pool.name]}; pool names are unique in the cluster",
                    )
                )
            taken[pool.name] = f"pool {pool.name}"
            problems += _pool_bounds(pool, section, i, context, paths)
            if section == "gpu_pools":
                problems += _gpu_pool(pool, i, context, paths, warnings)
            elif (machine := admission.cpu_machine(pool.machine_type)) and admission.node_worker_resources(
                *machine, False
            )[0] < 1:
                # What the node allocates less GKE's agents leaves no whole vCPU: the worker would ask for cpu '0'.
                problems.append(
                    Problem(
                        paths(section, i, "machine_type"),
                        f"{show(pool.machine_type)} leaves no "
                        f"whole vCPU for a Ray worker once GKE's reservations and agents are taken "
                        f"({admission.ALLOCATABLE.id}, {admission.NODE_AGENTS.id}); allowed: a "
                        "machine type of 4 vCPUs or more, such as e2-standard-4",
                    )
                )
            elif context.mode == "autopilot" and machine:
                # Its workers select no compute class, so Autopilot places them in general-purpose.
                cpu, memory = admission.node_worker_resources(*machine, False)
                too_big = admission.autopilot_class_problem(catalog.DEFAULT_CLASS, cpu, memory)
                if too_big:
                    problems.append(
                        Problem(
                            paths(section, i, "machine_type"),
                            f"{show(pool.machine_type)}: its Ray worker pod, {too_big}; choose a smaller machine type",
                        )
                    )
    return problems


def _pool_bounds(pool, section: str, i: int, context: ClusterContext, paths: Paths) -> list[Problem]:
    problems = []
    if context.mode == "autopilot" and pool.autoscaling is not None:
        problems.append(
            Problem(paths(section, i, "autoscaling"), "Autopilot has no node pools to autoscale; remove the key")
        )
    elif pool.autoscaled and pool.min_nodes > pool.max_nodes:
        problems.append(
            Problem(
                paths(section, i, "autoscaling", "min_nodes"),
                f"{pool.min_nodes} exceeds the pool's {pool.max_nodes} nodes; allowed: 0 to {pool.max_nodes}",
            )
        )
    if pool.zone is None and context.mode == "standard" and context.location is not None and not context.zonal:
        # A pool without node locations runs node_count (and initial_node_count) in every zone of a regional cluster
        # (pulumi-gcp container.NodePool node_count: "The number of nodes per instance group"; initial_node_count:
        # "In regional or multi-zonal clusters, this is the number of nodes per zone"), so every pool kind names
        # its zone and the count the stack says is the count GKE creates, prices and the demand checks count.
        what = f"offers {pool.accelerator}" if section == "gpu_pools" else f"sells {pool.machine_type}"
        problems.append(
            Problem(
                paths(section, i, "zone"),
                f"required for a regional cluster: a zone of "
                f"{context.region} that {what} (without one, GKE creates "
                f"{paths.key('count')} nodes in every zone of the region)",
            )
        )
    if context.location is not None and pool.zone is not None and admission.region_of(pool.zone) != context.region:
        problems.append(
            Problem(
                paths(section, i, "zone"), f"{show(pool.zone)} is outside the cluster's region {show(context.region)}"
            )
        )
    elif pool.zone is not None and context.zonal and pool.zone != context.location:
        problems.append(
            Problem(
                paths(section, i, "zone"),
                f"{show(pool.zone)} differs from the zonal cluster's location {show(context.location)}",
            )
        )
    return problems


def _autopilot_maximum(path: str, machine: str, vcpus: float, memory_gib: float) -> str:
    """Autopilot rejects a pod above its accelerator's maximum requests (rule gke-autopilot-max-requests); no
    readable source gives those of every accelerator, so a GPU worker sized from the whole machine is flagged."""
    return (
        f"{path}: Autopilot worker pods are sized from all of {machine} ({vcpus:g} vCPUs, {memory_gib:g} GB) "
        "less GKE's reservations; Autopilot rejects requests above its maximum for the accelerator, for which no "
        "verified figure is recorded here: check with kubectl apply --dry-run=server"
    )


def _gpu_pool(pool, i: int, context: ClusterContext, paths: Paths, warnings: list[str]) -> list[Problem]:
    problems = []
    machine_path = paths("gpu_pools", i, "machine_type")
    try:
        machine = catalog.gpu_machine(pool.accelerator, pool.machine_type)
    except catalog.CatalogError as error:
        return [Problem(machine_path, f"{show(pool.machine_type)} is {error}")]
    if pool.capacity not in machine.capacities:
        problems.append(
            Problem(
                paths("gpu_pools", i, "capacity"),
                f"{show(pool.capacity)} is not how {machine.name} is sold "
                f"({admission.GPU_CAPACITY.id}); "
                f"allowed: {', '.join(machine.capacities)}",
            )
        )
    if pool.capacity == "reservation" and pool.reservation is None:
        problems.append(Problem(paths("gpu_pools", i, "reservation"), "required when capacity is reservation"))
    if pool.capacity != "reservation" and pool.reservation is not None:
        problems.append(
            Problem(
                paths("gpu_pools", i, "reservation"),
                f"{show(pool.reservation)} is only allowed with capacity reservation",
            )
        )
    if context.mode == "standard" and pool.capacity == "flexStart" and not pool.autoscaled:
        problems.append(
            Problem(
                paths("gpu_pools", i, "autoscaling"),
                "flexStart capacity needs autoscaling (leave the key out, or enable it)",
            )
        )
    zone = pool.zone or (context.location if context.zonal else None)
    known = catalog.GPU_MACHINE_ZONES.get(machine.name, ())
    if zone and zone not in known and not pool.allow_unlisted_zone:
        local = [z for z in known if z.startswith(admission.region_of(zone) + "-")]
        warnings.append(
            f"{paths('gpu_pools', i, 'zone')}: {zone} is not known to sell {machine.name} "
            f"({pool.accelerator}; zones known{' in ' + admission.region_of(zone) if local else ''}: "
            f"{', '.join(local or known)}); check your quota and Compute Engine's GPU regions and zones "
            f"page ({paths.key('allow_unlisted_zone')}: true silences this)"
        )
    if context.mode == "autopilot":
        warnings.append(_autopilot_maximum(paths("gpu_pools", i), machine.name, machine.vcpus, machine.memory_gib))
        count = admission.autopilot_gpu_count_problem(pool.accelerator, machine.gpus)
        if count:
            problems.append(Problem(machine_path, f"{show(pool.machine_type)} has {machine.gpus} GPUs: {count}"))
    if context.mode is not None:
        problems += _pin_problems(
            admission.gpu_version_needs(pool.accelerator, pool.capacity, context.mode == "autopilot", machine.gpus),
            context,
            paths,
            f"gpuPools[{i}]",
        )
    return problems
