"""What the plan says a live cluster must have: TPU node pools, KubeRay objects and their TPU worker groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ray_tpu_gke import catalog
from ray_tpu_gke.catalog.resource_types import NODE_POOL, RAY_KIND_PREFIX
from ray_tpu_gke.render import manifests
from ray_tpu_gke.workload.slice import SliceSpec  # callers read it as expected.SliceSpec
from ray_tpu_gke.workload.slice_checks import CLUSTER_LABEL, GroupPlan, PoolPlan
from ray_tpu_gke.workload.slice_checks import tpu_container as _tpu_container

from .. import harness

# --- what the plan says --------------------------------------------------------------------------------------------


@dataclass
class ObjectPlan:
    kind: str
    namespace: str
    name: str
    groups: list[GroupPlan]
    cluster_selector: Optional[str] = None  # a RayJob on an existing RayCluster

    @property
    def subject(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass
class StackPlan:
    pools: list[PoolPlan] = field(default_factory=list)
    objects: list[ObjectPlan] = field(default_factory=list)


def _generation_of_accelerator(accelerator: str) -> catalog.Generation:
    return next(g for g in catalog.GENERATIONS.values() if g.accelerator == accelerator)


def _group_plan(group: dict, autoscaling: bool, slice_name: str = "") -> Optional[GroupPlan]:
    spec = group["template"]["spec"]
    container = _tpu_container(spec)
    if container is None:
        return None
    selector = dict(spec.get("nodeSelector") or {})
    slice_spec = SliceSpec(
        _generation_of_accelerator(selector[catalog.ACCELERATOR_LABEL]).name,
        selector[catalog.TOPOLOGY_LABEL],
        int(group["numOfHosts"]),
        int(container["resources"]["limits"][catalog.TPU_RESOURCE]),
    )
    return GroupPlan(
        group["groupName"],
        slice_spec,
        selector,
        manifests.group_replicas(group),
        int(group["minReplicas"]),
        int(group["maxReplicas"]),
        autoscaling,
        slice_name,
    )


def stack_plan(plan: harness.Plan, config) -> StackPlan:
    """The TPU node pools and KubeRay objects of a plan, with the slice each stands for."""
    out = StackPlan()
    slice_of = {
        (obj.namespace, obj.name, g.name): g.slice or "" for obj in config.ray_objects for g in obj.worker_groups
    }
    for step in plan.steps:
        inputs = step.inputs
        if step.type == NODE_POOL:
            node_config = inputs.get("nodeConfig") or {}
            if catalog.generation_of_machine_type(node_config.get("machineType", "")) is None:
                continue  # the system pool
            slice_name = node_config["labels"][manifests.SLICE_LABEL]
            autoscaling = inputs.get("autoscaling") or {}
            shape = config.slice(slice_name).shape
            out.pools.append(
                PoolPlan(
                    inputs["name"],
                    slice_name,
                    shape.accelerator,
                    shape.topology,
                    shape.machine_type.name,
                    shape.hosts,
                    bool(autoscaling) and autoscaling.get("minNodeCount", 0) == 0,
                )
            )
        elif step.type.startswith(RAY_KIND_PREFIX):
            spec = inputs["spec"]
            cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec
            autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
            where = (inputs["metadata"]["namespace"], inputs["metadata"]["name"])
            groups = [
                g
                for g in (
                    _group_plan(g, autoscaling, slice_of.get((*where, g["groupName"]), ""))
                    for g in manifests.tpu_worker_groups(inputs)
                )
                if g
            ]
            selector = (spec.get("clusterSelector") or {}).get(CLUSTER_LABEL) if inputs["kind"] == "RayJob" else None
            out.objects.append(
                ObjectPlan(
                    inputs["kind"], inputs["metadata"]["namespace"], inputs["metadata"]["name"], groups, selector
                )
            )
    return out
