"""KubeRay objects (RayCluster, RayService, RayJob) and Autopilot ComputeClasses as Kubernetes custom resources."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def custom_resource(name: str, manifest: dict, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """Wrap a manifest built by `manifests`; the type token follows it (e.g. kubernetes:ray.io/v1:RayCluster)."""
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


class RayWorkload(pulumi.ComponentResource):
    """One KubeRay object, ordered after the cluster and the TPU pools it runs on."""

    def __init__(self, name: str, manifest: dict, provider: k8s.Provider, depends_on: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"ray-tpu-gke:index:{manifest['kind']}", name, None, opts)
        self.resource = custom_resource(
            name, manifest, pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        )
        self.register_outputs({"name": manifest["metadata"]["name"], "namespace": manifest["metadata"]["namespace"]})
