"""Rules across sections of the configuration (a slice and its cluster, a worker group and its slice), pure.

Each function returns problems (and appends warnings) with paths in the front end's spelling; the rules themselves,
and their sources, are in `admission`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

from pydantic import ValidationError

from .. import admission, catalog
from . import images, multislice, platform_rules, serve_checks
from .models import ClusterConfig, TpuSliceConfig, validate_as
from .paths import ClusterContext, Paths
from .problems import Problem, show
from .ray_models import RayJobConfig, RayServiceConfig, WorkerGroupConfig


def check_cluster(cluster: Optional[ClusterConfig], context: ClusterContext, paths: Paths) -> list[Problem]:
    problems = platform_rules.network(cluster, paths) + platform_rules.service_accounts(cluster, paths)
    if context.mode == "autopilot" and context.zonal:
        problems.append(Problem(paths("cluster", "location"), f"{show(context.location)} is a zone; Autopilot clusters "
                                                              f"are regional: allowed: a region such as "
                                                              f"{admission.region_of(context.location)}"))
    if cluster is not None and cluster.system_pool.min_nodes > cluster.system_pool.max_nodes:
        pool = cluster.system_pool
        problems.append(Problem(paths("cluster", "system_pool", "min_nodes"),
                                f"{pool.min_nodes} exceeds maxNodes {pool.max_nodes}; allowed: 0 to {pool.max_nodes}"))
    return problems


def _zones_hint(generation: str, capacity: str, region: Optional[str]) -> str:
    zones = admission.FLEX_START_ZONES.get(generation, ()) if capacity == "flexStart" else \
        catalog.ZONES.get(generation, ())
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


def check_slices(context: ClusterContext, raw: Optional[list], slices: list, paths: Paths,
                 warnings: list[str]) -> list[Problem]:
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
            problems.append(Problem(paths("tpu_slices", i, "reservation"),
                                    "required when capacity is reservation: the reservation name, or "
                                    "projects/<project>/reservations/<name>"))
        if s.capacity != "reservation" and s.reservation is not None:
            problems.append(Problem(paths("tpu_slices", i, "reservation"),
                                    f"{show(s.reservation)} is only allowed with capacity reservation (capacity is "
                                    f"{show(s.capacity)})"))
        if s.capacity == "flexStart" and s.generation in admission.FLEX_START_UNSUPPORTED:
            problems.append(Problem(paths("tpu_slices", i, "capacity"),
                                    f"\"flexStart\" is not offered for TPU {s.generation} "
                                    f"({admission.FLEX_START.source}); allowed: onDemand, spot, reservation"))
        problems += _slice_in_cluster(s, shape, i, context, paths, warnings)
    return problems


def _slice_in_cluster(s: TpuSliceConfig, shape, i: int, context: ClusterContext, paths: Paths,
                      warnings: list[str]) -> list[Problem]:
    problems = []
    zone_path = paths("tpu_slices", i, "zone")
    if context.location is not None:
        region = context.region
        if s.zone is not None and admission.region_of(s.zone) != region:
            problems.append(Problem(zone_path, f"{show(s.zone)} is outside the cluster's region {show(region)}; "
                                               f"{_zones_hint(s.generation, s.capacity, region)}"))
        elif s.zone is not None and context.zonal and s.zone != context.location:
            problems.append(Problem(zone_path, f"{show(s.zone)} differs from the zonal cluster's location "
                                               f"{show(context.location)}; a zonal cluster's pools are in its zone"))
        elif s.zone is None and not context.zonal and context.mode == "standard":
            problems.append(Problem(zone_path, f"required for a regional cluster: a zone of {region} that offers the "
                                               f"generation; {_zones_hint(s.generation, s.capacity, region)}"))
        zone = s.zone or (context.location if context.zonal else None)
        known = admission.FLEX_START_ZONES.get(s.generation, ()) if s.capacity == "flexStart" else \
            catalog.ZONES.get(s.generation, ())
        if zone and zone not in known and not problems:
            offer = f"TPU {s.generation}" + (" with flex-start" if s.capacity == "flexStart" else "")
            warnings.append(f"{zone_path}: {zone} is not known to offer {offer} "
                            f"({_zones_hint(s.generation, s.capacity, region)}); check your quota and the Cloud TPU "
                            "regions and zones page")
    if context.mode == "autopilot" and s.autoscaling is not None:
        problems.append(Problem(paths("tpu_slices", i, "autoscaling"),
                                "Autopilot has no node pools to autoscale; remove the key"))
    if context.mode == "standard":
        if s.capacity == "flexStart" and not s.autoscaled:
            problems.append(Problem(paths("tpu_slices", i, "autoscaling"),
                                    "flexStart capacity needs autoscaling: flex-start nodes are created on demand from "
                                    "zero (leave the key out, or enable it)"))
        if shape is not None and s.autoscaled:
            low = s.min_nodes
            min_path = paths("tpu_slices", i, "autoscaling", "min_nodes")
            if shape.multi_host and low not in (0, shape.hosts):
                problems.append(Problem(min_path, f"{low} would split a {shape.hosts}-host slice; a multi-host pool "
                                                  f"scales atomically: allowed: 0 or {shape.hosts}"))
            elif low > shape.hosts:
                problems.append(Problem(min_path, f"{low} exceeds the slice's {shape.hosts} host(s); allowed: 0 to "
                                                  f"{shape.hosts}"))
    if shape is not None and context.mode is not None:
        problems += _pin_problems(admission.gke_version_needs(s.generation, s.capacity, context.mode == "autopilot"),
                                  context, paths, f"tpuSlices[{i}]")
    return problems


def _pin_problems(needs, context: ClusterContext, paths: Paths, who: str) -> list[Problem]:
    """A minMasterVersion pin older than what a slice or pool needs."""
    pin = context.min_master_version
    return [Problem(paths("cluster", "min_master_version"),
                    f"{show(pin)} is older than {need.reason} ({who}) needs; allowed: {need.version} or later, or "
                    "leave it unset for the release channel")
            for need in needs if pin and not admission.version_satisfies(pin, need.version)]


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
                problems.append(Problem(paths(section, i, "name"), f"{show(pool.name)} is already {taken[pool.name]}; "
                                                                   "pool names are unique in the cluster"))
            taken[pool.name] = f"pool {pool.name}"
            problems += _pool_bounds(pool, section, i, context, paths)
            if section == "gpu_pools":
                problems += _gpu_pool(pool, i, context, paths, warnings)
            elif admission.cpu_machine(pool.machine_type) and \
                    admission.node_worker_resources(*admission.cpu_machine(pool.machine_type), False)[0] < 1:
                # What the node allocates less GKE's agents leaves no whole vCPU: the worker would ask for cpu '0'.
                problems.append(Problem(paths(section, i, "machine_type"), f"{show(pool.machine_type)} leaves no "
                                        f"whole vCPU for a Ray worker once GKE's reservations and agents are taken "
                                        f"({admission.ALLOCATABLE.id}, {admission.NODE_AGENTS.id}); allowed: a "
                                        "machine type of 4 vCPUs or more, such as e2-standard-4"))
            elif context.mode == "autopilot" and admission.cpu_machine(pool.machine_type):
                # Its workers select no compute class, so Autopilot places them in general-purpose.
                cpu, memory = admission.node_worker_resources(*admission.cpu_machine(pool.machine_type), False)
                too_big = admission.autopilot_class_problem(catalog.DEFAULT_CLASS, cpu, memory)
                if too_big:
                    problems.append(Problem(paths(section, i, "machine_type"), f"{show(pool.machine_type)}: its Ray "
                                                                              f"worker pod, {too_big}; choose a "
                                                                              "smaller machine type"))
    return problems


def _pool_bounds(pool, section: str, i: int, context: ClusterContext, paths: Paths) -> list[Problem]:
    problems = []
    if context.mode == "autopilot" and pool.autoscaling is not None:
        problems.append(Problem(paths(section, i, "autoscaling"),
                                "Autopilot has no node pools to autoscale; remove the key"))
    elif pool.autoscaled and pool.min_nodes > pool.max_nodes:
        problems.append(Problem(paths(section, i, "autoscaling", "min_nodes"),
                                f"{pool.min_nodes} exceeds the pool's {pool.max_nodes} nodes; allowed: 0 to "
                                f"{pool.max_nodes}"))
    if pool.zone is None and context.mode == "standard" and context.location is not None and not context.zonal:
        # A pool without node locations runs node_count (and initial_node_count) in every zone of a regional cluster
        # (pulumi-gcp container.NodePool node_count: "The number of nodes per instance group"; initial_node_count:
        # "In regional or multi-zonal clusters, this is the number of nodes per zone"), so every pool kind names
        # its zone and the count the stack says is the count GKE creates, prices and the demand checks count.
        what = f"offers {pool.accelerator}" if section == "gpu_pools" else f"sells {pool.machine_type}"
        problems.append(Problem(paths(section, i, "zone"), f"required for a regional cluster: a zone of "
                                                          f"{context.region} that {what} (without one, GKE creates "
                                                          f"{paths.key('count')} nodes in every zone of the region)"))
    if context.location is not None and pool.zone is not None and admission.region_of(pool.zone) != context.region:
        problems.append(Problem(paths(section, i, "zone"), f"{show(pool.zone)} is outside the cluster's region "
                                                          f"{show(context.region)}"))
    elif pool.zone is not None and context.zonal and pool.zone != context.location:
        problems.append(Problem(paths(section, i, "zone"), f"{show(pool.zone)} differs from the zonal cluster's "
                                                          f"location {show(context.location)}"))
    return problems


def _autopilot_maximum(path: str, machine: str, vcpus: float, memory_gib: float) -> str:
    """Autopilot rejects a pod above its accelerator's maximum requests (rule gke-autopilot-max-requests); no
    readable source gives those of every accelerator, so a GPU worker sized from the whole machine is flagged."""
    return (f"{path}: Autopilot worker pods are sized from all of {machine} ({vcpus:g} vCPUs, {memory_gib:g} GB) "
            "less GKE's reservations; Autopilot rejects requests above its maximum for the accelerator, for which no "
            "verified figure is recorded here: check with kubectl apply --dry-run=server")


def _gpu_pool(pool, i: int, context: ClusterContext, paths: Paths, warnings: list[str]) -> list[Problem]:
    problems = []
    machine_path = paths("gpu_pools", i, "machine_type")
    try:
        machine = catalog.gpu_machine(pool.accelerator, pool.machine_type)
    except catalog.CatalogError as error:
        return [Problem(machine_path, f"{show(pool.machine_type)} is {error}")]
    if pool.capacity not in machine.capacities:
        problems.append(Problem(paths("gpu_pools", i, "capacity"),
                                f"{show(pool.capacity)} is not how {machine.name} is sold "
                                f"({admission.GPU_CAPACITY.id}); "
                                f"allowed: {', '.join(machine.capacities)}"))
    if pool.capacity == "reservation" and pool.reservation is None:
        problems.append(Problem(paths("gpu_pools", i, "reservation"), "required when capacity is reservation"))
    if pool.capacity != "reservation" and pool.reservation is not None:
        problems.append(Problem(paths("gpu_pools", i, "reservation"),
                                f"{show(pool.reservation)} is only allowed with capacity reservation"))
    if context.mode == "standard" and pool.capacity == "flexStart" and not pool.autoscaled:
        problems.append(Problem(paths("gpu_pools", i, "autoscaling"),
                                "flexStart capacity needs autoscaling (leave the key out, or enable it)"))
    zone = pool.zone or (context.location if context.zonal else None)
    known = catalog.GPU_MACHINE_ZONES.get(machine.name, ())
    if zone and zone not in known and not pool.allow_unlisted_zone:
        local = [z for z in known if z.startswith(admission.region_of(zone) + "-")]
        warnings.append(f"{paths('gpu_pools', i, 'zone')}: {zone} is not known to sell {machine.name} "
                        f"({pool.accelerator}; zones known{' in ' + admission.region_of(zone) if local else ''}: "
                        f"{', '.join(local or known)}); check your quota and Compute Engine's GPU regions and zones "
                        f"page ({paths.key('allow_unlisted_zone')}: true silences this)")
    if context.mode == "autopilot":
        warnings.append(_autopilot_maximum(paths("gpu_pools", i), machine.name, machine.vcpus, machine.memory_gib))
        count = admission.autopilot_gpu_count_problem(pool.accelerator, machine.gpus)
        if count:
            problems.append(Problem(machine_path, f"{show(pool.machine_type)} has {machine.gpus} GPUs: {count}"))
    if context.mode is not None:
        problems += _pin_problems(admission.gpu_version_needs(pool.accelerator, pool.capacity,
                                                              context.mode == "autopilot", machine.gpus), context,
                                  paths, f"gpuPools[{i}]")
    return problems


# Where a worker group runs: its key, the section of that kind and how the section is spelt in messages.
_TARGETS = (("slice", "tpu_slices", "tpuSlices"), ("gpu_pool", "gpu_pools", "gpuPools"),
            ("cpu_pool", "cpu_pools", "cpuPools"))


def _known_targets(raw_lists: dict, lists: dict) -> tuple[dict, dict]:
    """(valid entries by kind and name, names that are unknown only because their entry is broken or unreadable)."""
    known, broken = {}, {}
    for key, section, _ in _TARGETS:
        known[key] = {entry.name: entry for entry in lists[section] if entry is not None}
        raw = raw_lists[section]
        broken[key] = None if raw is None else {
            item.get("name") for item, parsed in zip(raw, lists[section])
            if parsed is None and isinstance(item, dict) and isinstance(item.get("name"), str)}
    return known, broken


def _check_group(group, gpath: str, kind: str, i: int, j: int, known: dict, broken: dict,
                 paths: Paths) -> list[Problem]:
    """The rules of one worker group on its own: one target that exists, replicas within their bounds."""
    problems = []
    given = [key for key, _, _ in _TARGETS if getattr(group, key) is not None]
    if len(given) != 1:
        keys = ", ".join(paths.key(key) for key, _, _ in _TARGETS)
        problems.append(Problem(gpath, f"names {len(given)} of {keys}; allowed: exactly one (where the group runs)"))
    for key, section, spelt in _TARGETS:
        name = getattr(group, key)
        if name is None or name in known[key] or broken[key] is None or name in broken[key]:
            continue
        allowed = ", ".join(sorted(known[key])) or "none defined"
        problems.append(Problem(f"{gpath}.{paths.key(key)}", f"{show(name)} is not a {spelt} name; allowed: {allowed}"))
    if group.min_replicas > group.replicas:
        problems.append(Problem(paths(kind, i, "worker_groups", j, "min_replicas"),
                                f"{group.min_replicas} exceeds replicas {group.replicas}"))
    if group.replicas > group.max:
        problems.append(Problem(paths(kind, i, "worker_groups", j, "max_replicas"),
                                f"{group.max} is below replicas {group.replicas}"))
    return problems


def check_ray_objects(context: ClusterContext, raw_lists: dict, lists: dict, paths: Paths,
                      warnings: list[str]) -> list[Problem]:
    problems: list[Problem] = []
    known, broken = _known_targets(raw_lists, lists)
    # (kind, name) -> [(who, at once, at most)]: slices for TPU groups, pods (= nodes) for GPU and CPU groups.
    demand: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    clusters = {(o.namespace, o.name) for o in lists["ray_clusters"] if o is not None}
    for kind in ("ray_clusters", "ray_services", "ray_jobs"):
        joined: dict[str, str] = {}
        for i, obj in enumerate(lists[kind]):
            if obj is None:  # its own problems are reported; its worker groups are still checked
                problems += _groups_of_broken_object((raw_lists[kind] or [])[i], kind, i, known, broken, paths)
                continue
            path = paths(kind, i)
            resource = f"{obj.namespace}-{obj.name}"
            if resource in joined and obj.intact("namespace", "name"):
                same = joined[resource] == f"{obj.namespace}/{obj.name}"
                problems.append(Problem(f"{path}.name", f"{show(obj.name)} is used twice in namespace "
                                                        f"{show(obj.namespace)}" if same else
                                        f"{obj.namespace}/{obj.name} and {joined[resource]} both become the Pulumi "
                                        f"resource {resource}; rename one"))
            joined.setdefault(resource, f"{obj.namespace}/{obj.name}")
            if isinstance(obj, RayJobConfig):
                problems += _check_job(obj, path, paths, clusters)
            elif not obj.worker_groups:
                problems.append(Problem(paths(kind, i, "worker_groups"), "at least one worker group is required"))
            surge = isinstance(obj, RayServiceConfig) and obj.upgrade_strategy == "NewCluster"
            groups = set()
            for j, group in enumerate(obj.worker_groups):
                gpath = paths(kind, i, "worker_groups", j)
                who = f"{obj.namespace}/{obj.name}" if obj.intact("namespace") else obj.name
                who += f" group {group.name}"
                if group.name in groups:
                    problems.append(Problem(f"{gpath}.name", f"{show(group.name)} is used twice in {obj.name}"))
                groups.add(group.name)
                problems += _check_group(group, gpath, kind, i, j, known, broken, paths)
                if group.replicas == 0 and not obj.autoscaling.enabled and obj.intact("autoscaling"):
                    problems.append(Problem(paths(kind, i, "worker_groups", j, "replicas"),
                                            "0 with Ray autoscaling off: the group never gets a pod; allowed: "
                                            "replicas of 1 or more, or autoscaling.enabled: true"))
                target_kind, target = group.target
                wrong_image = images.mismatch(obj.image, target_kind)
                if wrong_image:
                    problems.append(Problem(paths(kind, i, "image"), f"{wrong_image} (group {group.name})"))
                if target not in known[target_kind]:
                    continue
                if target_kind == "slice":
                    tpu_slice = known["slice"][target]
                    accelerator = catalog.generation(tpu_slice.generation).accelerator
                    if obj.autoscaling.enabled and \
                            accelerator not in admission.ray_autoscaler_accelerators(obj.ray_version):
                        problems.append(Problem(
                            paths(kind, i, "autoscaling", "enabled"),
                            f"true, but Ray {obj.ray_version}'s autoscaler cannot map TPU {tpu_slice.generation} "
                            f"({accelerator}) of group {group.name} and fails; allowed: autoscaling off for this Ray "
                            "object, or a Ray version whose autoscaler knows it (tpu7x: rayVersion 2.56.0 or later)"))
                factor = 2 if surge else 1
                at_most = group.max if obj.autoscaling.enabled else group.replicas
                demand[(target_kind, target)].append((who + (" (twice: NewCluster upgrades)" if surge else ""),
                                                      group.replicas * factor, at_most * factor))
    if context.mode == "standard":
        problems += _check_demand(lists, demand, paths, warnings)
    problems += multislice.check(context, lists, paths, warnings)  # grace periods, start timeouts, multislice
    problems += serve_checks.check_services(lists["ray_services"], known, paths)  # Serve autoscaling on the groups
    return problems


def _groups_of_broken_object(raw: Any, kind: str, i: int, known: dict, broken: dict, paths: Paths) -> list[Problem]:
    """The rules of each worker group alone, for a Ray object that failed validation elsewhere, so one run reports
    every problem."""
    groups = raw.get(paths.key("worker_groups")) if isinstance(raw, dict) else None
    if not isinstance(groups, list):
        return []
    problems, names = [], set()
    for j, item in enumerate(groups):
        try:
            group = validate_as(WorkerGroupConfig, item, paths.style)
        except (ValidationError, TypeError):
            continue  # reported with the object
        gpath = paths(kind, i, "worker_groups", j)
        if group.name in names:
            problems.append(Problem(f"{gpath}.name", f"{show(group.name)} is used twice"))
        names.add(group.name)
        problems += _check_group(group, gpath, kind, i, j, known, broken, paths)
    return problems


def _check_job(job: RayJobConfig, path: str, paths: Paths, clusters: set) -> list[Problem]:
    problems = []
    if not job.intact("cluster", "worker_groups", "shutdown_after_job_finishes", "suspend", "wait_for_ready"):
        return problems  # which cluster the job runs on is not known
    if job.suspend and job.cluster is not None:
        problems.append(Problem(f"{path}.{paths.key('suspend')}", f"true is not allowed with cluster "
                                f"{show(job.cluster)}: an existing RayCluster's job cannot be suspended "
                                f"({admission.RAYJOB_SUSPEND_CLUSTER_SELECTOR.id}); allowed: false"))
    elif job.suspend and job.wait_for_ready:
        problems.append(Problem(f"{path}.{paths.key('suspend')}", "true is not allowed with waitForReady: true: a "
                                "suspended job never runs, and the deploy would wait for it forever "
                                f"({admission.RAYJOB_SUSPEND_WAIT.id}); allowed: false, or waitForReady: false"))
    elif job.suspend and not job.shutdown_after_job_finishes:
        problems.append(Problem(f"{path}.{paths.key('suspend')}", "true is only allowed with "
                                f"shutdownAfterJobFinishes: true ({admission.RAYJOB_SUSPEND_SHUTDOWN.id}); "
                                "allowed: false"))
    if job.ttl_seconds_after_finished is not None and not job.shutdown_after_job_finishes:
        problems.append(Problem(f"{path}.{paths.key('ttl_seconds_after_finished')}",
                                f"{job.ttl_seconds_after_finished} is only allowed with "
                                "shutdownAfterJobFinishes: true"))
    if job.cluster is not None:
        if job.shutdown_after_job_finishes and "shutdown_after_job_finishes" in job.model_fields_set:
            problems.append(Problem(f"{path}.{paths.key('shutdown_after_job_finishes')}",
                                    f"true is not allowed with cluster {show(job.cluster)}: the job never deletes a "
                                    "RayCluster it did not create; allowed: false"))
        if job.worker_groups:
            problems.append(Problem(f"{path}.{paths.key('worker_groups')}",
                                    f"not allowed with cluster {show(job.cluster)}: the job runs on that RayCluster's "
                                    "workers"))
        if (job.namespace, job.cluster) not in clusters:
            allowed = ", ".join(sorted(name for ns, name in clusters if ns == job.namespace)) or "none"
            problems.append(Problem(f"{path}.cluster", f"{show(job.cluster)} is not a rayClusters name in namespace "
                                                       f"{show(job.namespace)}; allowed: {allowed}"))
    elif not job.worker_groups:
        problems.append(Problem(f"{path}.{paths.key('worker_groups')}",
                                "at least one TPU worker group is required (or cluster: an existing RayCluster)"))
    return problems


def _check_demand(lists: dict, demand: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    """Standard mode: a slice entry provisions `count` pools and a GPU or CPU pool at most its nodes, one Ray pod per
    node; the Ray objects' groups may not ask for more at once."""
    problems = []
    for key, section, _ in _TARGETS:
        for i, entry in enumerate(lists[section]):
            if entry is None or (key, entry.name) not in demand:
                continue
            asks = demand[(key, entry.name)]
            at_once = sum(n for _, n, _ in asks)
            at_most = sum(n for _, _, n in asks)
            who = "; ".join(f"{w}: {n}" for w, n, _ in asks)
            have, what, field = (entry.count, "slice(s)", "count") if key == "slice" else \
                (entry.max_nodes, "node(s)", "count")
            if at_once > have:
                problems.append(Problem(paths(section, i, field),
                                        f"{have} {what} of {entry.name}, but the Ray objects ask for {at_once} at once "
                                        f"({who}); allowed: at least {at_once}, or fewer replicas"))
            elif at_most > have:
                most = "; ".join(f"{w}: up to {n}" for w, _, n in asks)
                warnings.append(f"{paths(section, i, field)}: {have} {what} of {entry.name}, but Ray autoscaling may "
                                f"ask for {at_most} ({most}); the rest would wait for capacity")
    return problems


def check_heads(cluster: Optional[ClusterConfig], lists: dict, paths: Paths) -> list[Problem]:
    """Standard mode: every Ray head, with its sidecars, fits a node of the system pool it selects."""
    if cluster is None or cluster.mode != "standard" or not cluster.intact("mode", "system_pool"):
        return []
    machine = admission.cpu_machine(cluster.system_pool.machine_type)
    if machine is None:
        return []
    cpu_free, memory_free = admission.allocatable(*machine)
    problems = []
    for kind in ("ray_clusters", "ray_services", "ray_jobs"):
        for i, obj in enumerate(lists[kind]):
            if obj is None or (isinstance(obj, RayJobConfig) and obj.cluster is not None) or \
                    not obj.intact("autoscaling", "gcs_fuse"):
                continue
            cpu = admission.parse_quantity(obj.head.cpu)
            memory = admission.parse_quantity(obj.head.memory) / 2**30
            sidecars = [admission.AUTOSCALER_SIDECAR] if obj.autoscaling.enabled else []
            sidecars += [admission.GCS_FUSE_SIDECAR] if obj.gcs_fuse else []
            cpu += sum(c for c, _ in sidecars)
            memory += sum(m for _, m in sidecars)
            if cpu > cpu_free or memory > memory_free:
                problems.append(Problem(
                    paths(kind, i, "head"),
                    f"{obj.head.cpu} CPU and {obj.head.memory} (with sidecars {cpu:g} CPU, {memory:.2f} GiB) "
                    "do not fit "
                    f"a {cluster.system_pool.machine_type} system node, which allocates {cpu_free:.2f} CPU and "
                    f"{memory_free:.2f} GiB to pods; allowed: a smaller head or a larger "
                    f"{paths.key('system_pool')}.{paths.key('machine_type')}"))
    return problems
