"""The typed arguments of every component: what each one needs, and nothing it reaches for elsewhere.

Plain `TypedDict`s, so a Python program writes `TpuSlicePoolsArgs(cluster=..., slice=TpuSliceArgs(...))` and Pulumi's
component provider infers a schema from them for TypeScript, Go, C# and YAML programs (`provider/`). Every component
validates its arguments with the models in `models` (the same rules as a stack file, in snake_case) before it registers
any resource, and fails with `ConfigError` naming the argument path, the value and what is allowed.
Values another resource produces are `pulumi.Input`s.

No `from __future__ import annotations` here: the schema analyzer and `Required[...]` need the real types at runtime.
"""

from typing import Any, Required, TypedDict

import pulumi
import pulumi_kubernetes as k8s


class SliceAutoscalingArgs(TypedDict, total=False):
    """Node autoscaling of a slice's pools: a multi-host pool scales atomically between 0 and all its hosts."""

    enabled: bool
    """Scale the pool with demand (default true when the key is given; flexStart always autoscales)."""
    min_nodes: int
    """Nodes kept when idle: 0, or every host of the slice."""


class TpuSliceArgs(TypedDict, total=False):
    """A TPU slice shape from the catalogue, how many of it, and the capacity it runs on."""

    name: Required[str]
    """Unique name; node pools are named `<name>-<index>` and Ray worker groups refer to it."""
    generation: Required[str]
    """TPU generation: v4, v5e, v5p, v6e or tpu7x."""
    topology: Required[str]
    """Chips per dimension, e.g. 4x4 or 2x2x4."""
    machine_type: str
    """Picks a layout where several are valid (v5e/v6e 2x4: one 8-chip host or two 4-chip hosts)."""
    count: int
    """Slices of this shape; Standard mode creates one node pool per slice."""
    capacity: str
    """onDemand, spot, reservation or flexStart."""
    reservation: str
    """The reservation's name, or projects/<project>/reservations/<name> when shared (capacity reservation)."""
    zone: str
    """The slice's zone; required in a regional Standard cluster."""
    autoscaling: SliceAutoscalingArgs
    """Node autoscaling of the slice's pools (Standard mode)."""


class PoolAutoscalingArgs(TypedDict, total=False):
    """Node autoscaling of a GPU or CPU pool, in nodes (one Ray worker pod per node)."""

    enabled: bool
    """Scale the pool with demand (flexStart always autoscales)."""
    min_nodes: int
    """Nodes kept when idle (default 0)."""
    max_nodes: int
    """Most nodes (default: count)."""


class GpuPoolArgs(TypedDict, total=False):
    """A GPU node pool (Standard) or what GPU pods select (Autopilot), from the GPU catalogue."""

    name: Required[str]
    """Unique pool name; Ray worker groups refer to it with gpu_pool."""
    accelerator: Required[str]
    """GKE accelerator type: nvidia-l4, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb, nvidia-h100-mega-80gb,
    nvidia-h200-141gb or nvidia-b200."""
    machine_type: str
    """A machine type carrying the accelerator (default: the catalogue's, e.g. g2-standard-12 for one L4)."""
    count: int
    """Nodes (the most nodes when autoscaled)."""
    capacity: str
    """onDemand, spot, reservation or flexStart (A3 Ultra and A4 have no onDemand)."""
    reservation: str
    """The reservation's name, or projects/<project>/reservations/<name> when shared."""
    zone: str
    """The pool's zone; required in a regional Standard cluster."""
    allow_unlisted_zone: bool
    """Accept a zone the catalogue does not list for the accelerator."""
    autoscaling: PoolAutoscalingArgs


class CpuPoolArgs(TypedDict, total=False):
    """A CPU node pool for Ray Data preprocessing, drivers and other CPU work."""

    name: Required[str]
    """Unique pool name; Ray worker groups refer to it with cpu_pool."""
    machine_type: str
    """A predefined E2, N2, N2D, N4 or C3 machine type (default n2-standard-16)."""
    count: int
    """Nodes (the most nodes when autoscaled)."""
    capacity: str
    """onDemand or spot."""
    zone: str
    """Optional zone; unset, the pool spans the cluster's zones."""
    autoscaling: PoolAutoscalingArgs


class WorkerGroupArgs(TypedDict, total=False):
    """A Ray worker group on exactly one of a TPU slice (replicas count slices), a GPU pool or a CPU pool (replicas
    count pods, one per node)."""

    name: Required[str]
    """Group name (KubeRay groupName)."""
    slice: str
    """The name of a TPU slice (an entry of `tpu_slices`)."""
    gpu_pool: str
    """The name of a GPU pool (an entry of `gpu_pools`)."""
    cpu_pool: str
    """The name of a CPU pool (an entry of `cpu_pools`)."""
    replicas: int
    """Slices (TPU) or pods (GPU, CPU) the group starts with."""
    min_replicas: int
    """Fewest the Ray autoscaler keeps."""
    max_replicas: int
    """Most the Ray autoscaler may ask for (default: replicas)."""


class HeadArgs(TypedDict, total=False):
    """The Ray head pod's CPU and memory (Kubernetes quantities)."""

    cpu: str
    """Default 2."""
    memory: str
    """Default 8Gi."""


class RayAutoscalingArgs(TypedDict, total=False):
    """Ray's in-tree autoscaler."""

    enabled: bool
    """Run the autoscaler sidecar (default false)."""
    idle_timeout_seconds: int
    """Idle time before a worker group scales down (default 600)."""


class RayObjectArgs(TypedDict, total=False):
    """The Ray cluster a RayCluster, RayService or RayJob runs."""

    name: Required[str]
    """Object name (a DNS label)."""
    namespace: str
    """Kubernetes namespace (default ray); never kube-system and the like."""
    image: str
    """Ray container image (default rayproject/ray:2.55.0-py311)."""
    ray_version: str
    """Ray version the image runs (default 2.55.0); gates features such as autoscaling of Ironwood groups."""
    head: HeadArgs
    """The head pod's resources."""
    worker_groups: list[WorkerGroupArgs]
    """Worker groups, each on one slice, GPU pool or CPU pool."""
    autoscaling: RayAutoscalingArgs
    """Ray's in-tree autoscaler."""
    gcs_fuse: bool
    """Mount the platform's bucket at /gcs through the GCS FUSE CSI driver (needs a bucket)."""
    wait_for_ready: bool
    """Let `pulumi up` wait until the object is ready."""


class RayServiceSpecArgs(RayObjectArgs, total=False):
    """A RayService: a Ray cluster serving a Ray Serve config."""

    serve_config: Required[dict[str, Any]]
    """Ray Serve config (serveConfigV2) as a mapping."""
    upgrade_strategy: str
    """NewCluster (needs twice the slices during an upgrade) or None."""


class RayJobSpecArgs(RayObjectArgs, total=False):
    """A RayJob: a job on a Ray cluster of its own, or on an existing RayCluster."""

    entrypoint: Required[str]
    """The command the job runs."""
    runtime_env: dict[str, Any]
    """Ray runtime environment (runtimeEnvYAML) as a mapping."""
    cluster: str
    """Run on this existing RayCluster of the same namespace instead of a cluster of its own."""
    shutdown_after_job_finishes: bool
    """Delete the job's own Ray cluster when it ends (default true)."""
    suspend: bool
    """Create the job suspended: no Ray cluster until `spec.suspend` is set to false (a template; default false)."""
    ttl_seconds_after_finished: int
    """Keep the finished job this long before deleting it (with shutdown_after_job_finishes)."""
    active_deadline_seconds: int
    """Fail the job after this long."""
    submission_mode: str
    """K8sJobMode (default) or HTTPMode."""


class NetworkArgs(TypedDict, total=False):
    """A new VPC (default), or an existing network and subnetwork with named secondary ranges."""

    network: str
    """Existing network (name or self link); unset, a VPC is created."""
    subnetwork: str
    """Existing subnetwork."""
    pods_range_name: str
    """Secondary range of the existing subnetwork for pods."""
    services_range_name: str
    """Secondary range of the existing subnetwork for services."""
    subnet_cidr: str
    """Primary range of a new subnet (default 10.0.0.0/20)."""
    pods_cidr: str
    """Pod range of a new subnet (default 10.16.0.0/14)."""
    services_cidr: str
    """Service range of a new subnet (default 10.20.0.0/20)."""
    master_cidr: str
    """The control plane's private /28 (default 172.16.0.0/28)."""


class AuthorizedNetworkArgs(TypedDict, total=False):
    """A range that may reach the control plane."""

    cidr_block: Required[str]
    display_name: str


class SystemPoolArgs(TypedDict, total=False):
    """The CPU pool for system pods and Ray heads (Standard mode)."""

    machine_type: str
    """Default e2-standard-8."""
    min_nodes: int
    """Fewest nodes in the whole pool (default 1)."""
    max_nodes: int
    """Most nodes in the whole pool (default 3)."""
    disk_size_gb: int
    """Boot disk size (default 100)."""


class RayOperatorArgs(TypedDict, total=False):
    """What the Ray Operator add-on sends to Cloud Logging and Managed Prometheus."""

    logging: bool
    monitoring: bool


class ClusterSpecArgs(TypedDict, total=False):
    """The GKE cluster: mode, location, version policy and hardening switches."""

    name: Required[str]
    """Cluster name (at most 40 characters)."""
    mode: str
    """standard or autopilot (Autopilot clusters are regional)."""
    location: Required[str]
    """A zone or a region."""
    release_channel: str
    """RAPID, REGULAR (default) or STABLE."""
    min_master_version: str
    """Optional pin (a minor such as 1.34, or an exact version); unset, the release channel chooses."""
    deletion_protection: bool
    """GKE deletion protection and Pulumi protect on the cluster, TPU pools and bucket (default true)."""
    network: NetworkArgs
    master_authorized_networks: list[AuthorizedNetworkArgs]
    private_endpoint: bool
    """Reach the control plane only on its private IP."""
    system_pool: SystemPoolArgs
    ray_operator: RayOperatorArgs
    binary_authorization: bool
    """Enforce the project's Binary Authorization policy."""
    rbac_security_group: str
    """Google Groups for RBAC: gke-security-groups@<domain>."""


class StorageArgs(TypedDict, total=False):
    """The bucket for checkpoints, datasets and the XLA compilation cache."""

    enabled: bool
    """Create the bucket (default true)."""
    bucket_name: str
    """Default <project>-<cluster>-ray."""
    location: str
    """Default: the region."""
    versioning: bool
    """Object versioning (default true)."""
    access_log_bucket: str
    """Bucket for access logs (default none)."""
    force_destroy: bool
    """Let `pulumi destroy` delete a bucket with objects (default false)."""


class RateArgs(TypedDict, total=False):
    """A rate the user supplies: reservations, committed use, negotiated or unpublished prices."""

    kind: Required[str]
    """tpu (per chip-hour), gpu or cpu (per VM-hour)."""
    name: Required[str]
    """TPU generation, or GPU/CPU machine type."""
    capacity: Required[str]
    """onDemand, spot, reservation or flexStart."""
    hourly: Required[float]
    """USD per chip-hour (tpu) or VM-hour (gpu, cpu)."""
    region: str
    """Where the rate applies (default: every region)."""
    source: str
    """Where the rate comes from (e.g. a contract)."""
    as_of: str
    """When the rate was set (YYYY-MM-DD)."""


class PricingArgs(TypedDict, total=False):
    """Rates for the cost estimate and the environment's monthly budget (USD)."""

    rates: list[RateArgs]
    monthly_budget: float


class MonitoringArgs(TypedDict, total=False):
    """The dashboard and alert policies of the slices."""

    enabled: bool
    notification_channels: list[str]
    """Existing channel IDs (projects/<project>/notificationChannels/<id>)."""
    idle_duty_cycle_percent: float
    """Below this TPU duty cycle an available slice is idle (default 5)."""
    idle_minutes: int
    """How long idle before the alert fires (default 60)."""
    unavailable_minutes: int
    """How long a slice may be unavailable or not whole (default 15)."""
    interruptions_per_day: int
    """More interruptions than this in a day fire an alert (default 3)."""


class RayTpuPlatformArgs(TypedDict, total=False):
    """The whole environment: network, identity, storage, the GKE cluster, TPU slices, GPU and CPU pools and Ray
    objects."""

    project: Required[str]
    """Google Cloud project ID."""
    region: str
    """Region (default: the cluster's)."""
    environment: str
    """Value of the environment label (default: the component's name)."""
    team: str
    """Value of the team label."""
    cost_center: str
    """Value of the cost-center label."""
    cluster: Required[ClusterSpecArgs]
    storage: StorageArgs
    tpu_slices: list[TpuSliceArgs]
    gpu_pools: list[GpuPoolArgs]
    cpu_pools: list[CpuPoolArgs]
    ray_clusters: list[RayObjectArgs]
    ray_services: list[RayServiceSpecArgs]
    ray_jobs: list[RayJobSpecArgs]
    pricing: PricingArgs
    monitoring: MonitoringArgs


class TpuSlicePoolsArgs(TypedDict, total=False):
    """Node pools for one TPU slice entry in an existing Standard cluster: one pool per slice."""

    project: Required[str]
    """Project of the cluster."""
    cluster: Required[pulumi.Input[str]]
    """Name (or id) of the cluster, e.g. `my_cluster.name`."""
    location: Required[str]
    """The cluster's location: a zone, or a region (then the slice needs a zone)."""
    slice: Required[TpuSliceArgs]
    """The slice shape, count and capacity."""
    node_service_account: pulumi.Input[str]
    """Email of the nodes' service account. Default: a new one with only roles/container.defaultNodeServiceAccount
    and roles/artifactregistry.reader (never the Compute Engine default account; the deployer then needs
    roles/iam.serviceAccountAdmin and roles/resourcemanager.projectIamAdmin)."""
    labels: dict[str, str]
    """Resource labels of the nodes' VMs."""
    environment: str
    """Value of the ray-tpu-gke/environment node label."""
    deletion_protection: bool
    """Protect the pools from `pulumi destroy` (a replaced pool loses its slice; default true)."""


class WorkerPoolArgs(TypedDict, total=False):
    """A GPU or CPU node pool in an existing Standard cluster."""

    project: Required[str]
    """Project of the cluster."""
    cluster: Required[pulumi.Input[str]]
    """Name (or id) of the cluster."""
    location: Required[str]
    """The cluster's location: a zone, or a region."""
    gpu: GpuPoolArgs
    """The GPU pool (exactly one of gpu and cpu)."""
    cpu: CpuPoolArgs
    """The CPU pool (exactly one of gpu and cpu)."""
    node_service_account: pulumi.Input[str]
    """Email of the nodes' service account. Default: a new least-privilege one, as for TpuSlicePools."""
    labels: dict[str, str]
    """Resource labels of the nodes' VMs."""
    deletion_protection: bool
    """Protect the pool from `pulumi destroy` (default true, as for TPU pools)."""


class RayClusterArgs(TypedDict, total=False):
    """A KubeRay RayCluster on TPU slices, GPU or CPU pools, in an existing cluster with the Ray Operator add-on."""

    kubernetes_provider: Required[k8s.Provider]
    """Provider for the GKE cluster."""
    spec: Required[RayObjectArgs]
    """The Ray cluster; its worker groups name entries of tpu_slices, gpu_pools or cpu_pools."""
    tpu_slices: list[TpuSliceArgs]
    """The slices TPU groups run on (shape and capacity; in Standard mode, pools labelled by slice name)."""
    gpu_pools: list[GpuPoolArgs]
    """The GPU pools GPU groups run on."""
    cpu_pools: list[CpuPoolArgs]
    """The CPU pools CPU groups run on."""
    mode: str
    """standard (default) or autopilot: how worker pods select their nodes."""
    cluster_name: str
    """Name of the GKE cluster. Required in Autopilot mode for a TPU group on a multi-host Ironwood slice: its pods
    select the workload policy `<cluster>-<slice>` (create it with `ironwood_workload_policy`)."""
    service_account: str
    """Kubernetes service account of the Ray pods, bound to a Google service account by Workload Identity. Unset:
    the namespace's `default`, which acts as no Google service account, and the component warns so."""
    head_pool: str
    """Standard mode: the node pool the head runs on (default system)."""
    bucket: str
    """Bucket to mount at /gcs when the spec asks for GCS FUSE."""
    labels: dict[str, str]
    """Labels of the Ray object."""


class RayServiceArgs(RayClusterArgs, total=False):
    """A KubeRay RayService."""

    spec: Required[RayServiceSpecArgs]


class RayJobArgs(RayClusterArgs, total=False):
    """A KubeRay RayJob."""

    spec: Required[RayJobSpecArgs]


class GkeClusterArgs(TypedDict, total=False):
    """A GKE cluster with the Ray Operator add-on, its system pool, a Kubernetes provider and Ray namespaces."""

    project: Required[str]
    """Google Cloud project ID."""
    cluster: Required[ClusterSpecArgs]
    network: Required[pulumi.Input[str]]
    """Network (id or self link) the cluster joins."""
    subnetwork: Required[pulumi.Input[str]]
    """Subnetwork (id or self link) of the nodes."""
    pods_range_name: Required[str]
    """Secondary range of the subnetwork for pods."""
    services_range_name: Required[str]
    """Secondary range of the subnetwork for services."""
    node_service_account: Required[pulumi.Input[str]]
    """Email of the nodes' service account."""
    ray_service_account: pulumi.Input[str]
    """Email of the Google service account the Ray pods act as (Workload Identity); with `namespaces`."""
    namespaces: list[str]
    """Namespaces to create, each with a `ray` Kubernetes service account bound to `ray_service_account`."""
    labels: dict[str, str]
    """Resource labels of the cluster and its nodes."""
    minimum_version: str
    """The oldest GKE version the workloads need; checked against the release channel's default at deploy time."""
    minimum_version_reason: str
    """What needs minimum_version, for the deploy-time message."""
