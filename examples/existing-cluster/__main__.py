"""TPU slices and a Ray cluster on them, in a GKE Standard cluster that already exists and that this stack never
changes: `TpuSlicePools` adds the slice's node pools, `RayCluster` runs KubeRay's RayCluster on them.

The cluster needs the Ray Operator add-on (it serves KubeRay's CRDs) and Workload Identity. The Ray head runs on the
CPU node pool named `system` (what RayCluster selects in Standard mode); set `createSystemPool: false` when the
cluster has one.

Least privilege throughout: the nodes run as `nodeServiceAccount` when set, else as a service account TpuSlicePools
creates with only what nodes need (never the Compute Engine default account), and the Ray pods run as the Kubernetes
service account `ray`, which Workload Identity lets act as a Google service account of their own, granted nothing
here: grant it what the jobs read and write (e.g. `roles/storage.objectUser` on a bucket).

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
                         WorkerGroupArgs, admission, slice_shape)

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
# The nodes' service account: the given one, else one TpuSlicePools creates with only what GKE nodes need (logs,
# metrics, image pulls); never the Compute Engine default account. The system pool below runs as the same one.
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
            service_account=pools.node_service_account,
            oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],  # access is limited by IAM roles
            image_type="COS_CONTAINERD",
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True),
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        ),
    ))
namespace_resource = None
if config.get_bool("createNamespace") is not False:
    namespace_resource = k8s.core.v1.Namespace(
        namespace, metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace),
        opts=pulumi.ResourceOptions(provider=k8s_provider))
    ray_dependencies.append(namespace_resource)

# Workload Identity: the Kubernetes service account `ray` (annotated with the Google service account it acts as)
# and the binding that lets it; the GKE page "Authenticate to Google Cloud APIs from GKE workloads" documents both.
ray_account = gcp.serviceaccount.Account(
    "ray", account_id=admission.service_account_id(cluster_name, "ray"), project=project,
    display_name=f"Ray workloads of {namespace} in {cluster_name}")
gcp.serviceaccount.IAMMember(
    "ray-workload-identity", service_account_id=ray_account.name, role="roles/iam.workloadIdentityUser",
    member=f"serviceAccount:{project}.svc.id.goog[{namespace}/ray]")
ray_dependencies.append(k8s.core.v1.ServiceAccount(
    "ray", metadata=k8s.meta.v1.ObjectMetaArgs(
        name="ray", namespace=namespace, annotations={"iam.gke.io/gcp-service-account": ray_account.email}),
    opts=pulumi.ResourceOptions(provider=k8s_provider, depends_on=[namespace_resource] if namespace_resource else [])))

# The worker group names the slice entry; `replicas` counts whole slices, each one pod per host.
ray = RayCluster("train", RayClusterArgs(
    kubernetes_provider=k8s_provider,
    spec=RayObjectArgs(
        name="train",
        namespace=namespace,
        worker_groups=[WorkerGroupArgs(name="tpu", slice=tpu["name"], replicas=1)],
    ),
    tpu_slices=[tpu],
    service_account="ray",
), opts=pulumi.ResourceOptions(depends_on=ray_dependencies))

shape = slice_shape(tpu["generation"], tpu["topology"])
pulumi.export("poolNames", pools.pool_names)
pulumi.export("nodeSelector", pools.node_selector)
pulumi.export("headService", ray.head_service)
pulumi.export("rayServiceAccount", ray_account.email)
pulumi.export("slice", {"machineType": shape.machine_type.name, "hosts": shape.hosts, "chips": shape.chips})
