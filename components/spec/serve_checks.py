"""Rules a RayService's Ray Serve config must keep for Serve's autoscaler to follow it on the service's worker groups:
the autoscaling bounds Serve itself validates (a config it refuses leaves the RayService failing to deploy), and that
every replica fits a host of its slice or a node of its pool, and the most replicas fit the groups at their maximum
(otherwise the replicas beyond stay PENDING_ALLOCATION while Serve and the autoscaler keep asking). Pure."""

from __future__ import annotations

import math
from typing import Any, Optional

from .. import admission
from .paths import Paths
from .problems import Problem, show
from .ray_models import RayServiceConfig

# The facts, with their sources: admission/serve.py.
AUTOSCALING_INTS, AUTOSCALING_FLOATS = admission.AUTOSCALING_INTS, admission.AUTOSCALING_FLOATS
SERVE_DEFAULT_MIN_REPLICAS = SERVE_DEFAULT_MAX_REPLICAS = admission.SERVE_DEFAULT_MIN_REPLICAS
TPU_CHIPS_PER_REPLICA = admission.TPU_CHIPS_PER_REPLICA


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _autoscaling(config: dict, path: str) -> tuple[list[Problem], Optional[int]]:
    """The autoscaling_config's own rules, and the most replicas it lets Serve run (None when it is unreadable)."""
    problems = []
    for key, least in AUTOSCALING_INTS.items():
        value = config.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= least):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"{show(value)} is invalid; allowed: a whole number of {least} "
                    "or more (Ray Serve AutoscalingConfig)",
                )
            )
    for key, allowed in AUTOSCALING_FLOATS.items():
        value = config.get(key)
        if value is not None and not (_number(value) and (value > 0 if allowed == "above 0" else value >= 0)):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"{show(value)} is invalid; allowed: a number {allowed} (Ray Serve AutoscalingConfig)",
                )
            )
    if problems:
        return problems, None
    least = config.get("min_replicas", SERVE_DEFAULT_MIN_REPLICAS)
    most = config.get("max_replicas", SERVE_DEFAULT_MAX_REPLICAS)
    initial = config.get("initial_replicas")
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
    tpu = resources.get("TPU", 0) if isinstance(resources, dict) else 0
    gpu = options.get("num_gpus", 0) or 0
    problems = []
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
    if tpu and gpu:
        problems.append(Problem(f"{path}.ray_actor_options", "asks for TPU chips and GPUs at once; no node has both"))
    return problems, ("tpu" if tpu else "gpu" if gpu else "cpu"), float(tpu or gpu)


def _capacity(obj: RayServiceConfig, kind: str, per_replica: float, known: dict) -> list[tuple[str, int, int]]:
    """Per worker group that provides `kind`: (description, accelerators per host or node, replicas the group holds
    at its maximum)."""
    out = []
    for group in obj.worker_groups:
        target_kind, name = group.target
        if kind == "tpu" and target_kind == "slice" and name in known["slice"]:
            shape = known["slice"][name].shape
            per_host = shape.chips_per_host
            out.append(
                (
                    f"group {group.name} (slice {name}: {per_host} chips per host, {shape.hosts} host(s) x "
                    f"maxReplicas {group.max})",
                    per_host,
                    int(per_host // per_replica) * shape.hosts * group.max,
                )
            )
        elif kind == "gpu" and target_kind == "gpu_pool" and name in known["gpu_pool"]:
            per_node = known["gpu_pool"][name].machine.gpus
            out.append(
                (
                    f"group {group.name} (pool {name}: {per_node} GPUs per node x maxReplicas {group.max})",
                    per_node,
                    int(per_node // per_replica) * group.max,
                )
            )
    return out


def check_service(obj: RayServiceConfig, path: str, known: dict) -> list[Problem]:
    """One RayService's serveConfig against its worker groups (`known`: valid slices and pools by name)."""
    config = obj.serve_config
    apps = config.get("applications") if isinstance(config, dict) else None
    if not isinstance(apps, list):
        return []  # a single-application or malformed config: Serve's own validation answers
    problems: list[Problem] = []
    demand: dict[str, list[tuple[str, int, float]]] = {"tpu": [], "gpu": []}
    for a, app in enumerate(apps):
        deployments = app.get("deployments") if isinstance(app, dict) else None
        for d, deployment in enumerate(deployments if isinstance(deployments, list) else []):
            if not isinstance(deployment, dict):
                continue
            dpath = f"{path}.applications[{a}].deployments[{d}]"
            found, kind, per_replica = _replica_ask(deployment, dpath)
            problems += found
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
                found, most = _autoscaling(autoscaling, f"{dpath}.autoscaling_config")
                problems += found
            if kind == "cpu" or found:
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
