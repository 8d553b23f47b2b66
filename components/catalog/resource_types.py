"""The Pulumi type tokens of the resources a stack registers, as a plan's JSON names them (`python -m plan --json`,
`pulumi preview --json`): one home for the planner, the review of a diff, `verify` and the policy pack. Pure data.

A token is `<package>:<module>/<camelCase name>:<Name>` (Pulumi "Resource type tokens"); pulumi-kubernetes names a
custom resource `kubernetes:<API group>/<version>:<kind>` (pulumi-kubernetes apiextensions.CustomResource).
"""

from __future__ import annotations

CLUSTER = "gcp:container/cluster:Cluster"  # pulumi-gcp 10.2 gcp.container.Cluster
NODE_POOL = "gcp:container/nodePool:NodePool"  # gcp.container.NodePool
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"  # gcp.compute.ResourcePolicy (Ironwood placement)

RAY_API = "ray.io"  # KubeRay's API group (ray-operator/apis/ray/v1 of ray-project/kuberay)
RAY_KINDS = ("RayCluster", "RayService", "RayJob")
RAY_KIND_PREFIX = f"kubernetes:{RAY_API}/v1:"
RAY_TYPES = tuple(RAY_KIND_PREFIX + kind for kind in RAY_KINDS)

UNKNOWN = "[unknown]"  # what the offline plan writes for a value known only after apply (plan/harness.py)
