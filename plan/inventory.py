"""What any program that uses the library provisions, read back from its plan: the slices, pools, cluster and Ray
objects it registered, as a `StackConfig`, so its capacity, pool, quota and cost tables are this package's own.

A project of this package's stack-file schema has its config validated before its program runs (plan/stackfile.py);
any other project (`ray-tpu-gke plan` in its folder) configures the components in its own way, so what it provisions
is known only from what it registers. The library's components label what they create (`ray-tpu-gke/slice`,
`ray-tpu-gke/pool`, `components/render/manifests.py`); node pools of the program's own (no such label) are priced as
CPU pools by their machine type. Nothing is guessed: what cannot be read back is named in a warning and left out.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

from pydantic import ValidationError
from ray_tpu_gke import admission
from ray_tpu_gke.catalog.resource_types import CLUSTER, NODE_POOL, RAY_KIND_PREFIX, UNKNOWN
from ray_tpu_gke.render import manifests
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.models import (
    ClusterConfig,
    CpuPoolConfig,
    GpuPoolConfig,
    StorageConfig,
    TpuSliceConfig,
    validate_as,
)
from ray_tpu_gke.spec.ray_models import RayClusterConfig

from .harness import Plan

# Where each KubeRay kind keeps its worker groups (KubeRay v1 CRDs: RayCluster.spec, RayService.spec.rayClusterConfig,
# RayJob.spec.rayClusterSpec; ray-operator/apis/ray/v1 of ray-project/kuberay).
RAY_KINDS = {
    RAY_KIND_PREFIX + "RayCluster": (),
    RAY_KIND_PREFIX + "RayService": ("rayClusterConfig",),
    RAY_KIND_PREFIX + "RayJob": ("rayClusterSpec",),
}


@dataclasses.dataclass
class Inventory:
    config: StackConfig
    has_system_pool: bool  # False: the estimate's default system pool is not the program's, leave it out
    has_cluster: bool  # False: the program plans into a cluster it does not create (no GKE fee of its own)
    warnings: list[str]
    # (namespace, name) -> KubeRay kind of each Ray object read back (all are read as RayClusterConfig)
    kinds: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)


def _known(value: Any) -> bool:
    return value not in (None, UNKNOWN) and not (isinstance(value, str) and value.startswith("urn:"))


def _capacity(node_config: dict) -> tuple[str, str | None]:
    """onDemand, spot, flexStart or reservation (with its name), as slice_pool.py and worker_pool.py set them."""
    if node_config.get("spot"):
        return "spot", None
    if node_config.get("flexStart"):
        return "flexStart", None
    affinity = node_config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION" and affinity.get("values"):
        return "reservation", affinity["values"][0]
    return "onDemand", None


def _zone(inputs: dict) -> str | None:
    locations = inputs.get("nodeLocations") or []
    return locations[0] if len(locations) == 1 and _known(locations[0]) else None


def _nodes(inputs: dict) -> tuple[int, dict | None]:
    """A pool's node count and autoscaling bounds (per-zone or total, whichever the pool sets)."""
    scaling = inputs.get("autoscaling")
    if scaling:
        low = scaling.get("minNodeCount", scaling.get("totalMinNodeCount", 0))
        high = scaling.get("maxNodeCount", scaling.get("totalMaxNodeCount", low or 1))
        return high, {"enabled": True, "min_nodes": low, "max_nodes": high}
    count = inputs.get("nodeCount")
    return (count if isinstance(count, int) else inputs.get("initialNodeCount") or 1), None


def _cluster_spec(spec: dict, path: tuple[str, ...]) -> dict:
    """The RayCluster spec inside a KubeRay object's spec (RAY_KINDS)."""
    for key in path:
        spec = spec.get(key) or {}
    return spec


class _Reader:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.warnings: list[str] = []
        self.kinds: dict[tuple[str, str], str] = {}

    def validated(self, model, raw: dict, what: str):
        try:
            return validate_as(model, raw, "args")
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            self.warnings.append(f"{what} is left out of the capacity and cost tables: {where}: {first['msg']}")
            return None

    def steps(self, type_: str):
        return [s for s in self.plan.steps if s.type == type_ and s.custom]

    def slices(self, pools) -> list[TpuSliceConfig]:
        by_slice: dict[str, list] = defaultdict(list)
        for step in pools:
            by_slice[step.inputs["nodeConfig"]["labels"][manifests.SLICE_LABEL]].append(step)
        out = []
        for name, steps in by_slice.items():
            inputs = steps[0].inputs
            labels = inputs["nodeConfig"]["labels"]
            capacity, reservation = _capacity(inputs["nodeConfig"])
            raw = {
                "name": name,
                "generation": labels.get(manifests.SLICE_GENERATION_LABEL),
                "topology": labels.get(manifests.SLICE_TOPOLOGY_LABEL),
                "machine_type": inputs["nodeConfig"].get("machineType"),
                "count": len(steps),
                "capacity": capacity,
                "reservation": reservation,
                "zone": _zone(inputs),
            }
            _, scaling = _nodes(inputs)
            if scaling:
                raw["autoscaling"] = {"enabled": True, "min_nodes": scaling["min_nodes"]}
            tpu = self.validated(
                TpuSliceConfig,
                {k: v for k, v in raw.items() if v is not None},
                f"TPU slice {name} (node pools {', '.join(s.name for s in steps)})",
            )
            if tpu is not None:
                out.append(tpu)
        return out

    def pool(self, step, name: str):
        inputs = step.inputs
        node_config = inputs.get("nodeConfig") or {}
        count, scaling = _nodes(inputs)
        capacity, reservation = _capacity(node_config)
        raw = {
            "name": name,
            "machine_type": node_config.get("machineType"),
            "count": count,
            "zone": _zone(inputs),
            "capacity": capacity,
        }
        if scaling:
            raw["autoscaling"] = scaling
        accelerators = node_config.get("guestAccelerators") or []
        if accelerators:
            raw.update(accelerator=accelerators[0].get("type"), reservation=reservation, allow_unlisted_zone=True)
            model, what = GpuPoolConfig, f"GPU pool {name}"
        else:
            model, what = CpuPoolConfig, f"node pool {name}"
        return self.validated(model, {k: v for k, v in raw.items() if v is not None}, what)

    def ray_objects(self, slices, gpu_pools, cpu_pools) -> list[RayClusterConfig]:
        targets = {**{p.name: "cpu_pool" for p in cpu_pools}, **{p.name: "gpu_pool" for p in gpu_pools}}
        out = []
        for type_, path in RAY_KINDS.items():
            for step in self.steps(type_):
                meta = step.inputs.get("metadata") or {}
                cluster = _cluster_spec(step.inputs.get("spec") or {}, path)
                groups = []
                for group in cluster.get("workerGroupSpecs") or []:
                    selector = (group.get("template") or {}).get("spec", {}).get("nodeSelector") or {}
                    target = {}
                    if selector.get(manifests.SLICE_LABEL) in {s.name for s in slices}:
                        target = {"slice": selector[manifests.SLICE_LABEL]}
                    elif selector.get(manifests.POOL_LABEL) in targets:
                        pool = selector[manifests.POOL_LABEL]
                        target = {targets[pool]: pool}
                    if target:
                        groups.append(
                            {
                                "name": group.get("groupName", "workers"),
                                **target,
                                "replicas": manifests.group_replicas(group),
                            }
                        )
                if groups:
                    raw = {
                        "name": meta.get("name", step.name),
                        "namespace": meta.get("namespace", "ray"),
                        "worker_groups": groups,
                    }
                    # The Ray version and image it runs (the version set, the image warnings of plan/version_set.py)
                    head = ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
                    image = next((c.get("image") for c in head.get("containers") or [] if c.get("image")), None)
                    if _known(image) and _known(cluster.get("rayVersion")):
                        raw.update(image=image, ray_version=cluster["rayVersion"])
                    obj = self.validated(RayClusterConfig, raw, f"{step.type} {step.name}")
                    if obj is not None:
                        out.append(obj)
                        self.kinds[(obj.namespace, obj.name)] = type_.rsplit(":", 1)[-1]
        return out


def read(plan: Plan, project_id: str | None = None) -> Inventory:
    """The StackConfig of what the plan provisions (validated by the same models as a stack file)."""
    reader = _Reader(plan)
    pools = reader.steps(NODE_POOL)
    clusters = reader.steps(CLUSTER)
    tpu_pools = [s for s in pools if manifests.SLICE_LABEL in ((s.inputs.get("nodeConfig") or {}).get("labels") or {})]
    system = [
        s
        for s in pools
        if s not in tpu_pools
        and (
            ((s.inputs.get("nodeConfig") or {}).get("labels") or {}).get(manifests.POOL_LABEL) == manifests.SYSTEM_POOL
            or s.inputs.get("name") == manifests.SYSTEM_POOL
        )
    ]
    gpu_pools, cpu_pools = [], []
    for step in pools:
        if step in tpu_pools or step in system:
            continue
        labels = (step.inputs.get("nodeConfig") or {}).get("labels") or {}
        pool = reader.pool(step, labels.get(manifests.POOL_LABEL) or step.inputs.get("name") or step.name)
        if pool is not None:
            (gpu_pools if isinstance(pool, GpuPoolConfig) else cpu_pools).append(pool)

    where = clusters[0].inputs if clusters else (pools[0].inputs if pools else {})
    location = where.get("location") if _known(where.get("location")) else None
    cluster_raw: dict[str, Any] = {
        "name": (where.get("name") if clusters else where.get("cluster")) or "cluster",
        "location": location or "us-central1",
        "mode": "autopilot" if clusters and clusters[0].inputs.get("enableAutopilot") else "standard",
    }
    if clusters:  # the version set's channel and pin are the cluster's own, where the program creates it
        channel = (where.get("releaseChannel") or {}).get("channel")
        if _known(channel):
            cluster_raw["release_channel"] = channel
        if _known(where.get("minMasterVersion")):
            cluster_raw["min_master_version"] = where["minMasterVersion"]
    if not _known(cluster_raw["name"]):
        cluster_raw["name"] = "cluster"
    if location is None:
        reader.warnings.append("the cluster's location is not known offline: prices and quota are for us-central1")
    if system:
        count, scaling = _nodes(system[0].inputs)
        low, high = (scaling["min_nodes"], scaling["max_nodes"]) if scaling else (count, count)
        cluster_raw["system_pool"] = {
            "machine_type": system[0].inputs["nodeConfig"].get("machineType"),
            "min_nodes": low,
            "max_nodes": max(high, 1),
        }
    cluster = reader.validated(ClusterConfig, cluster_raw, f"the cluster {cluster_raw['name']}")
    if cluster is None:
        cluster = ClusterConfig.model_construct(
            name="cluster", location=cluster_raw["location"], mode=cluster_raw["mode"]
        )  # defaults for the rest
    slices = reader.slices(tpu_pools)
    objects = reader.ray_objects(slices, gpu_pools, cpu_pools)
    project = project_id or where.get("project") or "unknown"
    config = StackConfig(
        stack=plan.stack,
        project=str(project),
        region=admission.region_of(cluster.location),
        environment=plan.stack,
        labels={},
        cluster=cluster,
        storage=StorageConfig(enabled=False),
        tpu_slices=tuple(slices),
        gpu_pools=tuple(gpu_pools),
        cpu_pools=tuple(cpu_pools),
        ray_clusters=tuple(objects),
        ray_services=(),
        ray_jobs=(),
    )
    return Inventory(config, bool(system), bool(clusters), reader.warnings, reader.kinds)


def cost(inventory: Inventory, rates=None):
    """The estimate of what the program provisions (plan/cost.py's CostResult), at the price table's list prices and
    `rates` (a PricingConfig: `ray-tpu-gke plan --rates FILE`); a missing rate names that flag.

    A standard-mode estimate counts the cluster's system pool and its GKE management fee; a program that registers
    neither (its cluster is someone else's) pays for neither here, so those lines are dropped."""
    from ray_tpu_gke.render import pricing

    from . import cost as costs

    config = inventory.config if rates is None else dataclasses.replace(inventory.config, pricing=rates)
    result = dataclasses.replace(costs.estimate(config), rates_key=costs.LIBRARY_RATES)
    for missing in result.json.get("missing", []):
        missing["problem"] = missing["problem"].replace(pricing.RATES_KEY, costs.LIBRARY_RATES, 1)
    estimate = result.estimate
    if estimate is None:
        return result
    changes = {}
    if not inventory.has_system_pool and inventory.config.standard:
        changes["items"] = tuple(
            i for i in estimate.items if not (i.kind == "cpuPool" and i.name == pricing.SYSTEM_POOL)
        )
    if not inventory.has_cluster and getattr(estimate, "fees", ()):
        changes["fees"] = ()
    if not changes:
        return result
    estimate = dataclasses.replace(estimate, **changes)
    json = estimate.to_json()
    for missing in json.get("missing", []):
        missing["problem"] = missing["problem"].replace(pricing.RATES_KEY, costs.LIBRARY_RATES, 1)
    return dataclasses.replace(result, estimate=estimate, json=json)
