"""Typed stack configuration, validated whole before any resource is registered.

Pure (no Pulumi import): `parse_stack_config` takes the decoded config map of a stack (`{"ray-tpu-gke:cluster": {...}}`)
and returns a `StackConfig`, or raises `ConfigError` listing every problem with its key path, the value given and what
is allowed. Field names are snake_case here and camelCase in YAML.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
import types
import typing
from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from . import catalog

PROJECT = "ray-tpu-gke"
DEFAULT_RAY_VERSION = "2.55.0"
# The Ray project's own CPU image of this Ray version (as KubeRay's TPU samples use): TPU access comes from the GKE
# TPU device plugin, and JAX/libtpu from a derived image or the job's runtime env.
DEFAULT_RAY_IMAGE = "rayproject/ray:2.55.0-py311"

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
SHARED_RESERVATION = re.compile(r"^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/[a-z]([-a-z0-9]*[a-z0-9])?$")

NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]


def _dns_label(max_length: int):
    """A Kubernetes/GKE name of at most `max_length` characters (GKE cluster and pool names allow 40)."""

    def check(value: str) -> str:
        if len(value) > max_length or not DNS_LABEL.match(value):
            raise ValueError(
                f"must be a DNS label of at most {max_length} characters: lowercase letters, digits and '-', "
                "starting with a letter and not ending with '-'"
            )
        return value

    return Annotated[str, AfterValidator(check)]


Name = _dns_label(40)
SliceName = _dns_label(30)  # leaves room for the pool index in node pool names
Namespace = _dns_label(63)


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


# --- cluster -------------------------------------------------------------------------------------------------------


class AuthorizedNetwork(Model):
    cidr_block: str
    display_name: str = ""

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, value: str) -> str:
        ipaddress.ip_network(value, strict=True)
        return value


class NetworkConfig(Model):
    """Create a VPC (default), or use an existing network and subnetwork with named secondary ranges."""

    network: Optional[str] = None
    subnetwork: Optional[str] = None
    pods_range_name: Optional[str] = None
    services_range_name: Optional[str] = None
    subnet_cidr: str = "10.0.0.0/20"
    pods_cidr: str = "10.16.0.0/14"
    services_cidr: str = "10.20.0.0/20"
    master_cidr: str = "172.16.0.0/28"

    @field_validator("subnet_cidr", "pods_cidr", "services_cidr", "master_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        ipaddress.ip_network(value, strict=True)
        return value

    @property
    def existing(self) -> bool:
        return self.network is not None


class SystemPoolConfig(Model):
    """The CPU node pool for system pods and Ray head pods (Standard mode)."""

    machine_type: str = "e2-standard-8"
    min_nodes: NonNegativeInt = 1
    max_nodes: PositiveInt = 3
    disk_size_gb: Annotated[StrictInt, Field(ge=20)] = 100


class RayOperatorConfig(Model):
    logging: StrictBool = True
    monitoring: StrictBool = True


class ClusterConfig(Model):
    name: Name
    mode: Literal["standard", "autopilot"] = "standard"
    location: str
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    min_master_version: Optional[str] = None
    deletion_protection: StrictBool = True
    network: NetworkConfig = NetworkConfig()
    master_authorized_networks: list[AuthorizedNetwork] = []
    private_endpoint: StrictBool = False
    system_pool: SystemPoolConfig = SystemPoolConfig()
    ray_operator: RayOperatorConfig = RayOperatorConfig()
    binary_authorization: StrictBool = False
    rbac_security_group: Optional[str] = None

    @field_validator("location")
    @classmethod
    def _location(cls, value: str) -> str:
        if not (ZONE.match(value) or REGION.match(value)):
            raise ValueError("must be a zone (us-east5-b) or a region (us-east5)")
        return value

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            catalog.parse_gke_version(value)
        return value

    @field_validator("rbac_security_group")
    @classmethod
    def _group(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not value.startswith("gke-security-groups@"):
            raise ValueError("Google Groups for RBAC needs the group gke-security-groups@<your domain>")
        return value

    @property
    def zonal(self) -> bool:
        return bool(ZONE.match(self.location))

    @property
    def region(self) -> str:
        return self.location.rsplit("-", 1)[0] if self.zonal else self.location


# --- storage -------------------------------------------------------------------------------------------------------


class StorageConfig(Model):
    """The GCS bucket for checkpoints, datasets and the XLA compilation cache."""

    enabled: StrictBool = True
    bucket_name: Optional[str] = None
    location: Optional[str] = None
    versioning: StrictBool = True
    access_log_bucket: Optional[str] = None
    force_destroy: StrictBool = False

    @field_validator("bucket_name", "access_log_bucket")
    @classmethod
    def _bucket(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not re.match(r"^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", value):
            raise ValueError("must be a bucket name: 3-63 lowercase letters, digits, '-', '_' and '.'")
        return value


# --- TPU slices ----------------------------------------------------------------------------------------------------

Capacity = Literal["onDemand", "spot", "reservation", "flexStart"]


class SliceAutoscaling(Model):
    """Node autoscaling of each slice's pool: a multi-host pool scales atomically between 0 and all its hosts."""

    enabled: StrictBool = True
    min_nodes: NonNegativeInt = 0


class TpuSliceConfig(Model):
    name: SliceName
    generation: Literal["v4", "v5e", "v5p", "v6e", "tpu7x"]
    topology: str
    machine_type: Optional[str] = None
    count: PositiveInt = 1
    capacity: Capacity = "onDemand"
    reservation: Optional[str] = None
    zone: Optional[str] = None
    autoscaling: Optional[SliceAutoscaling] = None

    @field_validator("zone")
    @classmethod
    def _zone(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not ZONE.match(value):
            raise ValueError("must be a zone such as us-east5-b")
        return value

    @field_validator("reservation")
    @classmethod
    def _reservation(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not (DNS_LABEL.match(value) or SHARED_RESERVATION.match(value)):
            raise ValueError("must be a reservation name, or projects/<project>/reservations/<name> when shared")
        return value

    @property
    def shape(self) -> catalog.SliceShape:
        return catalog.resolve(self.generation, self.topology, self.machine_type)

    @property
    def autoscaled(self) -> bool:
        return self.autoscaling is not None and self.autoscaling.enabled


# --- Ray objects ---------------------------------------------------------------------------------------------------


class WorkerGroupConfig(Model):
    name: Name
    slice: str
    replicas: NonNegativeInt = 1
    min_replicas: NonNegativeInt = 0
    max_replicas: Optional[NonNegativeInt] = None

    @property
    def max(self) -> int:
        return self.replicas if self.max_replicas is None else self.max_replicas


class HeadConfig(Model):
    cpu: str = "4"
    memory: str = "16Gi"


class RayAutoscalingConfig(Model):
    enabled: StrictBool = False
    idle_timeout_seconds: NonNegativeInt = 600


class RayObjectConfig(Model):
    """What RayCluster, RayService and RayJob share: the Ray cluster they run."""

    name: Name
    namespace: Namespace = "ray"
    image: str = DEFAULT_RAY_IMAGE
    ray_version: str = DEFAULT_RAY_VERSION
    head: HeadConfig = HeadConfig()
    worker_groups: list[WorkerGroupConfig]
    autoscaling: RayAutoscalingConfig = RayAutoscalingConfig()
    gcs_fuse: StrictBool = True
    wait_for_ready: StrictBool = False


class RayClusterConfig(RayObjectConfig):
    pass


class RayServiceConfig(RayObjectConfig):
    serve_config: dict[str, Any]
    upgrade_strategy: Literal["NewCluster", "None"] = "NewCluster"


class RayJobConfig(RayObjectConfig):
    entrypoint: str = Field(min_length=1)
    runtime_env: Optional[dict[str, Any]] = None
    shutdown_after_job_finishes: StrictBool = True
    ttl_seconds_after_finished: Optional[NonNegativeInt] = None
    active_deadline_seconds: Optional[PositiveInt] = None
    submission_mode: Literal["K8sJobMode", "HTTPMode"] = "K8sJobMode"


# --- the whole stack -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackConfig:
    stack: str
    project: str
    region: str
    environment: str
    labels: dict[str, str]
    cluster: ClusterConfig
    storage: StorageConfig
    tpu_slices: tuple[TpuSliceConfig, ...]
    ray_clusters: tuple[RayClusterConfig, ...]
    ray_services: tuple[RayServiceConfig, ...]
    ray_jobs: tuple[RayJobConfig, ...]
    warnings: tuple[str, ...] = ()

    @property
    def standard(self) -> bool:
        return self.cluster.mode == "standard"

    @property
    def ray_objects(self) -> tuple[RayObjectConfig, ...]:
        return self.ray_clusters + self.ray_services + self.ray_jobs

    @property
    def namespaces(self) -> list[str]:
        """The Kubernetes namespaces the Ray objects live in, each created once."""
        return sorted({obj.namespace for obj in self.ray_objects})

    @functools.cached_property
    def _slices_by_name(self) -> dict[str, TpuSliceConfig]:
        return {s.name: s for s in self.tpu_slices}

    def slice(self, name: str) -> TpuSliceConfig:
        return self._slices_by_name[name]

    @property
    def bucket_name(self) -> Optional[str]:
        if not self.storage.enabled:
            return None
        return self.storage.bucket_name or f"{self.project}-{self.cluster.name}-ray"[:63]

    def slice_zone(self, tpu_slice: TpuSliceConfig) -> Optional[str]:
        return tpu_slice.zone or (self.cluster.location if self.cluster.zonal else None)

    @property
    def gke_version(self) -> str:
        """The control plane's minimum version: as configured, or the oldest that runs every generation used."""
        return self.cluster.min_master_version or max(
            (_needed_gke_version(s, self.cluster) for s in self.tpu_slices),
            key=catalog.parse_gke_version, default=catalog.RAY_OPERATOR_MIN_GKE_VERSION)


# Keys of the `ray-tpu-gke:` namespace, with the model (or scalar type) of each.
_LIST_KEYS = {
    "tpuSlices": TpuSliceConfig,
    "rayClusters": RayClusterConfig,
    "rayServices": RayServiceConfig,
    "rayJobs": RayJobConfig,
}
_OBJECT_KEYS = {"cluster": ClusterConfig, "storage": StorageConfig}
_STRING_KEYS = ("environment", "team", "costCenter")
PROJECT_KEYS = (*_OBJECT_KEYS, *_LIST_KEYS, *_STRING_KEYS)
STRING_CONFIG_KEYS = {f"{PROJECT}:{k}" for k in _STRING_KEYS} | {"gcp:project", "gcp:region", "gcp:zone"}


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid stack configuration:\n" + "\n".join(f"  {p}" for p in problems))


def decode_config_value(key: str, value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON text; plain string keys stay text."""
    if key in STRING_CONFIG_KEYS or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def show(value: Any) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_stack_config(values: dict[str, Any], stack: str) -> StackConfig:
    """Validate a decoded config map; raises ConfigError with every problem found."""
    problems: list[Problem] = []
    key = lambda name: f"{PROJECT}:{name}"  # noqa: E731

    for full_key, value in sorted(values.items()):
        namespace, _, name = full_key.partition(":")
        if namespace == PROJECT and name not in PROJECT_KEYS:
            problems.append(
                Problem(full_key, f"unknown key (given {show(value)}); allowed: {', '.join(key(k) for k in PROJECT_KEYS)}")
            )

    project = values.get("gcp:project")
    if not isinstance(project, str) or not re.match(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", project):
        problems.append(Problem("gcp:project", f"required: the Google Cloud project ID (given {show(project)})"))

    def parse_one(model, value, path):
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            problems.extend(_problems(exc, path, model))
            return None

    cluster_raw = values.get(key("cluster"))
    cluster = None
    if cluster_raw is None:
        problems.append(Problem(key("cluster"), "required: the GKE cluster (name, location, ...)"))
    else:
        cluster = parse_one(ClusterConfig, cluster_raw, key("cluster"))
    storage = parse_one(StorageConfig, values.get(key("storage"), {}), key("storage"))

    lists: dict[str, list] = {}
    # Slices named in config but invalid: references to them are not reported again.
    unresolved: set = set()
    for name, model in _LIST_KEYS.items():
        raw = values.get(key(name), [])
        if not isinstance(raw, list):
            problems.append(Problem(key(name), f"must be a list (given {show(raw)})"))
            if name == "tpuSlices":
                unresolved.add(ANY_SLICE)
            raw = []
        lists[name] = [parse_one(model, item, f"{key(name)}[{i}]") for i, item in enumerate(raw)]
        if name == "tpuSlices":
            unresolved |= {item.get("name") for item, parsed in zip(raw, lists[name])
                           if parsed is None and isinstance(item, dict)}
            shapes = [_slice_shape(item, f"{key(name)}[{i}]", problems) for i, item in enumerate(raw)]

    labels = {}
    environment = values.get(key("environment"), stack)
    for name, label, value in (("environment", "environment", environment),
                               ("team", "team", values.get(key("team"), "")),
                               ("costCenter", "cost-center", values.get(key("costCenter"), ""))):
        if not isinstance(value, str) or not GCP_LABEL_VALUE.match(value):
            problems.append(Problem(key(name), f"{show(value)} is not a label value: at most 63 lowercase letters, "
                                               "digits, '-' and '_'"))
        elif value:
            labels[label] = value

    warnings: list[str] = []
    problems += _check_slices(cluster, lists["tpuSlices"], shapes, warnings)
    problems += _check_ray_objects(cluster, lists, unresolved)
    region = values.get("gcp:region") or (cluster.region if cluster else None)
    if cluster is not None and region != cluster.region:
        problems.append(Problem(f"{key('cluster')}.location",
                                f"{show(cluster.location)} is outside gcp:region {show(region)}"))
    if problems:
        raise ConfigError(problems)
    return StackConfig(
        stack=stack,
        project=project,
        region=region,
        environment=environment,
        labels=labels,
        cluster=cluster,
        storage=storage,
        tpu_slices=tuple(lists["tpuSlices"]),
        ray_clusters=tuple(lists["rayClusters"]),
        ray_services=tuple(lists["rayServices"]),
        ray_jobs=tuple(lists["rayJobs"]),
        warnings=tuple(warnings),
    )


def _needed_gke_version(tpu_slice: TpuSliceConfig, cluster: ClusterConfig) -> str:
    autopilot = cluster.mode == "autopilot"
    return catalog.minimum_gke_version([tpu_slice.generation], autopilot=autopilot,
                                       compute_class=autopilot and tpu_slice.capacity == "flexStart")


def _slice_shape(item: Any, path: str, problems: list[Problem]) -> Optional[catalog.SliceShape]:
    """Check a slice's shape against the catalogue from the raw entry, so it is judged even if other keys are bad."""
    if not isinstance(item, dict):
        return None
    generation, topology, machine_type = item.get("generation"), item.get("topology"), item.get("machineType")
    if generation not in catalog.GENERATIONS or not isinstance(topology, str):
        return None  # the field error itself is reported by the model
    try:
        catalog.resolve(generation, topology)
    except catalog.CatalogError as exc:
        problems.append(Problem(f"{path}.topology", f"{show(topology)} is {exc}"))
        return None
    if machine_type is not None and not isinstance(machine_type, str):
        return None
    try:
        return catalog.resolve(generation, topology, machine_type)
    except catalog.CatalogError as exc:
        problems.append(Problem(f"{path}.machineType", f"{show(machine_type)} is {exc}"))
        return None


def _check_slices(cluster: Optional[ClusterConfig], slices: list, shapes: list, warnings: list[str]) -> list[Problem]:
    problems = []
    seen = set()
    for i, (s, shape) in enumerate(zip(slices, shapes)):
        if s is None:
            continue
        path = f"{PROJECT}:tpuSlices[{i}]"
        if s.name in seen:
            problems.append(Problem(f"{path}.name", f"{show(s.name)} is used by an earlier slice; names are unique"))
        seen.add(s.name)
        if s.capacity == "reservation" and s.reservation is None:
            problems.append(Problem(f"{path}.reservation", "required when capacity is reservation: the reservation "
                                                           "name, or projects/<project>/reservations/<name>"))
        if s.capacity != "reservation" and s.reservation is not None:
            problems.append(Problem(f"{path}.reservation", f"{show(s.reservation)} is only allowed with capacity "
                                                           f"reservation (capacity is {show(s.capacity)})"))
        if cluster is None:
            continue  # the rest depends on the cluster, whose own problems are reported
        if s.zone is not None and s.zone.rsplit("-", 1)[0] != cluster.region:
            problems.append(Problem(f"{path}.zone", f"{show(s.zone)} is outside the cluster's region "
                                                    f"{show(cluster.region)}"))
        elif s.zone is not None and cluster.zonal and s.zone != cluster.location:
            problems.append(Problem(f"{path}.zone", f"{show(s.zone)} differs from the zonal cluster's location "
                                                    f"{show(cluster.location)}; a zonal cluster's pools are in its zone"))
        if s.zone is None and not cluster.zonal and cluster.mode == "standard":
            problems.append(Problem(f"{path}.zone", f"required for a regional cluster: a zone of {cluster.region} "
                                                    "that offers the generation"))
        if cluster.mode == "autopilot" and s.autoscaling is not None:
            problems.append(Problem(f"{path}.autoscaling", "Autopilot has no node pools to autoscale; remove the key"))
        if cluster.mode == "standard":
            if s.capacity == "flexStart" and not s.autoscaled:
                problems.append(Problem(f"{path}.autoscaling", "flexStart capacity needs autoscaling enabled: "
                                                               "flex-start nodes are created on demand from zero"))
            if shape is not None and s.autoscaled:
                low = s.autoscaling.min_nodes
                if shape.multi_host and low not in (0, shape.hosts):
                    problems.append(Problem(f"{path}.autoscaling.minNodes",
                                            f"{low} would split a {shape.hosts}-host slice; a multi-host pool scales "
                                            f"atomically: 0 or {shape.hosts}"))
                elif low > shape.hosts:
                    problems.append(Problem(f"{path}.autoscaling.minNodes",
                                            f"{low} exceeds the slice's {shape.hosts} host(s); allowed: 0 to "
                                            f"{shape.hosts}"))
        if shape is not None:
            needed = _needed_gke_version(s, cluster)
            configured = cluster.min_master_version
            if configured and catalog.parse_gke_version(configured) < catalog.parse_gke_version(needed):
                problems.append(Problem(
                    f"{PROJECT}:cluster.minMasterVersion",
                    f"{show(configured)} is older than {s.generation} (tpuSlices[{i}]) and the Ray Operator add-on "
                    f"need in {cluster.mode} mode; allowed: {needed} or later"))
            zone = s.zone or (cluster.location if cluster.zonal else None)
            offered = catalog.ZONES.get(s.generation, ())
            if zone and zone not in offered:
                warnings.append(f"{path}.zone: {zone} is not known to offer TPU {s.generation} (known: "
                                f"{', '.join(offered)}); check your quota and the Cloud TPU regions page")
    return problems


ANY_SLICE = object()  # marks tpuSlices as unreadable as a whole


def _check_ray_objects(cluster: Optional[ClusterConfig], lists: dict[str, list], unresolved: set) -> list[Problem]:
    problems = []
    slices = {s.name: s for s in lists["tpuSlices"] if s is not None}
    demand: dict[str, int] = defaultdict(int)
    for kind in ("rayClusters", "rayServices", "rayJobs"):
        names = set()
        for i, obj in enumerate(lists[kind]):
            if obj is None:
                continue
            path = f"{PROJECT}:{kind}[{i}]"
            if (obj.namespace, obj.name) in names:
                problems.append(Problem(f"{path}.name", f"{show(obj.name)} is used twice in namespace "
                                                        f"{show(obj.namespace)}"))
            names.add((obj.namespace, obj.name))
            if isinstance(obj, RayJobConfig) and obj.ttl_seconds_after_finished is not None \
                    and not obj.shutdown_after_job_finishes:
                problems.append(Problem(f"{path}.ttlSecondsAfterFinished",
                                        f"{obj.ttl_seconds_after_finished} is only allowed with "
                                        "shutdownAfterJobFinishes: true"))
            if not obj.worker_groups:
                problems.append(Problem(f"{path}.workerGroups", "at least one TPU worker group is required"))
            groups = set()
            for j, group in enumerate(obj.worker_groups):
                gpath = f"{path}.workerGroups[{j}]"
                if group.name in groups:
                    problems.append(Problem(f"{gpath}.name", f"{show(group.name)} is used twice in {obj.name}"))
                groups.add(group.name)
                if group.slice not in slices and group.slice not in unresolved and ANY_SLICE not in unresolved:
                    allowed = ", ".join(sorted(slices)) or "none defined"
                    problems.append(Problem(f"{gpath}.slice", f"{show(group.slice)} is not a tpuSlices name; "
                                                              f"allowed: {allowed}"))
                if group.min_replicas > group.replicas:
                    problems.append(Problem(f"{gpath}.minReplicas", f"{group.min_replicas} exceeds replicas "
                                                                    f"{group.replicas}"))
                if group.replicas > group.max:
                    problems.append(Problem(f"{gpath}.maxReplicas", f"{group.max} is below replicas {group.replicas}"))
                if group.slice in slices:
                    demand[group.slice] += group.replicas
    if cluster is not None and cluster.mode == "standard":
        for i, s in enumerate(lists["tpuSlices"]):
            if s is not None and demand.get(s.name, 0) > s.count:
                problems.append(Problem(
                    f"{PROJECT}:tpuSlices[{i}].count",
                    f"{s.count} slice(s) of {s.name} are provisioned but the Ray objects ask for "
                    f"{demand[s.name]} at once (sum of worker group replicas); allowed: at least {demand[s.name]}"))
    return problems


# --- turning pydantic's errors into one line per problem -----------------------------------------------------------


def _problems(exc: ValidationError, base: str, model: type[BaseModel]) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        path = base + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        kind = error["type"]
        given = show(error.get("input"))
        if kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            message = f"unknown key (given {given}); allowed: {', '.join(allowed)}"
        else:
            reason = error["msg"].removeprefix("Value error, ")
            message = f"{given} is invalid: {reason[0].lower()}{reason[1:]}"
        problems.append(Problem(path, message))
    return problems


def _allowed_keys(model: Any, loc: tuple) -> list[str]:
    """The camelCase keys of the model found by walking `loc` from `model`."""
    current = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            current = typing.get_args(current)[0] if typing.get_args(current) else Any
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = field.annotation if field else Any
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Optional[X] -> X."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation
