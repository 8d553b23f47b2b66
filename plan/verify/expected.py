"""What the plan says a live cluster must have: TPU node pools, KubeRay objects and their TPU worker groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ray_tpu_gke import catalog
from ray_tpu_gke.render import manifests
from workloads.slice import SliceSpec

from .. import harness
from .labels import CLUSTER_LABEL

RAY_KIND_PREFIX = "kubernetes:ray.io/v1:"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"



# --- what the plan says --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolPlan:
    name: str
    slice: str
    shape: catalog.SliceShape
    autoscaled_from_zero: bool


@dataclass(frozen=True)
class GroupPlan:
    group: str
    spec: SliceSpec
    selector: dict
    replicas: int
    min_replicas: int
    max_replicas: int
    autoscaling: bool


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


def _tpu_container(pod_spec: dict) -> Optional[dict]:
    """The container that asks for TPU chips (the one the TPU webhook injects its environment into)."""
    return next((c for c in pod_spec.get("containers", [])
                 if catalog.TPU_RESOURCE in ((c.get("resources") or {}).get("limits") or {})), None)


def _group_plan(group: dict, autoscaling: bool) -> Optional[GroupPlan]:
    spec = group["template"]["spec"]
    container = _tpu_container(spec)
    if container is None:
        return None
    selector = dict(spec.get("nodeSelector") or {})
    slice_spec = SliceSpec(_generation_of_accelerator(selector[catalog.ACCELERATOR_LABEL]).name,
                           selector[catalog.TOPOLOGY_LABEL], int(group["numOfHosts"]),
                           int(container["resources"]["limits"][catalog.TPU_RESOURCE]))
    return GroupPlan(group["groupName"], slice_spec, selector, int(group["replicas"]), int(group["minReplicas"]),
                     int(group["maxReplicas"]), autoscaling)


def stack_plan(plan: harness.Plan, config) -> StackPlan:
    """The TPU node pools and KubeRay objects of a plan, with the slice each stands for."""
    out = StackPlan()
    for step in plan.steps:
        inputs = step.inputs
        if step.type == NODE_POOL_TYPE:
            node_config = inputs.get("nodeConfig") or {}
            if catalog.generation_of_machine_type(node_config.get("machineType", "")) is None:
                continue  # the system pool
            slice_name = node_config["labels"][manifests.SLICE_LABEL]
            autoscaling = inputs.get("autoscaling") or {}
            out.pools.append(PoolPlan(inputs["name"], slice_name, config.slice(slice_name).shape,
                                      bool(autoscaling) and autoscaling.get("minNodeCount", 0) == 0))
        elif step.type.startswith(RAY_KIND_PREFIX):
            spec = inputs["spec"]
            cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec
            autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
            groups = [g for g in (_group_plan(g, autoscaling) for g in manifests.tpu_worker_groups(inputs)) if g]
            selector = (spec.get("clusterSelector") or {}).get(CLUSTER_LABEL) if inputs["kind"] == "RayJob" else None
            out.objects.append(ObjectPlan(inputs["kind"], inputs["metadata"]["namespace"], inputs["metadata"]["name"],
                                          groups, selector))
    return out



