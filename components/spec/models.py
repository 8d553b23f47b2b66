"""The validated forms of every component's arguments (pydantic, pure: no Pulumi import).

One model per concept. Stack files spell keys in camelCase and Python arguments in snake_case; each front end validates
with exactly one spelling (`validate_as`), so a key is never accepted in two spellings. Field rules that a cloud
service enforces cite the service; rules across fields live in `config` and `admission`.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal, Optional

from pydantic import (
    BeforeValidator,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from .. import admission, catalog
from .model_types import (
    Cidr,
    GkeVersion,
    Location,
    Model,
    Name,
    NonNegativeInt,
    SliceName,
    Zone,
    check_with,
)
from .model_types import validate_as as validate_as  # with the models, for the front ends
from .operations import MaintenanceConfig, SliceHealthConfig, UpgradeConfig

# --- cluster -------------------------------------------------------------------------------------------------------


class AuthorizedNetwork(Model):
    """A range that may reach the control plane."""

    cidr_block: Cidr
    """The range, in CIDR notation."""
    display_name: str = ""
    """A name for the range."""


class NetworkConfig(Model):
    """A new VPC (default), or an existing network and subnetwork with named secondary ranges."""

    network: Optional[str] = None
    """Existing network (name or self link); unset, a VPC is created."""
    subnetwork: Optional[str] = None
    """Existing subnetwork."""
    pods_range_name: Optional[str] = None
    """Secondary range of the existing subnetwork for pods."""
    services_range_name: Optional[str] = None
    """Secondary range of the existing subnetwork for services."""
    subnet_cidr: Cidr = "10.0.0.0/20"
    """Primary range of a new subnet (default 10.0.0.0/20)."""
    pods_cidr: Cidr = "10.16.0.0/14"
    """Pod range of a new subnet (default 10.16.0.0/14)."""
    services_cidr: Cidr = "10.20.0.0/20"
    """Service range of a new subnet (default 10.20.0.0/20)."""
    master_cidr: Cidr = "172.16.0.0/28"
    """The control plane's private /28 (default 172.16.0.0/28)."""

    @field_validator("master_cidr")
    @classmethod
    def _master(cls, value: str) -> str:
        # GKE: the control plane range of a private cluster is a /28 (GKE "Create a private cluster").
        if ipaddress.ip_network(value).prefixlen != 28:
            raise ValueError("must be a /28 range (GKE's private control plane range)")
        return value

    @property
    def existing(self) -> bool:
        return self.network is not None


class SystemPoolConfig(Model):
    """The CPU pool for system pods and Ray heads (Standard mode)."""

    machine_type: str = "e2-standard-8"
    """Default e2-standard-8."""
    min_nodes: Annotated[StrictInt, Field(ge=0, le=1000)] = 1
    """Fewest nodes in the whole pool (default 1)."""
    max_nodes: Annotated[StrictInt, Field(ge=1, le=1000)] = 3
    """Most nodes in the whole pool (default 3)."""
    # Compute Engine: a persistent disk holds at most 64 TB (65,536 GB), and GKE boot disks at least 10 GB.
    disk_size_gb: Annotated[StrictInt, Field(ge=20, le=65536)] = 100
    """Boot disk size (default 100)."""

    @field_validator("machine_type")
    @classmethod
    def _machine(cls, value: str) -> str:
        admission.check_cpu_machine_type(value)
        return value


class RayOperatorConfig(Model):
    """What the Ray Operator add-on sends to Cloud Logging and Managed Prometheus."""

    logging: StrictBool = True
    """Send the Ray logs to Cloud Logging (default true)."""
    monitoring: StrictBool = True
    """Send the Ray metrics to Managed Prometheus (default true)."""


Mode = Literal["standard", "autopilot"]


class ClusterConfig(Model):
    """The GKE cluster: mode, location, version policy and hardening switches."""

    name: Name
    """Cluster name (at most 40 characters)."""
    mode: Mode = "standard"
    """standard or autopilot (Autopilot clusters are regional)."""
    location: Location
    """A zone or a region."""
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    """RAPID, REGULAR (default) or STABLE."""
    min_master_version: Optional[GkeVersion] = None
    """Optional pin (a minor such as 1.34, or an exact version); unset, the release channel chooses."""
    deletion_protection: StrictBool = True
    """GKE deletion protection and Pulumi protect on the cluster, TPU pools and bucket (default true)."""
    network: NetworkConfig = NetworkConfig()
    """The VPC: a new one (default), or an existing network."""
    master_authorized_networks: list[AuthorizedNetwork] = []
    """Ranges that may reach the control plane."""
    private_endpoint: StrictBool = False
    """Reach the control plane only on its private IP."""
    system_pool: SystemPoolConfig = SystemPoolConfig()
    """The CPU pool for system pods and Ray heads."""
    ray_operator: RayOperatorConfig = RayOperatorConfig()
    """What the Ray Operator add-on sends to Cloud Logging and Managed Prometheus."""
    binary_authorization: StrictBool = False
    """Enforce the project's Binary Authorization policy."""
    rbac_security_group: Optional[str] = None
    """Google Groups for RBAC: gke-security-groups@<domain>."""
    maintenance: Optional[MaintenanceConfig] = None
    """Maintenance windows and exclusions (spec/operations.py); unset: GKE upgrades at any time."""

    @field_validator("rbac_security_group")
    @classmethod
    def _group(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not re.fullmatch(r"gke-security-groups@[a-z0-9.-]+\.[a-z]{2,}", value):
            raise ValueError("Google Groups for RBAC needs the group gke-security-groups@<your domain>")
        return value

    @property
    def zonal(self) -> bool:
        return admission.is_zone(self.location)

    @property
    def region(self) -> str:
        return admission.region_of(self.location)


# --- storage -------------------------------------------------------------------------------------------------------


BucketName = Annotated[str, check_with(admission.check_bucket_name)]  # admission.BUCKET_NAME
BucketLocation = Annotated[str, check_with(admission.check_bucket_location)]  # admission.BUCKET_LOCATION


class StorageConfig(Model):
    """The bucket for checkpoints, datasets and the XLA compilation cache."""

    enabled: StrictBool = True
    """Create the bucket (default true)."""
    bucket_name: Optional[BucketName] = None
    """Default <project>-<cluster>-ray."""
    location: Optional[BucketLocation] = None
    """Default: the region."""
    versioning: StrictBool = True
    """Object versioning (default true)."""
    access_log_bucket: Optional[BucketName] = None
    """Bucket for access logs (default none)."""
    force_destroy: StrictBool = False
    """Let `pulumi destroy` delete a bucket with objects (default false)."""


# --- TPU slices ----------------------------------------------------------------------------------------------------

Capacity = Literal["onDemand", "spot", "reservation", "flexStart"]


def _shorthand_autoscaling(value: Any) -> Any:
    # `autoscaling: true` means the default bounds (0 to all hosts); `false` means a fixed-size pool.
    return {"enabled": value} if isinstance(value, bool) else value


class SliceAutoscaling(Model):
    """Node autoscaling of a slice's pools: a multi-host pool scales atomically between 0 and all its hosts."""

    enabled: StrictBool = True
    """Scale the pool with demand (default true when the key is given; flexStart always autoscales)."""
    min_nodes: NonNegativeInt = 0
    """Nodes kept when idle: 0, or every host of the slice."""


class _Reservable(Model):
    """Capacity taken from a reservation: its name, or projects/<project>/reservations/<name> when shared."""

    reservation: Optional[str] = None

    @field_validator("reservation")
    @classmethod
    def _reservation(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            admission.check_reservation(value)
        return value

    @property
    def reservation_name(self) -> Optional[str]:
        """The reservation's own name (the last part of projects/P/reservations/R)."""
        return self.reservation.rsplit("/", 1)[-1] if self.reservation else None

    @property
    def reservation_project(self) -> Optional[str]:
        """The project that owns a shared reservation, or None for a reservation of the cluster's project."""
        return self.reservation.split("/")[1] if self.reservation and "/" in self.reservation else None


class TpuSliceConfig(_Reservable):
    """A TPU slice shape from the catalogue, how many of it, and the capacity it runs on."""

    name: SliceName
    """Unique name; node pools are named `<name>-<index>` and Ray worker groups refer to it."""
    generation: Literal[tuple(catalog.GENERATIONS)]  # type: ignore[valid-type]
    """TPU generation: v4, v5e, v5p, v6e or tpu7x."""
    topology: str
    """Chips per dimension, e.g. 4x4 or 2x2x4."""
    machine_type: Optional[str] = None
    """Picks a layout where several are valid (v5e/v6e 2x4: one 8-chip host or two 4-chip hosts)."""
    count: Annotated[StrictInt, Field(ge=1, le=admission.MAX_SLICES_PER_ENTRY)] = 1
    """Slices of this shape; Standard mode creates one node pool per slice."""
    capacity: Capacity = "onDemand"
    """onDemand, spot, reservation or flexStart."""
    reservation: Optional[str] = None
    """The reservation's name, or projects/<project>/reservations/<name> when shared (capacity reservation)."""
    zone: Optional[Zone] = None
    """The slice's zone; required in a regional Standard cluster."""
    autoscaling: Annotated[Optional[SliceAutoscaling], BeforeValidator(_shorthand_autoscaling)] = None
    """Node autoscaling of the slice's pools (Standard mode)."""
    upgrade: Optional[UpgradeConfig] = None
    """Node upgrade settings; unset: render/upgrades.py chooses per slice shape and capacity."""

    @property
    def shape(self) -> catalog.SliceShape:
        return catalog.resolve(self.generation, self.topology, self.machine_type)

    @property
    def autoscaled(self) -> bool:
        # Flex-start capacity is created on demand from zero, so it implies autoscaling (GKE "About flex-start
        # provisioning mode": flex-start node pools need node auto-scaling).
        if self.autoscaling is None:
            return self.capacity == "flexStart"
        return self.autoscaling.enabled

    @property
    def min_nodes(self) -> int:
        return self.autoscaling.min_nodes if self.autoscaling is not None else 0


# --- GPU and CPU worker pools --------------------------------------------------------------------------------------


class PoolAutoscaling(Model):
    """Node autoscaling of a GPU or CPU pool, in nodes (one Ray worker pod per node)."""

    enabled: StrictBool = True
    """Scale the pool with demand (flexStart always autoscales)."""
    min_nodes: NonNegativeInt = 0
    """Nodes kept when idle (default 0)."""
    max_nodes: Optional[Annotated[StrictInt, Field(ge=1, le=1000)]] = None
    """Most nodes (default: count)."""


class _WorkerPool(Model):
    """What GPU and CPU pools share: a node pool of `count` nodes (the autoscaling maximum when it autoscales)."""

    name: SliceName
    """Unique pool name; Ray worker groups refer to it with gpu_pool (a GPU pool) or cpu_pool (a CPU pool)."""
    count: Annotated[StrictInt, Field(ge=1, le=1000)] = 1
    """Nodes (the most nodes when autoscaled)."""
    zone: Optional[Zone] = None
    """The pool's zone; a GPU pool needs one in a regional Standard cluster, where a CPU pool without one spans the
    cluster's zones."""
    autoscaling: Annotated[Optional[PoolAutoscaling], BeforeValidator(_shorthand_autoscaling)] = None
    """Node autoscaling of the pool; `true` or `false` alone turns it on with the default bounds, or off."""

    @property
    def autoscaled(self) -> bool:
        if self.autoscaling is None:
            return getattr(self, "capacity", None) == "flexStart"
        return self.autoscaling.enabled

    @property
    def min_nodes(self) -> int:
        return (
            self.autoscaling.min_nodes
            if self.autoscaled and self.autoscaling is not None
            else (0 if self.autoscaled else self.count)
        )

    @property
    def max_nodes(self) -> int:
        if self.autoscaled and self.autoscaling is not None and self.autoscaling.max_nodes is not None:
            return self.autoscaling.max_nodes
        return self.count


class GpuPoolConfig(_WorkerPool, _Reservable):
    """A GPU node pool (Standard) or what GPU pods select (Autopilot), from the GPU catalogue."""

    accelerator: Literal[tuple(catalog.GPUS)]  # type: ignore[valid-type]
    """GKE accelerator type: nvidia-l4, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb, nvidia-h100-mega-80gb,
    nvidia-h200-141gb or nvidia-b200."""
    machine_type: Optional[str] = None
    """Default: the catalogue's machine type for the accelerator (filled in on validation)."""
    capacity: Capacity = "onDemand"
    """onDemand, spot, reservation or flexStart (A3 Ultra and A4 have no onDemand)."""
    reservation: Optional[str] = None
    """The reservation's name, or projects/<project>/reservations/<name> when shared."""
    allow_unlisted_zone: StrictBool = False
    """Accept a zone the catalogue does not list for the accelerator."""
    upgrade: Optional[UpgradeConfig] = None
    """Node upgrade settings (maxSurge, maxUnavailable); unset: render/upgrades.py chooses them."""

    @model_validator(mode="after")
    def _machine_of_accelerator(self) -> "GpuPoolConfig":
        if self.machine_type is None:  # every validated pool names its machine type
            object.__setattr__(self, "machine_type", catalog.GPUS[self.accelerator].default_machine.name)
        return self

    @property
    def machine(self) -> catalog.GpuMachine:
        return catalog.gpu_machine(self.accelerator, self.machine_type)


class CpuPoolConfig(_WorkerPool):
    """A CPU node pool for Ray Data preprocessing, drivers and other CPU work."""

    machine_type: str = "n2-standard-16"
    """A predefined E2, N2, N2D, N4 or C3 machine type (default n2-standard-16)."""
    capacity: Literal["onDemand", "spot"] = "onDemand"
    """onDemand or spot."""

    @field_validator("machine_type")
    @classmethod
    def _machine(cls, value: str) -> str:
        admission.check_cpu_machine_type(value)
        return value


# --- cost and operations -------------------------------------------------------------------------------------------


class RateConfig(Model):
    """A rate the user supplies: reservations, committed use, negotiated or unpublished prices."""

    kind: Literal["tpu", "gpu", "cpu"]
    """tpu (per chip-hour), gpu or cpu (per VM-hour)."""
    name: str
    """TPU generation (per chip-hour), or GPU/CPU machine type (per VM-hour)."""
    capacity: Literal["onDemand", "spot", "reservation", "flexStart"]
    """onDemand, spot, reservation or flexStart."""
    hourly: Annotated[float, Field(gt=0, le=1_000_000, allow_inf_nan=False)]
    """USD per chip-hour (tpu) or VM-hour (gpu, cpu)."""
    region: Optional[str] = None
    """Where the rate applies (default: every region)."""

    @field_validator("region")
    @classmethod
    def _region(cls, value: Optional[str]) -> Optional[str]:
        if value is None or value in admission.GOOGLE_CLOUD_REGIONS:
            return value
        if admission.is_zone(value.lower()):
            raise ValueError(f"is a zone; a rate applies to a region: allowed: {admission.region_of(value.lower())}")
        if value.lower() in admission.GOOGLE_CLOUD_REGIONS:
            raise ValueError(f"regions are lower case; allowed: {value.lower()}")
        raise ValueError(
            "is not a Google Cloud region; allowed: a region such as us-central1 (admission GOOGLE_CLOUD_REGIONS)"
        )

    source: str = "stack config"
    """Where the rate comes from (e.g. a contract)."""
    as_of: Optional[str] = None
    """When the rate was set (YYYY-MM-DD)."""


class PricingConfig(Model):
    """Rates for the cost estimate and the environment's monthly budget (USD)."""

    rates: list[RateConfig] = []
    """Rates that add to or override the list prices (components/catalog/prices.py)."""
    monthly_budget: Optional[Annotated[float, Field(gt=0, allow_inf_nan=False)]] = None
    """The environment's monthly budget in USD; the policy pack compares the plan's cost with it."""


class MonitoringConfig(Model):
    """The dashboard and alert policies of the slices."""

    enabled: StrictBool = True
    """Create the dashboard and alert policies (default true)."""
    notification_channels: list[str] = []
    """Existing channel IDs: projects/<project>/notificationChannels/<id>. None: alerts exist, notify nobody."""
    idle_duty_cycle_percent: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = 5.0
    """Below this TPU duty cycle an available slice is idle (default 5)."""
    idle_minutes: Annotated[StrictInt, Field(ge=5, le=10080)] = 60
    """How long idle before the alert fires (default 60)."""
    unavailable_minutes: Annotated[StrictInt, Field(ge=1, le=1440)] = 15
    """How long a slice may be unavailable or not whole (default 15)."""
    interruptions_per_day: Annotated[StrictInt, Field(ge=1, le=1000)] = 3
    """More interruptions than this in a day fire an alert (default 3)."""
    pending_pods_minutes: Annotated[StrictInt, Field(ge=1, le=1440)] = 30
    """How long Ray pods may stay unschedulable (a stockout, quota, a flex-start wait) before their alert fires."""
    slice_health: SliceHealthConfig = SliceHealthConfig()
    """The in-cluster check of every TPU slice (a CronJob) and its alerts."""
    runbook_base_url: Optional[str] = None
    """Where the alerts' runbook links point: the https URL under which your git host serves this repository's
    files, such as https://<your-git-host>/<org>/ray-tpu-gke/blob/main. Unset: the alerts name docs/operations.md
    and its section, without a link."""

    @field_validator("runbook_base_url")
    @classmethod
    def _runbook_base_url(cls, value: Optional[str]) -> Optional[str]:
        from urllib.parse import urlsplit

        if value is None:
            return value
        parts = urlsplit(value)
        # RFC 3986 reserves < > " and spaces; a link Cloud Monitoring renders in Markdown must be whole.
        if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment or re.search(r'[\s<>"]', value):
            raise ValueError(
                f"{value!r} is not an https URL without query or fragment (the base under which the "
                "repository's files are served: https://<your-git-host>/<org>/ray-tpu-gke/blob/main)"
            )
        return value.rstrip("/")

    @field_validator("notification_channels")
    @classmethod
    def _channels(cls, value: list[str]) -> list[str]:
        for channel in value:
            if not re.fullmatch(r"projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/notificationChannels/[0-9]+", channel):
                raise ValueError(
                    f"{channel!r} is not a notification channel ID: projects/<project>/notificationChannels/<number>"
                )
        return value
