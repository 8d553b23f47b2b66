"""Google service accounts: one for nodes with only what nodes need, one for Ray pods through Workload Identity."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from .. import admission
from .cluster import RAY_KSA

# Least privilege for nodes: write logs and metrics, read images. Never the Compute Engine default account.
NODE_ROLES = (
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
)


class Identity(pulumi.ComponentResource):
    node_email: pulumi.Output[str]
    ray_email: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        project: str,
        cluster_name: str,
        namespaces: list[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ray-tpu-gke:index:Identity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        node = gcp.serviceaccount.Account(
            f"{name}-nodes",
            account_id=admission.service_account_id(cluster_name, "nodes"),
            display_name=f"GKE nodes of {cluster_name}",
            project=project,
            opts=child,
        )
        for role in NODE_ROLES:
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1]}",
                project=project,
                role=role,
                member=node.email.apply(lambda email: f"serviceAccount:{email}"),
                opts=child,
            )
        ray = gcp.serviceaccount.Account(
            f"{name}-ray",
            account_id=admission.service_account_id(cluster_name, "ray"),
            display_name=f"Ray workloads on {cluster_name}",
            project=project,
            opts=child,
        )
        # Each namespace's `ray` Kubernetes service account may act as the Ray Google service account, nothing else.
        for namespace in namespaces:
            gcp.serviceaccount.IAMMember(
                f"{name}-ray-wi-{namespace}",
                service_account_id=ray.name,
                role="roles/iam.workloadIdentityUser",
                member=f"serviceAccount:{project}.svc.id.goog[{namespace}/{RAY_KSA}]",
                opts=child,
            )
        self.node_email = node.email
        self.ray_email = ray.email
        self.register_outputs({"nodeServiceAccount": node.email, "rayServiceAccount": ray.email})
