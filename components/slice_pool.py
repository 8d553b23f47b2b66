"""TPU slices as node pools: one pool per slice, sized from the catalogue, placed so the slice's ICI is intact."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from . import catalog, manifests
from .cluster import node_hardening
from .config import StackConfig, TpuSliceConfig

# A TPU host runs one Ray worker pod plus system pods; a small per-node pod range saves the pods' IP space.
TPU_MAX_PODS_PER_NODE = 16


def pool_name(tpu_slice: TpuSliceConfig, index: int) -> str:
    """Stable per slice: adding, removing or reordering other slices never renames a pool."""
    return f"{tpu_slice.name}-{index}"


def reservation_affinity(tpu_slice: TpuSliceConfig):
    if tpu_slice.capacity == "reservation":
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=[tpu_slice.reservation],
        )
    if tpu_slice.capacity in ("spot", "flexStart"):
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
    return None


def autoscaling(tpu_slice: TpuSliceConfig, shape: catalog.SliceShape):
    """Per-zone bounds, never total limits: a multi-host pool goes from 0 to all its hosts at once."""
    if not tpu_slice.autoscaled:
        return None
    return gcp.container.NodePoolAutoscalingArgs(
        min_node_count=tpu_slice.autoscaling.min_nodes,
        max_node_count=shape.hosts,
        location_policy="ANY",
    )


def placement(shape: catalog.SliceShape, workload_policy: gcp.compute.ResourcePolicy | None):
    if not shape.multi_host:
        return None
    if workload_policy is not None:
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=workload_policy.name)
    return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=shape.topology)


def needs_workload_policy(shape: catalog.SliceShape) -> bool:
    # GKE places multi-host Ironwood slices through a HIGH_THROUGHPUT workload policy instead of a topology flag.
    return shape.multi_host and shape.generation.name == "tpu7x"


class TpuSlicePools(pulumi.ComponentResource):
    """The `count` node pools of one tpuSlices entry, each one whole slice."""

    pools: list[gcp.container.NodePool]

    def __init__(self, name: str, tpu_slice: TpuSliceConfig, config: StackConfig, cluster: gcp.container.Cluster,
                 node_email: pulumi.Input[str], labels: dict[str, str], opts: pulumi.ResourceOptions | None = None):
        super().__init__("ray-tpu-gke:index:TpuSlicePools", name, None, opts)
        shape = tpu_slice.shape
        child = pulumi.ResourceOptions(parent=self)
        workload_policy = None
        if needs_workload_policy(shape):
            workload_policy = gcp.compute.ResourcePolicy(
                f"{name}-workload",
                name=f"{config.cluster.name}-{tpu_slice.name}"[:63],
                project=config.project,
                region=config.region,
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=shape.topology),
                opts=child,
            )
        flex = tpu_slice.capacity == "flexStart"
        node_labels = {
            manifests.SLICE_LABEL: tpu_slice.name,
            "ray-tpu-gke/generation": shape.generation.name,
            "ray-tpu-gke/topology": shape.topology,
            "ray-tpu-gke/environment": config.environment,
        }
        ignore = ["initialNodeCount", "placementPolicy.type"] + (["nodeCount"] if tpu_slice.autoscaled else [])
        self.pools = []
        for index in range(tpu_slice.count):
            self.pools.append(gcp.container.NodePool(
                pool_name(tpu_slice, index),
                name=pool_name(tpu_slice, index),
                project=config.project,
                cluster=cluster.name,
                location=config.cluster.location,
                node_locations=[config.slice_zone(tpu_slice)],
                node_count=None if tpu_slice.autoscaled else shape.hosts,
                # Only read at creation; ignored afterwards so a new minimum never replaces the slice.
                initial_node_count=tpu_slice.autoscaling.min_nodes if tpu_slice.autoscaled else None,
                autoscaling=autoscaling(tpu_slice, shape),
                max_pods_per_node=TPU_MAX_PODS_PER_NODE,
                placement_policy=placement(shape, workload_policy),
                # Flex-start VMs are not repaired in place; they are returned and requested again.
                management=gcp.container.NodePoolManagementArgs(auto_repair=not flex, auto_upgrade=True),
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    **node_hardening(node_email),
                    machine_type=shape.machine_type.name,
                    spot=True if tpu_slice.capacity == "spot" else None,
                    flex_start=True if flex else None,
                    reservation_affinity=reservation_affinity(tpu_slice),
                    labels=node_labels,
                    resource_labels=labels,
                    taints=[gcp.container.NodePoolNodeConfigTaintArgs(
                        key=manifests.TPU_TAINT["key"], value=manifests.TPU_TAINT["value"],
                        effect="NO_SCHEDULE")],
                    shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                        enable_secure_boot=True, enable_integrity_monitoring=True),
                    workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                        mode="GKE_METADATA"),
                ),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    protect=config.cluster.deletion_protection,
                    ignore_changes=ignore,
                ),
            ))
        self.register_outputs({"pools": [p.name for p in self.pools]})
