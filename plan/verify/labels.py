"""What GKE, KubeRay and the TPU webhook put on nodes, pods and RayJobs, which the live checks read: the constants of
the shared checks (ray_tpu_gke.workload.slice_checks), where each is cited."""

from ray_tpu_gke.workload.slice_checks import (  # noqa: F401  (re-exported)
    CLUSTER_LABEL,
    DEPLOYMENT_FAILED,
    GROUP_LABEL,
    HOSTNAMES_ENV,
    INSTANCE_TYPE_LABEL,
    JOB_DONE,
    NAME_ENV,
    NODE_POOL_LABEL,
    NODE_TYPE_LABEL,
    WORKER_ID_ENV,
)
