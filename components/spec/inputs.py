"""The arguments of each component, declared once, beside the sections they nest (`models`, `ray_models`,
`operations`): `scripts/generate.py` (`make generate`) writes `args.py`'s TypedDicts from these models and from those,
each field's docstring carried over, and the argument reference of docs/library.md.

These models are declarations only: the components validate their arguments with the front ends of
`component_args` and `monitoring_args` (with the models of the sections they nest). A field annotated
`Annotated[T, Typed("...")]` is spelt so in the TypedDict (a `pulumi.Input`, a Kubernetes provider), which no pydantic
model of its own can express. Pure: no Pulumi import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict

from .models import (
    ClusterConfig,
    CpuPoolConfig,
    GpuPoolConfig,
    MonitoringConfig,
    PricingConfig,
    StorageConfig,
    TpuSliceConfig,
)
from .ray_models import RayClusterConfig, RayJobConfig, RayServiceConfig


@dataclass(frozen=True)
class Typed:
    """How the generated TypedDict spells a field's type, where that is no model's."""

    python: str


InputStr = Annotated[str, Typed("pulumi.Input[str]")]  # a value another resource may produce (an Output)
KubernetesProvider = Annotated[Any, Typed("k8s.Provider")]


class Inputs(BaseModel):
    model_config = ConfigDict(frozen=True)


class RayTpuPlatformInputs(Inputs):
    """The whole environment: network, identity, storage, the GKE cluster, TPU slices, GPU and CPU pools and Ray
    objects."""

    project: str
    """Google Cloud project ID."""
    region: str = ""
    """Region (default: the cluster's)."""
    environment: str = ""
    """Value of the environment label (default: the component's name)."""
    team: str = ""
    """Value of the team label."""
    cost_center: str = ""
    """Value of the cost-center label."""
    cluster: ClusterConfig
    """The GKE cluster."""
    storage: StorageConfig = StorageConfig()
    """The bucket for checkpoints, datasets and the XLA compilation cache."""
    tpu_slices: list[TpuSliceConfig] = []
    """TPU slice entries, each `count` slices of one shape."""
    gpu_pools: list[GpuPoolConfig] = []
    """GPU node pools."""
    cpu_pools: list[CpuPoolConfig] = []
    """CPU node pools."""
    ray_clusters: list[RayClusterConfig] = []
    """KubeRay RayClusters."""
    ray_services: list[RayServiceConfig] = []
    """KubeRay RayServices."""
    ray_jobs: list[RayJobConfig] = []
    """KubeRay RayJobs."""
    pricing: PricingConfig = PricingConfig()
    """Rates for the cost estimate and the monthly budget."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """The dashboard and alert policies of the slices."""


class TpuSlicePoolsInputs(Inputs):
    """Node pools for one TPU slice entry in an existing Standard cluster: one pool per slice."""

    project: str
    """Project of the cluster."""
    cluster: InputStr
    """Name (or id) of the cluster, e.g. `my_cluster.name`."""
    location: str
    """The cluster's location: a zone, or a region (then the slice needs a zone)."""
    slice: TpuSliceConfig
    """The slice shape, count and capacity."""
    node_service_account: InputStr = ""
    """Email of the nodes' service account. Default: a new one with only roles/container.defaultNodeServiceAccount
    and roles/artifactregistry.reader (never the Compute Engine default account; the deployer then needs
    roles/iam.serviceAccountAdmin and roles/resourcemanager.projectIamAdmin)."""
    labels: dict[str, str] = {}
    """Resource labels of the nodes' VMs."""
    environment: str = ""
    """Value of the ray-tpu-gke/environment node label."""
    deletion_protection: bool = True
    """Protect the pools from `pulumi destroy` (a replaced pool loses its slice; default true)."""


class WorkerPoolInputs(Inputs):
    """A GPU or CPU node pool in an existing Standard cluster."""

    project: str
    """Project of the cluster."""
    cluster: InputStr
    """Name (or id) of the cluster."""
    location: str
    """The cluster's location: a zone, or a region."""
    gpu: Optional[GpuPoolConfig] = None
    """The GPU pool (exactly one of gpu and cpu)."""
    cpu: Optional[CpuPoolConfig] = None
    """The CPU pool (exactly one of gpu and cpu)."""
    node_service_account: InputStr = ""
    """Email of the nodes' service account. Default: a new least-privilege one, as for TpuSlicePools."""
    labels: dict[str, str] = {}
    """Resource labels of the nodes' VMs."""
    deletion_protection: bool = True
    """Protect the pool from `pulumi destroy` (default true, as for TPU pools)."""


class _RayObjectInputs(Inputs):
    """What every KubeRay object's component takes beside its spec, which each kind declares as its own type."""

    kubernetes_provider: KubernetesProvider
    """Provider for the GKE cluster."""
    tpu_slices: list[TpuSliceConfig] = []
    """The slices TPU groups run on (shape and capacity; in Standard mode, pools labelled by slice name)."""
    gpu_pools: list[GpuPoolConfig] = []
    """The GPU pools GPU groups run on."""
    cpu_pools: list[CpuPoolConfig] = []
    """The CPU pools CPU groups run on."""
    mode: str = "standard"
    """standard (default) or autopilot: how worker pods select their nodes."""
    cluster_name: str = ""
    """Name of the GKE cluster. Required in Autopilot mode for a TPU group on a multi-host Ironwood slice: its pods
    select the workload policy `<cluster>-<slice>` (create it with `ironwood_workload_policy`)."""
    service_account: str = ""
    """Kubernetes service account of the Ray pods, bound to a Google service account by Workload Identity. Unset:
    the namespace's `default`, which acts as no Google service account, and the component warns so."""
    head_pool: str = "system"
    """Standard mode: the node pool the head runs on (default system)."""
    bucket: str = ""
    """Bucket to mount at /gcs when the spec asks for GCS FUSE."""
    labels: dict[str, str] = {}
    """Labels of the Ray object."""


class RayClusterInputs(_RayObjectInputs):
    """A KubeRay RayCluster on TPU slices, GPU or CPU pools, in an existing cluster with the Ray Operator add-on."""

    spec: RayClusterConfig
    """The Ray cluster; its worker groups name entries of tpu_slices, gpu_pools or cpu_pools."""


class RayServiceInputs(_RayObjectInputs):
    """A KubeRay RayService."""

    spec: RayServiceConfig
    """The Ray cluster and the Serve config it serves."""


class RayJobInputs(_RayObjectInputs):
    """A KubeRay RayJob."""

    spec: RayJobConfig
    """The job, and the Ray cluster it runs on."""


class GkeClusterInputs(Inputs):
    """A GKE cluster with the Ray Operator add-on, its system pool, a Kubernetes provider and Ray namespaces."""

    project: str
    """Google Cloud project ID."""
    cluster: ClusterConfig
    """The cluster's settings."""
    network: InputStr
    """Network (id or self link) the cluster joins."""
    subnetwork: InputStr
    """Subnetwork (id or self link) of the nodes."""
    pods_range_name: str
    """Secondary range of the subnetwork for pods."""
    services_range_name: str
    """Secondary range of the subnetwork for services."""
    node_service_account: InputStr
    """Email of the nodes' service account."""
    ray_service_account: InputStr = ""
    """Email of the Google service account the Ray pods act as (Workload Identity); with `namespaces`."""
    namespaces: list[str] = []
    """Namespaces to create, each with a `ray` Kubernetes service account bound to `ray_service_account`."""
    labels: dict[str, str] = {}
    """Resource labels of the cluster and its nodes."""
    minimum_version: str = ""
    """The oldest GKE version the workloads need; checked against the release channel's default at deploy time."""
    minimum_version_reason: str = ""
    """What needs minimum_version, for the deploy-time message."""


# --- SliceMonitoring -----------------------------------------------------------------------------------------------


class MonitoredSliceInputs(Inputs):
    """A TPU slice entry to observe, and where its nodes are."""

    slice: TpuSliceConfig
    """The slice entry (shape, count, capacity, autoscaling), as TpuSlicePools takes it."""
    pools: list[str] = []
    """Standard mode: the entry's node pools, one per slice (`count` names; TpuSlicePools names them
    `<name>-<index>`). Autopilot: leave out; the slice's nodes are found by the labels its Ray pods select."""
    worker_groups: list[str] = []
    """Names of the Ray worker groups that run on the slice (charted from the Ray autoscaler's metrics)."""


class MonitoredGpuPoolInputs(Inputs):
    """A GPU pool entry to observe."""

    pool: GpuPoolConfig
    """The GPU pool entry (name, accelerator, machine_type, count, capacity, autoscaling)."""
    pools: list[str] = []
    """Standard mode: its node pools. Autopilot: leave out (its nodes are found by their GPU accelerator label)."""
    worker_groups: list[str] = []
    """Names of the Ray worker groups that run on the pool."""


class SliceMonitoringInputs(Inputs):
    """A dashboard and alert policies for the TPU slices (and GPU pools) of one GKE cluster."""

    project: str
    """Project of the cluster; the dashboard and policies are created there."""
    cluster: str
    """The cluster's name, as a plain string: the filters are written before anything is deployed."""
    environment: str = ""
    """Environment label and prefix of every policy's name (default: the cluster's name); a name starting with `prod`
    is production: a production environment without notification channels is warned about."""
    mode: str = "standard"
    """standard (default: the slices name their node pools) or autopilot."""
    slices: list[MonitoredSliceInputs] = []
    """The TPU slice entries to observe."""
    gpu_pools: list[MonitoredGpuPoolInputs] = []
    """The GPU pools to observe."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """Notification channels and thresholds (MonitoringConfig defaults: idle below 5% for 60 min, unavailable for
    15 min, more than 3 interruptions a day)."""
    ray_metrics: bool = False
    """Whether the cluster's Ray Operator add-on collects Ray metrics (rayOperator.monitoring): adds the Ray charts."""
    labels: dict[str, str] = {}
    """userLabels of every alert policy (GCP label keys and values)."""
    ray_namespaces: list[str] = []
    """Namespaces of the Ray objects: the unschedulable-pods alert watches them."""
    ray_kinds: list[str] = []
    """Kinds of the Ray objects on the cluster (RayCluster, RayService, RayJob): with slice_health, the not-ready
    and failed alerts watch them."""
    slice_health: bool = False
    """Whether the in-cluster slice check runs (SliceHealth, workloads/slice_health.py): adds its alert policies and
    charts, which read the series it writes (default false)."""
