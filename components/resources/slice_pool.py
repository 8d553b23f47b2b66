"""TPU slices as node pools: one pool per slice, sized from the catalogue, placed so the slice's ICI is intact."""

import pulumi
import pulumi_gcp as gcp

from .. import admission, catalog
from ..render import manifests, upgrades
from ..spec.args import TpuSlicePoolsArgs
from ..spec.component_args import validate_pool_args
from ..spec.models import GpuPoolConfig, TpuSliceConfig
from .cluster import node_hardening
from .identity import NODE_ROLES
from .outputs import as_output, gathered, known

# A TPU host runs one Ray worker pod plus system pods; a small per-node pod range saves the pods' IP space.
TPU_MAX_PODS_PER_NODE = 16


def pool_name(tpu_slice: TpuSliceConfig, index: int) -> str:
    """Stable per slice: adding, removing or reordering other slices never renames a pool."""
    return f"{tpu_slice.name}-{index}"


# The nested inputs below are plain dicts in the SDK's snake_case, which pulumi-gcp takes as well as its `...Args`
# classes (each input is typed `Union[...Args, ...ArgsDict]`) and sends the same: a class is turned into this dict
# before it is sent (pulumi rpc.serialize_property, `input_type_to_dict`), at a few dozen calls per class.
def reservation_affinity(
    tpu_slice: TpuSliceConfig,
) -> gcp.container.NodePoolNodeConfigReservationAffinityArgsDict | None:
    if tpu_slice.capacity == "reservation":
        if tpu_slice.reservation is None:  # validation requires it with reservation capacity
            raise ValueError(f"slice {tpu_slice.name}: reservation capacity names no reservation")
        return {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [tpu_slice.reservation],
        }
    if tpu_slice.capacity in ("spot", "flexStart"):
        return {"consume_reservation_type": "NO_RESERVATION"}
    return None


def autoscaling(
    tpu_slice: TpuSliceConfig, shape: catalog.SliceShape
) -> gcp.container.NodePoolAutoscalingArgsDict | None:
    """Per-zone bounds, never total limits: a multi-host pool goes from 0 to all its hosts at once."""
    if not tpu_slice.autoscaled:
        return None
    return {"min_node_count": tpu_slice.min_nodes, "max_node_count": shape.hosts, "location_policy": "ANY"}


def placement(
    shape: catalog.SliceShape, workload_policy: gcp.compute.ResourcePolicy | None
) -> gcp.container.NodePoolPlacementPolicyArgsDict | None:
    if not shape.multi_host:
        return None
    if workload_policy is not None:
        return {"type": "COMPACT", "policy_name": workload_policy.name}
    return {"type": "COMPACT", "tpu_topology": shape.topology}


def node_service_account(name: str, args, parent: pulumi.Resource) -> pulumi.Input[str]:
    """The nodes' service account: `node_service_account` when given, else a new one of this component with only
    what nodes need (identity.NODE_ROLES), never the Compute Engine default account GKE would otherwise use."""
    if args.get("node_service_account"):
        return args["node_service_account"]
    child = pulumi.ResourceOptions(parent=parent)
    cluster = as_output(args["cluster"]).apply(lambda c: c.rsplit("/", 1)[-1])  # a name or an id
    account = gcp.serviceaccount.Account(
        f"{name}-nodes",
        account_id=cluster.apply(lambda c: admission.service_account_id(f"{c}-{name}", "nodes")),
        display_name=cluster.apply(lambda c: f"GKE nodes of {name} in {c}"),
        project=args["project"],
        opts=child,
    )
    for role in NODE_ROLES:
        gcp.projects.IAMMember(
            f"{name}-nodes-{role.split('/')[-1]}",
            project=args["project"],
            role=role,
            member=account.email.apply(lambda email: f"serviceAccount:{email}"),
            opts=child,
        )
    return account.email


class TpuSlicePools(pulumi.ComponentResource):
    """The node pools of one TPU slice entry: `count` pools, each one whole slice with its topology intact."""

    pool_names: pulumi.Output[list[str]]
    """Names of the node pools, one per slice."""
    node_selector: pulumi.Output[dict[str, str]]
    """Node labels a pod selects to run on these slices (accelerator, topology, slice)."""

    def __init__(self, name: str, args: TpuSlicePoolsArgs, opts: pulumi.ResourceOptions | None = None):
        tpu_slice, warnings = validate_pool_args(args, name)  # before anything is registered
        for warning in warnings:
            pulumi.log.warn(warning)
        super().__init__("ray-tpu-gke:index:TpuSlicePools", name, None, opts)
        shape = tpu_slice.shape
        location = args["location"]
        zone = tpu_slice.zone or location
        region = admission.region_of(location)
        protect = bool(args.get("deletion_protection", True))
        child = pulumi.ResourceOptions(parent=self)
        workload_policy = None
        if manifests.needs_workload_policy(shape):
            workload_policy = gcp.compute.ResourcePolicy(
                f"{name}-workload",
                name=as_output(args["cluster"]).apply(
                    lambda cluster: manifests.workload_policy_name(cluster.rsplit("/", 1)[-1], tpu_slice)
                ),
                project=args["project"],
                region=region,
                workload_policy={"type": "HIGH_THROUGHPUT", "accelerator_topology": shape.topology},
                opts=child,
            )
        flex = tpu_slice.capacity == "flexStart"
        node_labels = {
            manifests.SLICE_LABEL: tpu_slice.name,
            manifests.SLICE_GENERATION_LABEL: shape.generation.name,
            manifests.SLICE_TOPOLOGY_LABEL: shape.topology,
        }
        if args.get("environment"):
            node_labels["ray-tpu-gke/environment"] = args["environment"]
        ignore = ["initialNodeCount", "placementPolicy.type"] + (["nodeCount"] if tpu_slice.autoscaled else [])
        if workload_policy is not None:
            # GKE reads the slice's topology back from the policy; the program never sends it (the policy replaces
            # it), so without this every later `pulumi up` would replace the slice (placementPolicy is ForceNew).
            ignore.append("placementPolicy.tpuTopology")
        node_config: gcp.container.NodePoolNodeConfigArgsDict = {
            **node_hardening(node_service_account(name, args, self)),
            "machine_type": shape.machine_type.name,
            "labels": node_labels,
            "resource_labels": args.get("labels") or {},
            "taints": [
                {"key": manifests.TPU_TAINT["key"], "value": manifests.TPU_TAINT["value"], "effect": "NO_SCHEDULE"}
            ],
        }
        if tpu_slice.capacity == "spot":
            node_config["spot"] = True
        if flex:
            node_config["flex_start"] = True
        affinity = reservation_affinity(tpu_slice)
        if affinity is not None:
            node_config["reservation_affinity"] = affinity
        # The nodes' account (given or created here), for the program's other pools; not a provider output.
        self.node_service_account = as_output(node_config["service_account"])
        self.pools = []
        for index in range(tpu_slice.count):
            self.pools.append(
                gcp.container.NodePool(
                    pool_name(tpu_slice, index),
                    name=pool_name(tpu_slice, index),
                    project=args["project"],
                    cluster=args["cluster"],
                    location=location,
                    node_locations=[zone],
                    node_count=None if tpu_slice.autoscaled else shape.hosts,
                    # Only read at creation; ignored afterwards so a new minimum never replaces the slice.
                    initial_node_count=tpu_slice.min_nodes if tpu_slice.autoscaled else None,
                    autoscaling=autoscaling(tpu_slice, shape),
                    max_pods_per_node=TPU_MAX_PODS_PER_NODE,
                    placement_policy=placement(shape, workload_policy),
                    # Flex-start VMs are not repaired in place; they are returned and requested again.
                    management={"auto_repair": not flex, "auto_upgrade": True},
                    upgrade_settings=_upgrade_settings(tpu_slice),
                    node_config=node_config,
                    opts=pulumi.ResourceOptions(parent=self, protect=protect, ignore_changes=ignore),
                )
            )
        self.pool_names = gathered([p.name for p in self.pools])
        selector = manifests.slice_node_selector(tpu_slice, standard=True)
        self.node_selector = known(selector)
        # The values the program chose, registered as they are: no output to await for each.
        self.register_outputs(
            {"poolNames": [pool_name(tpu_slice, i) for i in range(tpu_slice.count)], "nodeSelector": selector}
        )


def _upgrade_settings(entry: TpuSliceConfig | GpuPoolConfig) -> gcp.container.NodePoolUpgradeSettingsArgsDict | None:
    """The pool's upgradeSettings as render/upgrades.py chooses them (None: GKE's own)."""
    settings = upgrades.upgrade_settings(entry)
    if settings is None:
        return None
    return {
        "strategy": settings["strategy"],
        "max_surge": settings["maxSurge"],
        "max_unavailable": settings["maxUnavailable"],
    }
