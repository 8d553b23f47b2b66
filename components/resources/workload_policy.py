"""The workload policy an Autopilot cluster places a multi-host Ironwood (TPU7x) slice by, for programs that build
their Ray objects with the library's RayCluster, RayService or RayJob instead of RayTpuPlatform (#22.4).

Autopilot provisions a multi-host Ironwood slice through a HIGH_THROUGHPUT workload policy whose name the slice's pods
select (node label cloud.google.com/placement-policy-name; GKE "About Ironwood (TPU7x) in GKE"). The name is
`<cluster>-<slice>` (render/manifests.py workload_policy_name), the same that RayTpuPlatform, the pods' selectors and
SliceMonitoring's filters use, so the three agree as long as they are given the same cluster name:

    policy = ironwood_workload_policy("ray-tpu", slice_entry, project="acme-ml", region="us-central1")
    RayCluster("train", {..., "mode": "autopilot"}, opts=pulumi.ResourceOptions(depends_on=[policy]))
"""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_gcp as gcp

from ..render import manifests
from ..spec.models import TpuSliceConfig, validate_as


def ironwood_workload_policy(
    cluster_name: str,
    tpu_slice: TpuSliceConfig | dict,
    project: str,
    region: str,
    opts: Optional[pulumi.ResourceOptions] = None,
) -> gcp.compute.ResourcePolicy:
    """The HIGH_THROUGHPUT workload policy of one multi-host Ironwood slice entry (TpuSliceArgs or a validated
    entry), named `<cluster>-<slice>` in the cluster's region; the slice's Ray pods select it by that name."""
    entry = tpu_slice if isinstance(tpu_slice, TpuSliceConfig) else validate_as(TpuSliceConfig, tpu_slice, "args")
    if not manifests.needs_workload_policy(entry.shape):
        raise ValueError(
            f"slice {entry.name!r} ({entry.generation} {entry.topology}) is not a multi-host Ironwood "
            "slice: only those are placed by a workload policy"
        )
    return gcp.compute.ResourcePolicy(
        f"{entry.name}-workload",
        name=manifests.workload_policy_name(cluster_name, entry),
        project=project,
        region=region,
        # GKE "About Ironwood (TPU7x) in GKE": a HIGH_THROUGHPUT workload policy with the slice's topology.
        workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
            type="HIGH_THROUGHPUT", accelerator_topology=entry.shape.topology
        ),
        opts=opts,
    )
