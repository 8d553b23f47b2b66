"""What GKE, KubeRay and the TPU webhook put on nodes, pods and RayJobs, which the live checks read."""

NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE, "About node pools": every node carries its pool's name
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # Kubernetes well-known label: the node's machine type
# KubeRay's pod labels (ray-operator/controllers/ray/utils/constant.go RayClusterLabelKey, RayNodeGroupLabelKey,
# RayNodeTypeLabelKey); the TPU webhook selects worker pods by the same (ai-on-gke kuberay-tpu-webhook main.go).
CLUSTER_LABEL, GROUP_LABEL, NODE_TYPE_LABEL = "ray.io/cluster", "ray.io/group", "ray.io/node-type"
# Environment the Ray Operator add-on's TPU webhook injects into each TPU container of a worker pod
# (GoogleCloudPlatform/ai-on-gke ray-on-gke/tpu/kuberay-tpu-webhook/main.go, mutatePod): TPU_WORKER_HOSTNAMES only when
# the slice has more than one host, TPU_NAME = <group>-<replica index>.
WORKER_ID_ENV, NAME_ENV, HOSTNAMES_ENV = "TPU_WORKER_ID", "TPU_NAME", "TPU_WORKER_HOSTNAMES"
# KubeRay RayJob status (ray-operator/apis/ray/v1/rayjob_types.go): Ray's job status and KubeRay's deployment status.
JOB_DONE = {"SUCCEEDED", "FAILED", "STOPPED"}
DEPLOYMENT_FAILED = {"Failed", "ValidationFailed"}
