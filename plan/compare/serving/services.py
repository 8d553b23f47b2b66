"""The serving comparison's sides, read from a stack's offline plan: every RayService whose worker group runs on a
TPU slice or a GPU pool, its Serve config (serveConfigV2 as the plan renders it, the document KubeRay sends to Serve),
what one replica and one node hold, and what a node costs an hour. Pure: plan JSON and config values in, plain data out.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml
from ray_tpu_gke import catalog
from ray_tpu_gke.render.llm import llm_model_id

from ...steps import states_of_type
from ..sides import RUN_LABEL, SIDE_LABEL, label_value, run_suffix

RAYSERVICE_TYPE = "kubernetes:ray.io/v1:RayService"  # CONTRACTS section 2: KubeRay objects in the plan's steps
PROJECT = "ray-tpu-gke"
# KubeRay ray-operator/controllers/ray/utils/constant.go MaxRayServiceNameLength = MaxRayClusterNameLength (53) - 6:
# KubeRay appends 6 characters to name the RayService's RayCluster (GenerateRayClusterName).
MAX_RAYSERVICE_NAME = 47


class ServiceError(ValueError):
    pass


@dataclass(frozen=True)
class ServiceSide:
    name: str  # the RayService's name in the stack (serve-tpu); the side's name in the report
    namespace: str
    kind: str  # "tpu" or "gpu"
    group: str
    item: str  # the tpuSlices or gpuPools entry
    accelerator: str  # "v6e 2x4, 8 chips", "8 x nvidia-l4 on g2-standard-96"
    hosts: int  # numOfHosts: nodes per worker-group replica
    units_per_node: int  # google.com/tpu or nvidia.com/gpu per node
    max_group_replicas: int  # the worker group's maxReplicas
    serve_config: dict  # serveConfigV2, parsed
    manifest: dict
    idle_timeout_s: Optional[float] = None  # Ray autoscaler's idleTimeoutSeconds
    capacity: Optional[str] = None
    node_hourly: Optional[float] = None
    price_problem: Optional[str] = None
    rate: dict = field(default_factory=dict)
    topology: Optional[str] = None
    generation: Optional[str] = None

    @property
    def deployment(self) -> dict:
        """The first deployment of the first application: the one the comparison measures."""
        apps = self.serve_config.get("applications") or [{}]
        return (apps[0].get("deployments") or [{}])[0]

    @property
    def application(self) -> dict:
        return (self.serve_config.get("applications") or [{}])[0]

    @property
    def autoscaling(self) -> dict:
        return dict(self.deployment.get("autoscaling_config") or {})

    @property
    def per_replica(self) -> float:
        options = self.deployment.get("ray_actor_options") or {}
        return float(
            (options.get("resources") or {}).get("TPU", 0) if self.kind == "tpu" else options.get("num_gpus", 0)
        ) or float(self.units_per_node)

    @property
    def replicas_per_node(self) -> int:
        return max(1, int(self.units_per_node // self.per_replica))

    @property
    def max_nodes(self) -> int:
        return self.hosts * self.max_group_replicas

    def nodes_for(self, replicas: int) -> int:
        """Nodes Serve's replicas hold at `replicas` (whole worker-group replicas: a TPU slice comes whole)."""
        groups = math.ceil(replicas / (self.replicas_per_node * self.hosts)) if replicas else 0
        return groups * self.hosts


def _limits_kind(group: dict) -> tuple[Optional[str], int]:
    for container in group.get("template", {}).get("spec", {}).get("containers", []):
        limits = (container.get("resources") or {}).get("limits") or {}
        for kind, resource in (("tpu", catalog.TPU_RESOURCE), ("gpu", catalog.GPU_RESOURCE)):
            if resource in limits:
                return kind, int(limits[resource])
    return None, 0


def _entry(values: dict, key: str, name: Optional[str]) -> dict:
    entries = values.get(f"{PROJECT}:{key}") or []
    return next((e for e in entries if isinstance(e, dict) and e.get("name") == name), {})


def _price(plan: dict, kind: str, item: str, units: int) -> tuple[Optional[float], Optional[str], dict, Optional[str]]:
    wanted = "tpuSlice" if kind == "tpu" else "gpuPool"
    cost = next(
        (i for i in (plan.get("cost") or {}).get("items") or [] if i.get("kind") == wanted and i.get("name") == item),
        None,
    )
    if cost is None or "hourly" not in (cost.get("rate") or {}):
        return None, f"the plan's cost has no hourly rate for {item}", {}, None
    rate = dict(cost["rate"])
    # A rate is per chip of a slice or per node of a pool (plan cost items' `unit`).
    return float(rate["hourly"]) * (units if cost.get("unit") == "chip" else 1), None, rate, cost.get("capacity")


def services(plan: dict, values: dict, llm: bool = False) -> list[ServiceSide]:
    """The plan's RayServices with a worker group on a TPU slice or a GPU pool, TPU sides first: those that serve an
    application of their own (`--serve`), or with `llm` those whose application is Ray Serve LLM's (`--llm`,
    measured in tokens)."""
    found = []
    for state in states_of_type(plan, RAYSERVICE_TYPE):
        manifest = state["inputs"]
        if (llm_model_id(yaml.safe_load(manifest["spec"].get("serveConfigV2") or "{}")) is not None) != llm:
            continue
        name, namespace = manifest["metadata"]["name"], manifest["metadata"].get("namespace", "default")
        configured = _entry(values, "rayServices", name)
        cluster = manifest["spec"].get("rayClusterConfig") or {}
        for group in cluster.get("workerGroupSpecs", []):
            kind, units = _limits_kind(group)
            if kind is None:
                continue
            entry: dict[str, Any] = next(
                (g for g in configured.get("workerGroups") or [] if g.get("name") == group["groupName"]), {}
            )
            item = entry.get("slice") if kind == "tpu" else entry.get("gpuPool")
            if not item:
                raise ServiceError(
                    f"RayService {namespace}/{name} group {group['groupName']}: the stack names no "
                    f"{'slice' if kind == 'tpu' else 'gpuPool'} for it"
                )
            found.append(_side(plan, values, manifest, kind, group, item, units))
            break
    return sorted(found, key=lambda s: s.kind != "tpu")


def _side(plan, values, manifest, kind, group, item, units) -> ServiceSide:
    hosts = int(group.get("numOfHosts", 1))
    extra: dict[str, Any] = {}
    if kind == "tpu":
        entry = _entry(values, "tpuSlices", item)
        accelerator = f"{entry.get('generation')} {entry.get('topology')}, {units * hosts} chips"
        extra = {"topology": entry.get("topology"), "generation": entry.get("generation")}
    else:
        entry = _entry(values, "gpuPools", item)
        accelerator = f"{units} x {entry.get('accelerator')}" + (
            f" on {entry['machineType']}" if entry.get("machineType") else ""
        )
    hourly, problem, rate, capacity = _price(plan, kind, item, units)
    cluster = manifest["spec"]["rayClusterConfig"]
    idle = (cluster.get("autoscalerOptions") or {}).get("idleTimeoutSeconds")
    return ServiceSide(
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"].get("namespace", "default"),
        kind=kind,
        group=group["groupName"],
        item=item,
        accelerator=accelerator,
        hosts=hosts,
        units_per_node=units,
        max_group_replicas=int(group.get("maxReplicas", group.get("replicas", 1))),
        serve_config=yaml.safe_load(manifest["spec"]["serveConfigV2"]),
        manifest=copy.deepcopy(manifest),
        idle_timeout_s=None if idle is None else float(idle),
        capacity=capacity,
        node_hourly=hourly,
        price_problem=problem,
        rate=rate,
        **extra,
    )


def service_name(side: ServiceSide, run: str) -> str:
    suffix = run_suffix(run)
    return f"{side.name[: MAX_RAYSERVICE_NAME - len(suffix) - 1].rstrip('-')}-{suffix}"


def run_manifest(side: ServiceSide, run: str) -> dict:
    """A fresh RayService for one run of the side, from the stack's own spec, named and labelled per run."""
    manifest = copy.deepcopy(side.manifest)
    metadata = manifest["metadata"]
    metadata["name"] = service_name(side, run)
    metadata.pop("annotations", None)  # Pulumi's: this object is not Pulumi's
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != "app.kubernetes.io/managed-by"}
    labels.update(
        {
            RUN_LABEL: label_value(run),
            SIDE_LABEL: label_value(side.name),
            "app.kubernetes.io/component": "compare-serve",
        }
    )
    metadata["labels"] = labels
    return manifest
