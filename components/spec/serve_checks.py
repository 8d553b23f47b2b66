"""Rules a RayService's Ray Serve config must keep for Serve's autoscaler to follow it on the service's worker groups:
the autoscaling bounds Serve itself validates (a config it refuses leaves the RayService failing to deploy), and that
every replica fits a host of its slice or a node of its pool, and the most replicas fit the groups at their maximum
(otherwise the replicas beyond stay PENDING_ALLOCATION while Serve and the autoscaler keep asking). Pure."""

from __future__ import annotations

import math
from typing import Any, Optional

from .. import admission, catalog
from . import serve_schema
from .paths import Paths
from .problems import Problem, show
from .ray_models import RayServiceConfig

# The facts, with their sources: admission/serve.py.
SERVE_DEFAULT_MIN_REPLICAS = SERVE_DEFAULT_MAX_REPLICAS = admission.SERVE_DEFAULT_MIN_REPLICAS
TPU_CHIPS_PER_REPLICA = admission.TPU_CHIPS_PER_REPLICA


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _autoscaling(config: dict, path: str) -> tuple[list[Problem], Optional[int]]:
    """The autoscaling_config's own rules, and the most replicas it lets Serve run (None when it is unreadable).
    Numbers are read as Ray reads them: a quoted "0" is 0."""
    problems, numbers = serve_schema.autoscaling_numbers(config, path)
    if problems:
        return problems, None
    least = int(numbers.get("min_replicas", SERVE_DEFAULT_MIN_REPLICAS))
    most = int(numbers.get("max_replicas", SERVE_DEFAULT_MAX_REPLICAS))
    initial = numbers.get("initial_replicas")
    if least > most:
        problems.append(
            Problem(
                f"{path}.min_replicas",
                f"{least} is above max_replicas {most}; allowed: at most {most} (Ray Serve refuses the config)",
            )
        )
    if initial is not None and not least <= initial <= most:
        problems.append(
            Problem(f"{path}.initial_replicas", f"{initial} is outside min_replicas {least} to max_replicas {most}")
        )
    return problems, most


def _replica_ask(deployment: dict, path: str) -> tuple[list[Problem], str, float]:
    """(problems, "tpu" | "gpu" | "cpu", accelerators one replica asks for) from its ray_actor_options."""
    options = deployment.get("ray_actor_options") or {}
    if not isinstance(options, dict):
        return [Problem(f"{path}.ray_actor_options", f"{show(options)} is not a mapping")], "cpu", 0
    resources = options.get("resources") or {}
    problems = _custom_resources(resources, f"{path}.ray_actor_options.resources")
    tpu = resources.get("TPU", 0) if isinstance(resources, dict) else 0
    gpu = options.get("num_gpus", 0) or 0
    if not _number(tpu) or tpu < 0:
        problems.append(
            Problem(
                f"{path}.ray_actor_options.resources.TPU",
                f"{show(tpu)} is invalid; allowed: one of {', '.join(map(str, TPU_CHIPS_PER_REPLICA))}",
            )
        )
        tpu = 0
    elif tpu and tpu not in TPU_CHIPS_PER_REPLICA:
        problems.append(
            Problem(
                f"{path}.ray_actor_options.resources.TPU",
                f"{show(tpu)} is not a number of chips Ray "
                "gives one process; allowed: one of "
                f"{', '.join(map(str, TPU_CHIPS_PER_REPLICA))}",
            )
        )
    if not _number(gpu) or gpu < 0:
        problems.append(
            Problem(f"{path}.ray_actor_options.num_gpus", f"{show(gpu)} is invalid; allowed: a number of 0 or more")
        )
        gpu = 0
    elif admission.resource_quantity_problem(gpu):
        problems.append(_too_fine(f"{path}.ray_actor_options.num_gpus", gpu))
        gpu = 0
    if tpu and gpu:
        problems.append(Problem(f"{path}.ray_actor_options", "asks for TPU chips and GPUs at once; no node has both"))
    return problems, ("tpu" if tpu else "gpu" if gpu else "cpu"), float(tpu or gpu)


def _too_fine(key: str, quantity: float) -> Problem:
    found = admission.resource_quantity_problem(quantity)
    return Problem(key, f"{show(quantity)} {found} ({admission.SERVE_REPLICA_RESOURCES.id})")


def _custom_resources(resources: Any, path: str) -> list[Problem]:
    """What Ray refuses in ray_actor_options.resources besides TPU's chip counts (_replica_ask checks those)."""
    if not isinstance(resources, dict):
        return [Problem(path, f"{show(resources)} is not a mapping of resource names to numbers")]
    problems = []
    for name, quantity in resources.items():
        key = f"{path}.{name}"
        if name in ("CPU", "GPU"):
            problems.append(
                Problem(
                    key,
                    f"is refused by Ray; allowed: ray_actor_options.num_{str(name).lower()}s "
                    f"({admission.SERVE_REPLICA_RESOURCES.id})",
                )
            )
        elif name == "TPU":
            continue
        elif not _number(quantity) or quantity < 0:
            problems.append(Problem(key, f"{show(quantity)} is invalid; allowed: a number of 0 or more"))
        elif admission.resource_quantity_problem(quantity):
            problems.append(_too_fine(key, quantity))
    return problems


def _per_host(known: dict, kind: str, target_kind: str, name: str) -> Optional[tuple[str, int, int]]:
    """(where, accelerators per host or node, hosts per slice or 1 per node) of a group's valid slice or pool of
    `kind`; None when it is another kind, unknown, or its topology or machine type is itself invalid (reported with the
    entry)."""
    try:
        if kind == "tpu" and target_kind == "slice" and name in known["slice"]:
            shape = known["slice"][name].shape
            return (
                f"slice {name}: {shape.chips_per_host} chips per host, {shape.hosts} host(s)",
                shape.chips_per_host,
                shape.hosts,
            )
        if kind == "gpu" and target_kind == "gpu_pool" and name in known["gpu_pool"]:
            gpus = known["gpu_pool"][name].machine.gpus
            return f"pool {name}: {gpus} GPUs per node", gpus, 1
    except catalog.CatalogError:
        return None
    return None


def _unresolved(obj: RayServiceConfig, kind: str, known: dict) -> bool:
    """Whether a group of `kind` runs on a slice or pool whose shape is invalid: its capacity is unknown, and the
    entry's own problem is what to report."""
    target_kind = "slice" if kind == "tpu" else "gpu_pool"
    return any(
        group.target[0] == target_kind
        and group.target[1] in known[target_kind]
        and _per_host(known, kind, group.target[0], group.target[1] or "") is None
        for group in obj.worker_groups
    )


def _capacity(obj: RayServiceConfig, kind: str, per_replica: float, known: dict) -> list[tuple[str, int, int]]:
    """Per worker group that provides `kind`: (description, accelerators per host or node, replicas the group holds
    at its maximum)."""
    out = []
    for group in obj.worker_groups:
        found = _per_host(known, kind, group.target[0], group.target[1] or "")
        if found is not None:
            where, per_host, hosts = found
            out.append(
                (
                    f"group {group.name} ({where} x maxReplicas {group.max})",
                    per_host,
                    int(per_host // per_replica) * hosts * group.max,
                )
            )
    return out


def _pods(obj: RayServiceConfig, kind: str, known: dict) -> Optional[list[tuple[str, int, int]]]:
    """(group, CPUs, GiB) of the worker pod of each group a replica of `kind` can run on: the Ray worker container's
    requests and limits (render/manifests.py), taken without the GCS FUSE sidecar so that they are the most it may
    have. None when one of those groups runs on an unknown or invalid entry (its problem is reported apart)."""
    out = []
    for group in obj.worker_groups:
        target_kind, name = group.target
        if (kind == "tpu" and target_kind != "slice") or (kind == "gpu" and target_kind != "gpu_pool"):
            continue
        entry = known.get(target_kind, {}).get(name)
        try:
            if entry is None:
                return None
            if target_kind == "slice":
                vcpus, memory_gib = entry.shape.machine_type.vcpus, entry.shape.machine_type.memory_gib
            elif target_kind == "gpu_pool":
                vcpus, memory_gib = entry.machine.vcpus, entry.machine.memory_gib
            else:
                shape = admission.cpu_machine(entry.machine_type)
                if shape is None:
                    return None
                vcpus, memory_gib = shape
        except catalog.CatalogError:
            return None
        cpu, memory = admission.node_worker_resources(vcpus, memory_gib, gcs_fuse=False)
        out.append((group.name, cpu, memory))
    return out


def _pod_fit(obj: RayServiceConfig, deployment: dict, path: str, kind: str, known: dict) -> list[Problem]:
    """A replica's num_cpus and memory against the worker pods it can run on (admission.SERVE_REPLICA_FITS_POD)."""
    options = deployment.get("ray_actor_options")
    if not isinstance(options, dict):
        return []
    problems = []
    # RayActorOptionsSchema: num_cpus and memory Optional[float], ge=0 (memory in bytes), read in pydantic's lax mode.
    cpus, memory = (
        None if options.get(key) is None else serve_schema.ray_number(options[key], "float", 0, False)
        for key in ("num_cpus", "memory")
    )
    for key, value, number in (("num_cpus", options.get("num_cpus"), cpus), ("memory", options.get("memory"), memory)):
        if value is not None and number is None:
            problems.append(
                Problem(f"{path}.ray_actor_options.{key}", f"{show(value)} is invalid; allowed: a number 0 or more")
            )
        elif number is not None and admission.resource_quantity_problem(number):
            problems.append(_too_fine(f"{path}.ray_actor_options.{key}", number))
    pods = _pods(obj, kind, known)
    if problems or not pods or (not cpus and not memory):
        return problems
    if not any((cpus or 0) <= cpu and (memory or 0) <= gib * 2**30 for _, cpu, gib in pods):
        key = "num_cpus" if (cpus or 0) > max(cpu for _, cpu, _ in pods) else "memory"
        asked = (
            f"{cpus:g} CPUs"
            if key == "num_cpus"
            else f"{(memory or 0) / 2**30:.1f} GiB ({memory or 0:.0f} bytes) of memory"
        )
        problems.append(
            Problem(
                f"{path}.ray_actor_options.{key}",
                f"{asked} per replica, more than any worker pod it can run on has "
                f"({'; '.join(f'group {g}: {c} CPUs, {m} GiB' for g, c, m in pods)}); allowed: a replica that fits "
                f"one pod ({admission.SERVE_REPLICA_FITS_POD.id})",
            )
        )
    return problems


def check_service(obj: RayServiceConfig, path: str, known: dict) -> list[Problem]:
    """One RayService's serveConfig against its worker groups (`known`: valid slices and pools by name)."""
    config = obj.serve_config
    if config is None:  # an `llm` service: the plan writes its Serve config (spec/llm_checks.py checks it)
        return []
    problems = serve_schema.check_schema(config, path)  # what Serve's schema refuses
    apps = config.get("applications") if isinstance(config, dict) else None
    if not isinstance(apps, list):
        return problems
    demand: dict[str, list[tuple[str, int, float]]] = {"tpu": [], "gpu": []}
    for a, app in enumerate(apps):
        deployments = app.get("deployments") if isinstance(app, dict) else None
        for d, deployment in enumerate(deployments if isinstance(deployments, list) else []):
            if not isinstance(deployment, dict):
                continue
            dpath = f"{path}.applications[{a}].deployments[{d}]"
            found, kind, per_replica = _replica_ask(deployment, dpath)
            problems += found + _pod_fit(obj, deployment, dpath, kind, known)
            autoscaling, replicas = deployment.get("autoscaling_config"), deployment.get("num_replicas")
            most = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None
            if isinstance(autoscaling, dict):
                if most is not None:
                    problems.append(
                        Problem(
                            f"{dpath}.num_replicas",
                            f"{replicas} with an autoscaling_config; allowed: "
                            'unset or "auto" (Ray Serve DeploymentSchema refuses both)',
                        )
                    )
                refused, most = _autoscaling(autoscaling, f"{dpath}.autoscaling_config")
                problems += refused
                found += refused
            if kind == "cpu" or found or _unresolved(obj, kind, known):
                continue
            groups = _capacity(obj, kind, per_replica, known)
            unit = "TPU chips" if kind == "tpu" else "GPUs"
            if not groups:
                problems.append(
                    Problem(
                        dpath,
                        f"asks for {per_replica:g} {unit} per replica, but no worker group of "
                        f"{obj.name} runs on a {'TPU slice' if kind == 'tpu' else 'GPU pool'}",
                    )
                )
                continue
            largest = max(per_host for _, per_host, _ in groups)
            if per_replica > largest:
                key = "resources.TPU" if kind == "tpu" else "num_gpus"
                problems.append(
                    Problem(
                        f"{dpath}.ray_actor_options.{key}",
                        f"{per_replica:g} {unit} per replica, more "
                        f"than a host or node has ({'; '.join(g for g, _, _ in groups)}); allowed: at "
                        f"most {largest}",
                    )
                )
                continue
            if most is not None:
                name = deployment.get("name", f"deployment {d}")
                demand[kind].append((f"{name}: {most} x {per_replica:g} {unit}", most, per_replica))
    for kind, wanted in demand.items():
        # Each deployment takes its share of the groups' room at its own replica size; together at most all of it.
        rooms = [sum(held for _, _, held in _capacity(obj, kind, size, known)) for _, _, size in wanted]
        if wanted and sum(most / max(room, 1e-9) for (_, most, _), room in zip(wanted, rooms)) > 1 + 1e-9:
            holders = "; ".join(g for g, _, _ in _capacity(obj, kind, wanted[0][2], known))
            held = ", ".join(f"{room} of {size:g}" for (_, _, size), room in zip(wanted, rooms))
            problems.append(
                Problem(
                    f"{path}.applications",
                    f"{sum(m for _, m, _ in wanted)} replicas at most "
                    f"({'; '.join(w for w, _, _ in wanted)}), more than the worker groups hold at "
                    f"their maximum ({held} {'TPU chips' if kind == 'tpu' else 'GPUs'} each: "
                    f"{holders}); allowed: lower max_replicas, or a larger maxReplicas",
                )
            )
    return problems


def check_services(services: list, known: dict, paths: Paths) -> list[Problem]:
    return [
        p
        for i, obj in enumerate(services)
        if obj is not None
        for p in check_service(obj, paths("ray_services", i, "serve_config"), known)
    ]
