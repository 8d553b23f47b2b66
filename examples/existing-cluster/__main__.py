"""TPU slices and a Ray cluster on them, in a GKE Standard cluster that already exists and that this stack never
changes: `TpuSlicePools` adds the slice's node pools, `RayCluster` runs KubeRay's RayCluster on them.

The cluster needs the Ray Operator add-on (it serves KubeRay's CRDs) and Workload Identity. The Ray head runs on the
CPU node pool named `system` (what RayCluster selects in Standard mode); set `createSystemPool: false` when the
cluster has one.

    pulumi config set gcp:project acme-ml
    pulumi config set clusterName ml-shared
    pulumi config set clusterLocation us-east5-b
    pulumi up
"""

import json

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ray_tpu_gke import (RayCluster, RayClusterArgs, RayObjectArgs, TpuSliceArgs, TpuSlicePools, TpuSlicePoolsArgs,
                         WorkerGroupArgs, slice_shape)

config = pulumi.Config()
project = pulumi.Config("gcp").require("project")
cluster_name = config.require("clusterName")
location = config.require("clusterLocation")
namespace = config.get("namespace") or "ray"

# Read, never managed: `pulumi destroy` leaves the cluster as it is.
cluster = gcp.container.Cluster.get(
    "existing", f"projects/{project}/locations/{location}/clusters/{cluster_name}")

# One slice entry: its shape comes from the catalogue (v6e 4x4 = 16 chips on four 4-chip hosts), `count` pools of it.
tpu = TpuSliceArgs(
    name=config.get("sliceName") or "v6e-16",
    generation=config.get("generation") or "v6e",
    topology=config.get("topology") or "4x4",
    count=config.get_int("sliceCount") or 1,
    capacity=config.get("capacity") or "spot",
)
if config.get("zone"):
    tpu["zone"] = config.get("zone")

pool_args = TpuSlicePoolsArgs(
    project=project,
    cluster=cluster_name,
    location=location,
    slice=tpu,
    labels={"team": config.get("team") or "ml-platform"},
    deletion_protection=config.get_bool("deletionProtection") is not False,
)
if config.get("nodeServiceAccount"):
    pool_args["node_service_account"] = config.get("nodeServiceAccount")
pools = TpuSlicePools(tpu["name"], pool_args)


def kubeconfig(endpoint: str, ca_certificate: str) -> str:
    """Authenticates with gke-gcloud-auth-plugin, so no token is stored in the stack's state."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": f"https://{endpoint}",
                                                        "certificate-authority-data": ca_certificate}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        }}}],
    })


k8s_provider = k8s.Provider(
    "existing",
    kubeconfig=pulumi.Output.secret(pulumi.Output.all(
        cluster.endpoint, cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate),
    ).apply(lambda args: kubeconfig(*args))),
    enable_server_side_apply=True,
)

ray_dependencies: list[pulumi.Resource] = [pools]
if config.get_bool("createSystemPool") is not False:
    ray_dependencies.append(gcp.container.NodePool(
        "system",
        name="system",
        project=project,
        cluster=cluster_name,
        location=location,
        autoscaling=gcp.container.NodePoolAutoscalingArgs(total_min_node_count=1, total_max_node_count=3),
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type="e2-standard-8",
            image_type="COS_CONTAINERD",
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True),
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        ),
    ))
if config.get_bool("createNamespace") is not False:
    ray_dependencies.append(k8s.core.v1.Namespace(
        namespace, metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace),
        opts=pulumi.ResourceOptions(provider=k8s_provider)))

# The worker group names the slice entry; `replicas` counts whole slices, each one pod per host.
ray = RayCluster("train", RayClusterArgs(
    kubernetes_provider=k8s_provider,
    spec=RayObjectArgs(
        name="train",
        namespace=namespace,
        worker_groups=[WorkerGroupArgs(name="tpu", slice=tpu["name"], replicas=1)],
    ),
    tpu_slices=[tpu],
), opts=pulumi.ResourceOptions(depends_on=ray_dependencies))

shape = slice_shape(tpu["generation"], tpu["topology"])
pulumi.export("poolNames", pools.pool_names)
pulumi.export("nodeSelector", pools.node_selector)
pulumi.export("headService", ray.head_service)
pulumi.export("slice", {"machineType": shape.machine_type.name, "hosts": shape.hosts, "chips": shape.chips})
