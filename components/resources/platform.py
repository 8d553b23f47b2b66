"""The whole environment: network, identity, storage, the GKE cluster, TPU slice pools and the Ray workloads."""

import pulumi

from ..render import manifests
from ..render.health import runs as health_runs
from ..spec.args import RayTpuPlatformArgs
from ..spec.component_args import validated
from ..spec.config import StackConfig, validate_platform_args
from ..spec.paths import Paths
from . import preflight
from .cluster import RAY_KSA, GkeCluster
from .identity import Identity
from .network import Network
from .outputs import gathered
from .ray import RayWorkload, custom_resource
from .slice_pool import TpuSlicePools
from .storage import Storage
from .worker_pool import WorkerPool
from .workload_policy import ironwood_workload_policy


class RayTpuPlatform(pulumi.ComponentResource):
    """Ray on TPUs in GKE: network, identity, bucket, cluster with the Ray Operator add-on, one node pool per TPU slice,
    and the KubeRay objects, from RayTpuPlatformArgs (or a stack file, through `load_stack_config`)."""

    cluster_name: pulumi.Output[str]
    """The GKE cluster's name."""
    kubeconfig: pulumi.Output[str]
    """A kubeconfig for the cluster using gke-gcloud-auth-plugin (secret)."""
    bucket: pulumi.Output[str]
    """The bucket's name (empty when storage is disabled)."""
    pool_names: pulumi.Output[list[str]]
    """Every TPU node pool's name."""

    def __init__(self, name: str, args: RayTpuPlatformArgs, opts: pulumi.ResourceOptions | None = None):
        # The stack file's front end hands over the configuration it already validated (with stack-file key paths).
        config = args if isinstance(args, StackConfig) else validate_platform_args(args, name)
        if not isinstance(args, StackConfig):
            for warning in config.warnings:
                pulumi.log.warn(warning)
        labels = {**config.labels, "managed-by": "pulumi", "app": "ray-tpu-gke"}
        if config.monitoring.enabled:  # what the Monitoring API would refuse, before anything is registered
            from .monitoring import check_platform

            style = Paths("stack") if isinstance(args, StackConfig) else Paths("args", f"RayTpuPlatform({name}).args")
            check_platform(config, labels, style)
        super().__init__("ray-tpu-gke:index:RayTpuPlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        c = config.cluster

        network = Network(c.name, config.project, config.region, c.network, opts=child)
        identity = Identity(c.name, config.project, c.name, config.namespaces, opts=child)
        bucket = config.bucket_name  # set when storage is enabled
        storage = (
            Storage(
                c.name,
                config.project,
                config.region,
                bucket,
                config.storage,
                identity.ray_email,
                labels,
                c.deletion_protection,
                opts=child,
            )
            if bucket is not None
            else None
        )
        need = config.gke_version_need
        # Validated: every argument below was validated with the whole stack (config), so the components do not
        # validate it again (spec/component_args.py).
        cluster = GkeCluster(
            c.name,
            validated(
                {
                    "project": config.project,
                    "cluster": c,
                    "network": network.network,
                    "subnetwork": network.subnetwork,
                    "pods_range_name": network.pods_range_name,
                    "services_range_name": network.services_range_name,
                    "node_service_account": identity.node_email,
                    "ray_service_account": identity.ray_email,
                    "namespaces": config.namespaces,
                    "labels": labels,
                    "minimum_version": need.version,
                    "minimum_version_reason": need.reason,
                }
            ),
            opts=child,
        )

        pools_of: dict[str, list] = {}
        if config.standard:
            # Node pools wait for the project's TPU quota to be checked: a shortfall stops before any is created.
            cluster_name = preflight.accelerator_quota(config.project, config.quota_needs(), cluster.cluster.name)
            for tpu_slice in config.tpu_slices:
                pools_of[tpu_slice.name] = TpuSlicePools(
                    tpu_slice.name,
                    validated(
                        {
                            "project": config.project,
                            "cluster": cluster_name,
                            "location": c.location,
                            "slice": tpu_slice,
                            "node_service_account": identity.node_email,
                            "labels": labels,
                            "environment": config.environment,
                            "deletion_protection": c.deletion_protection,
                        }
                    ),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.cluster]),
                ).pools
            for kind, pools in (("gpu", config.gpu_pools), ("cpu", config.cpu_pools)):
                for pool in pools:
                    pools_of[pool.name] = [
                        WorkerPool(
                            pool.name,
                            validated(
                                {
                                    "project": config.project,
                                    "cluster": cluster_name,
                                    "location": c.location,
                                    kind: pool,
                                    "node_service_account": identity.node_email,
                                    "labels": labels,
                                    "deletion_protection": c.deletion_protection,
                                }
                            ),
                            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.cluster]),
                        ).pool
                    ]

        k8s_child = pulumi.ResourceOptions(parent=self, provider=cluster.provider, depends_on=[cluster.cluster])
        compute_classes: dict[str, list] = {}
        if not config.standard:
            for pool in config.gpu_pools:
                if pool.capacity == "flexStart":
                    compute_classes[pool.name] = [
                        custom_resource(manifests.compute_class_name(pool), manifests.compute_class(pool), k8s_child)
                    ]
            for tpu_slice in config.tpu_slices:
                needs = compute_classes.setdefault(tpu_slice.name, [])
                if tpu_slice.capacity == "flexStart":
                    needs.append(
                        custom_resource(
                            manifests.compute_class_name(tpu_slice), manifests.compute_class(tpu_slice), k8s_child
                        )
                    )
                if manifests.needs_workload_policy(tpu_slice.shape):
                    # Autopilot places a multi-host Ironwood slice by the workload policy its pods name
                    # (manifests.PLACEMENT_POLICY_LABEL); the policy must exist in the cluster's region first.
                    needs.append(ironwood_workload_policy(c.name, tpu_slice, config.project, config.region, child))

        ctx = manifests.render_context(config, RAY_KSA)
        self.workloads = []
        for obj in config.ray_objects:
            slices = [name for _, name in (g.target for g in obj.worker_groups) if name is not None]
            depends_on: list[pulumi.Resource] = [cluster.cluster, cluster.namespaces[obj.namespace]]
            depends_on += [pool for s in slices for pool in pools_of.get(s, [])]
            depends_on += [r for s in slices for r in compute_classes.get(s, [])]
            if cluster.system_pool is not None:
                depends_on.append(cluster.system_pool)
            self.workloads.append(
                RayWorkload(
                    f"{obj.namespace}-{obj.name}",
                    manifests.ray_manifest(obj, config.targets, ctx),
                    cluster.provider,
                    depends_on,
                    opts=child,
                )
            )

        # The stack's dashboard and alert policies, from config.monitoring.
        if config.monitoring.enabled:
            from .monitoring import SliceMonitoring, platform_args

            # After the cluster, whose system and kube state metrics its dashboards and policies read.
            SliceMonitoring(
                c.name,
                platform_args(config, labels),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.cluster]),
            )
            if health_runs(config):
                from .health import SliceHealth

                # The in-cluster slice check: the Ray namespaces (created by the cluster) and the system pool first.
                from .slice_pool import pool_name

                pool_names = (
                    {s.name: [pool_name(s, i) for i in range(s.count)] for s in config.tpu_slices}
                    if config.standard
                    else {}
                )
                SliceHealth(
                    c.name,
                    config,
                    pool_names,
                    ctx,
                    cluster.provider,
                    [
                        cluster.cluster,
                        *cluster.namespaces.values(),
                        *([cluster.system_pool] if cluster.system_pool else []),
                    ],
                    labels,
                    opts=child,
                )
        # --- end observability -----------------------------------------------------------------------------------

        self.cluster_name = cluster.cluster.name
        self.kubeconfig = cluster.kubeconfig
        self.bucket = storage.bucket if storage else pulumi.Output.from_input("")
        self.pool_names = gathered([p.name for pools in pools_of.values() for p in pools])  # TPU, GPU, CPU
        self.register_outputs({"clusterName": self.cluster_name})
