"""Rules that Cloud services enforce on the platform as a whole, across sections: the network's ranges, the service
account IDs named after the cluster, the bucket, the rates and the node pools of one cluster. Pure."""

from __future__ import annotations

import ipaddress
from typing import Any, Optional

from .. import admission
from .models import ClusterConfig, PricingConfig, StorageConfig
from .paths import ClusterContext, Paths
from .problems import Problem, show


def network(cluster: Optional[ClusterConfig], paths: Paths) -> list[Problem]:
    """An existing network names what GKE needs of it; a new one's ranges do not overlap (Compute Engine
    SubnetworkSecondaryRange.ipCidrRange: "Ranges must be unique and non-overlapping with all primary and secondary
    IP ranges within a network")."""
    if cluster is None or not cluster.intact("network"):
        return []
    net, problems = cluster.network, []
    named = ("subnetwork", "pods_range_name", "services_range_name")
    if net.existing:
        problems += [
            Problem(
                paths("cluster", "network", key),
                f"required with {paths.key('network')} (an existing network): the name GKE uses of it",
            )
            for key in named
            if getattr(net, key) is None
        ]
        return problems
    problems += [
        Problem(
            paths("cluster", "network", key),
            f"{show(getattr(net, key))} is only allowed with {paths.key('network')} (an existing network)",
        )
        for key in named
        if getattr(net, key) is not None
    ]
    ranges = [
        (key, ipaddress.ip_network(getattr(net, key), strict=False))
        for key in ("subnet_cidr", "pods_cidr", "services_cidr")
    ]
    for i, (key, cidr) in enumerate(ranges):
        for other, other_cidr in ranges[:i]:
            if cidr.overlaps(other_cidr):
                problems.append(
                    Problem(
                        paths("cluster", "network", key),
                        f"{show(str(cidr))} overlaps {paths.key(other)} {other_cidr}; allowed: a range "
                        "that overlaps no other range of the network",
                    )
                )
    return problems


def service_accounts(cluster: Optional[ClusterConfig], paths: Paths) -> list[Problem]:
    """The Google service accounts named after the cluster (resources/identity.py): valid IDs, never one for two."""
    if cluster is None or not cluster.intact("name"):
        return []
    problems: list[Problem] = []
    ids: dict[str, str] = {}
    for purpose in admission.SERVICE_ACCOUNT_PURPOSES:
        account = admission.service_account_id(cluster.name, purpose)
        try:
            admission.check_service_account_id(account)
        except ValueError as error:
            problems.append(Problem(paths("cluster", "name"), f"{show(cluster.name)} {error}"))
        if account in ids:
            problems.append(
                Problem(
                    paths("cluster", "name"),
                    f"{show(cluster.name)} gives the {purpose} and {ids[account]} service accounts one ID {account}",
                )
            )
        ids[account] = purpose
    return problems


def check_storage(
    storage: Optional[StorageConfig],
    project: Any,
    cluster: Optional[ClusterConfig],
    context: ClusterContext,
    paths: Paths,
    warnings: list[str],
) -> list[Problem]:
    """The bucket a stack gets: its name (given, or derived from the project and cluster) and its location (given,
    or the cluster's region) are ones Cloud Storage accepts (admission.BUCKET_NAME, admission.BUCKET_LOCATION)."""
    if storage is None or not storage.enabled:
        return []
    problems = []
    if (
        storage.bucket_name is None
        and storage.intact("bucket_name")
        and isinstance(project, str)
        and cluster is not None
        and cluster.intact("name")
    ):
        derived = f"{project}-{cluster.name}-ray"[:63].rstrip("-.")
        try:
            admission.check_bucket_name(derived)
        except ValueError as error:
            problems.append(
                Problem(
                    paths("storage", "bucket_name"),
                    f"unset, so the bucket is {show(derived)} (from "
                    f"{paths('project')} and the cluster name), "
                    f"which {error}; set a name",
                )
            )
    if storage.location is None and storage.intact("location") and context.region:
        try:
            admission.check_bucket_location(context.region)
        except ValueError:
            warnings.append(
                f"{paths('storage', 'location')}: unset, so the bucket is created in the cluster's region "
                f"{context.region}, which no source lists as a Cloud Storage location; set a location "
                "such as US or us-central1"
            )
    return problems


def check_pricing(pricing: Optional[PricingConfig], paths: Paths) -> list[Problem]:
    """Two rates for the same item, capacity and region: one would be silently ignored."""
    if pricing is None:
        return []
    problems: list[Problem] = []
    seen: dict[tuple, int] = {}
    for i, rate in enumerate(pricing.rates):
        key = (rate.kind, rate.name, rate.capacity, rate.region)
        if key in seen:
            where = rate.region or "every region"
            problems.append(
                Problem(
                    paths("pricing", "rates", i),
                    f"a second {rate.kind} rate for {rate.name} "
                    f"{rate.capacity} in {where} (rates[{seen[key]}] "
                    "is the first); allowed: one rate per item",
                )
            )
        seen.setdefault(key, i)
    return problems


def check_node_pool_count(context: ClusterContext, lists: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    """Standard mode: the system pool, every slice of every tpuSlices entry and every GPU and CPU pool are node
    pools of one cluster; past admission.NODE_POOLS_WARNING a warning (rule gke-node-pools-autoscaling-latency)."""
    if context.mode != "standard":
        return []
    slices = sum(s.count for s in lists["tpu_slices"] if s is not None)
    gpus = sum(1 for p in lists["gpu_pools"] if p is not None)
    cpus = sum(1 for p in lists["cpu_pools"] if p is not None)
    total = 1 + slices + gpus + cpus
    if total > admission.NODE_POOLS_WARNING:
        section = "tpu_slices" if slices else ("gpu_pools" if gpus else "cpu_pools")
        warnings.append(
            f"{paths(section)}: {total} node pools in one cluster (system 1, {paths.key('tpu_slices')} "
            f"{slices}, {paths.key('gpu_pools')} {gpus}, {paths.key('cpu_pools')} {cpus}): past "
            f"{admission.NODE_POOLS_WARNING}, GKE's autoscaling may take longer (GKE node "
            "auto-provisioning, Limitations); consider fewer, larger slices"
        )
    return []
