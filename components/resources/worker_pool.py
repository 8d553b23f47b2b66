"""GPU and CPU node pools beside the TPU slices: one pool per entry, one Ray worker pod per node.

A GPU pool is what `gcloud container node-pools create --machine-type M --accelerator type=T,count=N,
gpu-driver-version=default` creates (GKE "Run GPUs in GKE Standard node pools"), with the GPU taint set explicitly
(admission.GPU_TAINT), the capacity type's settings as for TPU slices, and the pool label Ray worker groups select.
"""

import pulumi
import pulumi_gcp as gcp

from .. import admission
from ..render import manifests
from ..spec.args import WorkerPoolArgs
from ..spec.component_args import validate_worker_pool_args
from ..spec.models import CpuPoolConfig, GpuPoolConfig
from .cluster import node_hardening
from .outputs import known
from .slice_pool import _upgrade_settings, node_service_account


def _autoscaling(pool: GpuPoolConfig | CpuPoolConfig, total: bool) -> gcp.container.NodePoolAutoscalingArgsDict | None:
    if not pool.autoscaled:
        return None
    # Spot and flex-start capacity goes where it is (ANY); on-demand pools balance their zones.
    policy = "ANY" if getattr(pool, "capacity", "onDemand") in ("spot", "flexStart") else "BALANCED"
    if total:  # a pool across the cluster's zones: limits for the whole pool (admission.PER_ZONE_LIMITS)
        return {
            "total_min_node_count": pool.min_nodes,
            "total_max_node_count": pool.max_nodes,
            "location_policy": policy,
        }
    return {"min_node_count": pool.min_nodes, "max_node_count": pool.max_nodes, "location_policy": policy}


def _reservation_affinity(
    pool: GpuPoolConfig | CpuPoolConfig,
) -> gcp.container.NodePoolNodeConfigReservationAffinityArgsDict | None:
    capacity = pool.capacity
    if capacity == "reservation":
        if not isinstance(pool, GpuPoolConfig) or pool.reservation is None:  # validation requires it
            raise ValueError(f"pool {pool.name}: reservation capacity names no reservation")
        return {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [pool.reservation],
        }
    if capacity in ("spot", "flexStart"):
        return {"consume_reservation_type": "NO_RESERVATION"}
    return None


class WorkerPool(pulumi.ComponentResource):
    """A GPU or CPU node pool for Ray worker groups, in an existing Standard cluster."""

    pool_name: pulumi.Output[str]
    """The node pool's name."""
    node_selector: pulumi.Output[dict[str, str]]
    """Node labels a pod selects to run on this pool."""

    def __init__(self, name: str, args: WorkerPoolArgs, opts: pulumi.ResourceOptions | None = None):
        pool, warnings = validate_worker_pool_args(args, name)  # before anything is registered
        for warning in warnings:
            pulumi.log.warn(warning)
        gpu = isinstance(pool, GpuPoolConfig)
        super().__init__("ray-tpu-gke:index:WorkerPool", name, None, opts)
        location = args["location"]
        zone = pool.zone or (location if admission.is_zone(location) else None)
        flex = gpu and pool.capacity == "flexStart"
        labels = {manifests.POOL_LABEL: pool.name}
        # Plain dicts for the nested inputs, as in slice_pool.py.
        node_config: gcp.container.NodePoolNodeConfigArgsDict = {
            **node_hardening(node_service_account(name, args, self)),
            "machine_type": pool.machine_type,
            "labels": labels,
            "resource_labels": args.get("labels") or {},
        }
        if pool.capacity == "spot":
            node_config["spot"] = True
        affinity = _reservation_affinity(pool)
        if affinity is not None:
            node_config["reservation_affinity"] = affinity
        if isinstance(pool, GpuPoolConfig):
            if flex:
                node_config["flex_start"] = True
            node_config["guest_accelerators"] = [
                {
                    "type": pool.accelerator,
                    "count": pool.machine.gpus,
                    "gpu_driver_installation_config": {"gpu_driver_version": "DEFAULT"},
                }
            ]
            node_config["taints"] = [
                {"key": manifests.GPU_TAINT["key"], "value": manifests.GPU_TAINT["value"], "effect": "NO_SCHEDULE"}
            ]
        ignore = ["initialNodeCount"] + (["nodeCount"] if pool.autoscaled else [])
        self.pool = gcp.container.NodePool(
            pool.name,
            name=pool.name,
            project=args["project"],
            cluster=args["cluster"],
            location=location,
            node_locations=[zone] if zone else None,
            node_count=None if pool.autoscaled else pool.count,
            initial_node_count=pool.min_nodes if pool.autoscaled else None,
            autoscaling=_autoscaling(pool, total=zone is None),
            management={"auto_repair": not flex, "auto_upgrade": True},
            upgrade_settings=_upgrade_settings(pool) if isinstance(pool, GpuPoolConfig) else None,
            node_config=node_config,
            # Protected by default, as TPU pools are: a deleted pool takes its Ray workers' nodes with it.
            opts=pulumi.ResourceOptions(
                parent=self, protect=bool(args.get("deletion_protection", True)), ignore_changes=ignore
            ),
        )
        self.pool_name = self.pool.name
        selector = dict(labels)
        if isinstance(pool, GpuPoolConfig):
            selector[manifests.catalog.GPU_ACCELERATOR_LABEL] = pool.accelerator
        self.node_selector = known(selector)
        self.register_outputs({"poolName": self.pool_name, "nodeSelector": selector})
