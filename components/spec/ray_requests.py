"""What a RayService's Serve deployments ask Ray for, against what one host of the object's worker groups has
(rule ray-request-fits-a-host): a deployment asking for more TPU chips or GPUs than any host has never starts."""

from __future__ import annotations

from typing import Any

from .. import admission
from .ray_models import RayServiceConfig
from .paths import Paths
from .problems import Problem, show


def _hosts(obj: RayServiceConfig, lists: dict) -> dict[str, int]:
    """The most TPU chips and GPUs one host (Ray node) of the object's worker groups has."""
    slices = {s.name: s for s in lists["tpu_slices"] if s is not None}
    gpu_pools = {p.name: p for p in lists["gpu_pools"] if p is not None}
    most = {"TPU": 0, "GPU": 0}
    for group in obj.worker_groups:
        kind, name = group.target
        if kind == "slice" and name in slices:
            most["TPU"] = max(most["TPU"], slices[name].shape.chips_per_host)
        elif kind == "gpu_pool" and name in gpu_pools:
            try:
                most["GPU"] = max(most["GPU"], gpu_pools[name].machine.gpus)
            except Exception:  # a machine type that carries no such GPU: refused by check_worker_pools
                pass
    return most


def _asks(options: Any) -> dict[str, Any]:
    """The TPU and GPU a deployment's ray_actor_options ask for (Ray Serve: num_gpus, resources: {TPU: n})."""
    if not isinstance(options, dict):
        return {}
    asks = {}
    resources = options.get("resources")
    if isinstance(resources, dict) and "TPU" in resources:
        asks["TPU"] = resources["TPU"]
    if "num_gpus" in options:
        asks["GPU"] = options["num_gpus"]
    return asks


def check_serve_requests(lists: dict, paths: Paths) -> list[Problem]:
    problems: list[Problem] = []
    for i, obj in enumerate(lists["ray_services"]):
        if obj is None or not isinstance(obj.serve_config, dict):
            continue
        most = _hosts(obj, lists)
        for a, app in enumerate(obj.serve_config.get("applications") or []):
            for d, deployment in enumerate((app.get("deployments") or []) if isinstance(app, dict) else []):
                if not isinstance(deployment, dict):
                    continue
                for resource, amount in _asks(deployment.get("ray_actor_options")).items():
                    if not isinstance(amount, (int, float)) or isinstance(amount, bool) or amount <= most[resource]:
                        continue
                    key = "resources.TPU" if resource == "TPU" else "num_gpus"
                    where = paths("ray_services", i, "serve_config")
                    has = (f"{most[resource]} {'chips' if resource == 'TPU' else 'GPUs'} per host"
                           if most[resource] else f"no {resource}")
                    problems.append(Problem(
                        f"{where}.applications[{a}].deployments[{d}].ray_actor_options.{key}",
                        f"{show(amount)}: deployment {show(deployment.get('name', d))} asks Ray for {amount:g} "
                        f"{resource}, but the hosts of {obj.name}'s worker groups have {has}, so it never starts "
                        f"({admission.RAY_REQUEST_FITS.id}); allowed: at most {most[resource]}, or a worker group on "
                        "a larger host"))
    return problems
