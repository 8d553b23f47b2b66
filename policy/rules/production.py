"""Production: nothing is lost by accident, the control plane is not open to all.

Production means a stack whose name starts with `prod`, or resources labelled with an `environment` that does
(config `ray-tpu-gke:environment`, which defaults to the stack name).
"""

from __future__ import annotations

import ipaddress

from .. import slices
from ..view import CLUSTER, NODE_POOL, UNKNOWN, Resource, StackView, is_known
from .base import ADVISORY, MANDATORY, Findings, Messages, resource_rule, stack_rule


@resource_rule(
    "prod-deletion-protection",
    MANDATORY,
    "In production the GKE cluster sets deletionProtection: true.",
    "GKE refuses to delete a protected cluster, whatever a plan says; a prod cluster holds every TPU slice and "
    "Ray service.",
    types=(CLUSTER,),
)
def deletion_protection(r: Resource) -> Messages:
    value = r.get("deletionProtection")
    if r.production and value != UNKNOWN and value is not True:
        yield f"cluster {r.name}: deletionProtection is {value!r} in production ({r.production}); set it to true"


@resource_rule(
    "prod-protect",
    MANDATORY,
    "In production the GKE cluster and every TPU node pool carry Pulumi's protect option.",
    "Pulumi then refuses to delete or replace them, so a renamed resource or an edit that forces replacement "
    "cannot drop a reserved multi-host slice.",
    types=(CLUSTER, NODE_POOL),
)
def protect(r: Resource) -> Messages:
    if not r.production or r.protect:
        return
    if r.type == CLUSTER:
        yield f"cluster {r.name} is not protected in production ({r.production}); set protect=True"
    elif slices.is_tpu_pool(r):
        yield f"TPU node pool {r.name} is not protected in production ({r.production}); set protect=True"


@resource_rule(
    "prod-master-authorized-networks",
    MANDATORY,
    "In production only listed networks reach the control plane (masterAuthorizedNetworksConfig.cidrBlocks).",
    "Without authorized networks the Kubernetes API of a prod cluster is reachable from the whole internet.",
    types=(CLUSTER,),
)
def master_authorized_networks(r: Resource) -> Messages:
    if not r.production:
        return
    blocks = r.get("masterAuthorizedNetworksConfig.cidrBlocks")
    if blocks == UNKNOWN:
        return
    if not blocks:
        yield (
            f"cluster {r.name}: masterAuthorizedNetworksConfig.cidrBlocks is empty in production "
            f"({r.production}); "
            "list the networks allowed to reach the control plane"
        )
        return
    for block in blocks:
        cidr = block.get("cidrBlock") if isinstance(block, dict) else None
        if is_known(cidr):
            try:
                open_to_all = ipaddress.ip_network(cidr, strict=False).prefixlen == 0
            except ValueError:
                continue
            if open_to_all:
                yield f"cluster {r.name}: masterAuthorizedNetworksConfig allows {cidr}, which is everyone"


@stack_rule(
    "prod-serving-capacity",
    ADVISORY,
    "In production RayService worker groups do not run on Spot or flex-start capacity.",
    "Spot VMs are preempted and flex-start VMs are returned after at most seven days: a service on them loses "
    "replicas without warning.",
)
def serving_capacity(view: StackView) -> Findings:
    if not view.production:
        return
    pools = slices.tpu_pools(view)
    flex_classes = {name for name, r in slices.compute_classes(view).items() if slices.flex_start_class(r)}
    for r in view.ray_objects:
        if r.kind != "RayService":
            continue
        for group in slices.tpu_worker_groups(r):
            where = f"{slices.ray_label(r)} {group.label}"
            selector = group.node_selector
            if str(selector.get(slices.SPOT_LABEL)).lower() == "true":
                yield r, f"{where} selects Spot VMs ({slices.SPOT_LABEL}: true)"
            if str(selector.get(slices.FLEX_START_LABEL)).lower() == "true":
                yield r, f"{where} selects flex-start VMs ({slices.FLEX_START_LABEL}: true)"
            compute_class = selector.get(slices.COMPUTE_CLASS_LABEL)
            if compute_class in flex_classes:
                yield r, f"{where} selects ComputeClass {compute_class}, which provisions flex-start VMs"
            for pool in group.pools(pools):
                if (pool.spot or pool.preemptible) and slices.SPOT_LABEL not in selector:
                    yield r, f"{where} runs on node pool {pool.name}, which has Spot VMs"
                if pool.flex_start and slices.FLEX_START_LABEL not in selector:
                    yield r, f"{where} runs on node pool {pool.name}, which has flex-start VMs"
