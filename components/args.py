"""The typed arguments of every component: what each one needs, and nothing it reaches for elsewhere.

Plain `TypedDict`s, so a Python program writes `TpuSlicePoolsArgs(cluster=..., slice=TpuSliceArgs(...))` and Pulumi's
component provider infers a schema from them for TypeScript, Go, C# and YAML programs (`provider/`). Every component
validates its arguments with the models in `models` (the same rules as a stack file, in snake_case) before it registers
any resource, and fails with `ConfigError` naming the argument path, the value and what is allowed.
Values another resource produces are `pulumi.Input`s.
"""

from __future__ import annotations

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


class WorkerGroupArgs(TypedDict, total=False):
    """A Ray worker group on one TPU slice shape: `replicas` counts slices, not pods."""

    name: Required[str]
    """Group name (KubeRay groupName)."""
    slice: Required[str]
    """The name of the TPU slice (an entry of `tpu_slices`) the group runs on."""
    replicas: int
    """Slices the group starts with."""
    min_replicas: int
    """Fewest slices the Ray autoscaler keeps."""
    max_replicas: int
    """Most slices the Ray autoscaler may ask for (default: replicas)."""


class HeadArgs(TypedDict, total=False):
    """The Ray head pod's CPU and memory (Kubernetes quantities)."""

    cpu: str
    memory: str


class RayAutoscalingArgs(TypedDict, total=False):
    """Ray's in-tree autoscaler."""

    enabled: bool
    idle_timeout_seconds: int


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
    worker_groups: list[WorkerGroupArgs]
    autoscaling: RayAutoscalingArgs
    gcs_fuse: bool
    """Mount the platform's bucket at /gcs through the GCS FUSE CSI driver (needs a bucket)."""
    wait_for_ready: bool
    """Let `pulumi up` wait until the object is ready."""


class RayServiceSpecArgs(RayObjectArgs, total=False):
    serve_config: Required[dict[str, Any]]
    """Ray Serve config (serveConfigV2) as a mapping."""
    upgrade_strategy: str
    """NewCluster (needs twice the slices during an upgrade) or None."""


class RayJobSpecArgs(RayObjectArgs, total=False):
    entrypoint: Required[str]
    runtime_env: dict[str, Any]
    cluster: str
    """Run on this existing RayCluster of the same namespace instead of a cluster of its own."""
    shutdown_after_job_finishes: bool
    ttl_seconds_after_finished: int
    active_deadline_seconds: int
    submission_mode: str


class ClusterSpecArgs(TypedDict, total=False):
    """The GKE cluster: mode, location, version policy and hardening switches."""

    name: Required[str]
    mode: str
    """standard or autopilot (Autopilot clusters are regional)."""
    location: Required[str]
    """A zone or a region."""
    release_channel: str
    """RAPID, REGULAR or STABLE."""
    min_master_version: str
    """Optional pin (a minor such as 1.34, or an exact version); unset, the release channel chooses."""
    deletion_protection: bool
    network: dict[str, Any]
    """network, subnetwork, podsRangeName, servicesRangeName of an existing VPC, or CIDRs of a new one."""
    master_authorized_networks: list[dict[str, Any]]
    private_endpoint: bool
    system_pool: dict[str, Any]
    """machine_type, min_nodes, max_nodes (totals), disk_size_gb of the CPU pool for system pods and Ray heads."""
    ray_operator: dict[str, Any]
    binary_authorization: bool
    rbac_security_group: str


class StorageArgs(TypedDict, total=False):
    """The bucket for checkpoints, datasets and the XLA compilation cache."""

    enabled: bool
    bucket_name: str
    location: str
    versioning: bool
    access_log_bucket: str
    force_destroy: bool


class RateArgs(TypedDict, total=False):
    """A rate the user supplies: reservations, committed use, negotiated or unpublished prices."""

    kind: Required[str]
    """tpu (per chip-hour), gpu or cpu (per VM-hour)."""
    name: Required[str]
    """TPU generation, or GPU/CPU machine type."""
    capacity: Required[str]
    hourly: Required[float]
    region: str
    source: str
    as_of: str


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
    idle_minutes: int
    unavailable_minutes: int
    interruptions_per_day: int


class RayTpuPlatformArgs(TypedDict, total=False):
    """The whole environment: network, identity, storage, the GKE cluster, TPU slices and Ray objects."""

    project: Required[str]
    """Google Cloud project ID."""
    region: str
    """Region (default: the cluster's)."""
    environment: str
    """Value of the environment label (default: the stack name)."""
    team: str
    cost_center: str
    cluster: Required[ClusterSpecArgs]
    storage: StorageArgs
    tpu_slices: list[TpuSliceArgs]
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
    node_service_account: pulumi.Input[str]
    """Email of the nodes' service account (least privilege; default: the project's Compute Engine default)."""
    labels: dict[str, str]
    """Resource labels of the nodes' VMs."""
    environment: str
    deletion_protection: bool
    """Protect the pools from `pulumi destroy` (a replaced pool loses its slice)."""


class RayClusterArgs(TypedDict, total=False):
    """A KubeRay RayCluster on TPU slices, in an existing cluster with the Ray Operator add-on."""

    kubernetes_provider: Required[k8s.Provider]
    """Provider for the GKE cluster."""
    spec: Required[RayObjectArgs]
    """The Ray cluster; its worker groups name slices of `tpu_slices`."""
    tpu_slices: Required[list[TpuSliceArgs]]
    """The slices the worker groups run on (shape and capacity; in Standard mode, pools labelled by slice name)."""
    mode: str
    """standard (default) or autopilot: how worker pods select their nodes."""
    service_account: str
    """Kubernetes service account of the Ray pods (default: default)."""
    bucket: str
    """Bucket to mount at /gcs when the spec asks for GCS FUSE."""
    labels: dict[str, str]


class RayServiceArgs(RayClusterArgs, total=False):
    spec: Required[RayServiceSpecArgs]


class RayJobArgs(RayClusterArgs, total=False):
    spec: Required[RayJobSpecArgs]



class GkeClusterArgs(TypedDict, total=False):
    """A GKE cluster with the Ray Operator add-on, its system pool, a Kubernetes provider and Ray namespaces."""

    project: Required[str]
    cluster: Required[ClusterSpecArgs]
    network: Required[pulumi.Input[str]]
    """Network (id or self link) the cluster joins."""
    subnetwork: Required[pulumi.Input[str]]
    pods_range_name: Required[str]
    """Secondary range of the subnetwork for pods."""
    services_range_name: Required[str]
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
