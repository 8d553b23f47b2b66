"""The whole environment: network, identity, storage, the GKE cluster, TPU slice pools and the Ray workloads."""

from __future__ import annotations

import pulumi

from . import manifests
from .cluster import GkeCluster
from .config import StackConfig
from .identity import RAY_KSA, Identity
from .network import Network
from .ray import RayWorkload, custom_resource
from .slice_pool import TpuSlicePools
from .storage import Storage


class RayTpuPlatform(pulumi.ComponentResource):
    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ray-tpu-gke:index:RayTpuPlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = {**config.labels, "managed-by": "pulumi", "app": "ray-tpu-gke"}

        network = Network(config.cluster.name, config, opts=child)
        identity = Identity(config.cluster.name, config, opts=child)
        storage = Storage(config.cluster.name, config, identity.ray_email, labels, opts=child) \
            if config.storage.enabled else None
        cluster = GkeCluster(config.cluster.name, config, network, identity.node_email, identity.ray_email, labels,
                             opts=child)

        pools_of: dict[str, list] = {}
        if config.standard:
            for tpu_slice in config.tpu_slices:
                pools_of[tpu_slice.name] = TpuSlicePools(
                    tpu_slice.name, tpu_slice, config, cluster.cluster, identity.node_email, labels,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.cluster]),
                ).pools

        k8s_child = pulumi.ResourceOptions(parent=self, provider=cluster.provider, depends_on=[cluster.cluster])
        compute_classes = {}
        if not config.standard:
            for tpu_slice in config.tpu_slices:
                if tpu_slice.capacity == "flexStart":
                    compute_classes[tpu_slice.name] = custom_resource(
                        manifests.compute_class_name(tpu_slice), manifests.compute_class(tpu_slice), k8s_child)

        ctx = manifests.render_context(config, RAY_KSA)
        self.workloads = []
        for obj in config.ray_objects:
            slices = [g.slice for g in obj.worker_groups]
            depends_on = [cluster.cluster, cluster.namespaces[obj.namespace]]
            depends_on += [pool for s in slices for pool in pools_of.get(s, [])]
            depends_on += [compute_classes[s] for s in slices if s in compute_classes]
            if cluster.system_pool is not None:
                depends_on.append(cluster.system_pool)
            self.workloads.append(RayWorkload(
                f"{obj.namespace}-{obj.name}",
                manifests.ray_manifest(obj, config, ctx),
                cluster.provider,
                depends_on,
                opts=child,
            ))

        self.cluster_name = cluster.cluster.name
        self.bucket = storage.bucket if storage else None
        self.register_outputs({"clusterName": self.cluster_name})
