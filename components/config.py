"""The whole platform's configuration, validated before any resource is registered, from either front end.

Pure (no Pulumi import). `parse_stack_config` reads the decoded config map of a stack (`{"ray-tpu-gke:cluster": {...}}`,
camelCase keys); `validate_platform_args` reads `RayTpuPlatformArgs` (snake_case keys). Both run the same checks and
return a `StackConfig`, or raise `ConfigError` listing every problem at once with its key path, the value given and
what is allowed.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Optional, Union

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from . import admission
from .models import (DEFAULT_RAY_IMAGE, DEFAULT_RAY_VERSION, ClusterConfig, CpuPoolConfig,  # noqa: F401
                     GpuPoolConfig, MonitoringConfig, PricingConfig, RayClusterConfig, RayJobConfig, RayObjectConfig,
                     RayServiceConfig, StorageConfig,
                     TpuSliceConfig, WorkerGroupConfig, validate_as)

PROJECT = "ray-tpu-gke"
# Namespaces a stack file may set keys in: this project's, and the providers' own.
CONFIG_NAMESPACES = (PROJECT, "gcp", "kubernetes", "pulumi")


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))


def show(value: Any) -> str:
    try:
        text = json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- key paths in the spelling of each front end -------------------------------------------------------------------

# Sections of the platform: Python argument name -> stack file key.
SECTIONS = {
    "project": "gcp:project", "region": "gcp:region",
    "environment": f"{PROJECT}:environment", "team": f"{PROJECT}:team", "cost_center": f"{PROJECT}:costCenter",
    "cluster": f"{PROJECT}:cluster", "storage": f"{PROJECT}:storage", "tpu_slices": f"{PROJECT}:tpuSlices",
    "gpu_pools": f"{PROJECT}:gpuPools", "cpu_pools": f"{PROJECT}:cpuPools",
    "ray_clusters": f"{PROJECT}:rayClusters", "ray_services": f"{PROJECT}:rayServices",
    "ray_jobs": f"{PROJECT}:rayJobs",
    "pricing": f"{PROJECT}:pricing", "monitoring": f"{PROJECT}:monitoring",
}
RAY_KINDS = ("ray_clusters", "ray_services", "ray_jobs")
_MODELS = {"cluster": ClusterConfig, "storage": StorageConfig, "pricing": PricingConfig,
           "monitoring": MonitoringConfig, "tpu_slices": TpuSliceConfig, "gpu_pools": GpuPoolConfig,
           "cpu_pools": CpuPoolConfig,
           "ray_clusters": RayClusterConfig, "ray_services": RayServiceConfig, "ray_jobs": RayJobConfig}


@dataclass(frozen=True)
class Paths:
    """How a key path reads: as the stack file spells it (`ray-tpu-gke:tpuSlices[0].minNodes`), or as Python
    arguments do (`RayTpuPlatform(p).args.tpu_slices[0].min_nodes`)."""

    style: str  # "stack" | "args"
    root: str = "args"

    def __call__(self, section: str, *parts: Union[str, int]) -> str:
        path = SECTIONS.get(section, section) if self.style == "stack" else f"{self.root}.{section}"
        for part in parts:
            if isinstance(part, int):
                path += f"[{part}]"
            else:
                path += "." + (to_camel(part) if self.style == "stack" else part)
        return path

    def key(self, name: str) -> str:
        return to_camel(name) if self.style == "stack" else name


# --- the validated platform ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackConfig:
    """Everything a RayTpuPlatform builds, validated."""

    stack: str
    project: str
    region: str
    environment: str
    labels: dict[str, str]
    cluster: ClusterConfig
    storage: StorageConfig
    tpu_slices: tuple[TpuSliceConfig, ...]
    gpu_pools: tuple[GpuPoolConfig, ...]
    cpu_pools: tuple[CpuPoolConfig, ...]
    ray_clusters: tuple[RayClusterConfig, ...]
    ray_services: tuple[RayServiceConfig, ...]
    ray_jobs: tuple[RayJobConfig, ...]
    warnings: tuple[str, ...] = ()
    pricing: PricingConfig = PricingConfig()
    monitoring: MonitoringConfig = MonitoringConfig()

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
    def slices_by_name(self) -> dict[str, TpuSliceConfig]:
        return {s.name: s for s in self.tpu_slices}

    @functools.cached_property
    def targets(self) -> dict[str, dict]:
        """What worker groups may run on, by kind ("slice", "gpu_pool", "cpu_pool") and name."""
        return {"slice": self.slices_by_name, "gpu_pool": {p.name: p for p in self.gpu_pools},
                "cpu_pool": {p.name: p for p in self.cpu_pools}}

    def slice(self, name: str) -> TpuSliceConfig:
        return self.slices_by_name[name]

    @property
    def bucket_name(self) -> Optional[str]:
        if not self.storage.enabled:
            return None
        return self.storage.bucket_name or f"{self.project}-{self.cluster.name}-ray"[:63].rstrip("-.")

    def slice_zone(self, tpu_slice: TpuSliceConfig) -> Optional[str]:
        return tpu_slice.zone or (self.cluster.location if self.cluster.zonal else None)

    @property
    def gke_version(self) -> Optional[str]:
        """The control plane's pinned version, or None: the release channel chooses."""
        return self.cluster.min_master_version

    @property
    def gke_version_need(self) -> admission.VersionNeed:
        """The newest minimum GKE version the stack needs, and why."""
        autopilot = not self.standard
        needs = [admission.VersionNeed(admission.RAY_OPERATOR_MIN_GKE_VERSION, "the Ray Operator add-on")]
        needs += [n for s in self.tpu_slices for n in admission.gke_version_needs(s.generation, s.capacity, autopilot)]
        needs += [n for p in self.gpu_pools for n in admission.gpu_version_needs(p.accelerator, p.capacity, autopilot)]
        return admission.newest(needs)

    def quota_needs(self) -> list[admission.QuotaNeed]:
        """The accelerator quota each slice entry and GPU pool draws on at its largest, per region."""
        needs = [admission.tpu_quota_need(s.generation, s.capacity, s.shape.chips * s.count, self.region,
                                          f"{s.name}: {s.count} x {s.shape.chips} chips") for s in self.tpu_slices]
        needs += [admission.gpu_quota_need(p.accelerator, p.capacity, p.machine.gpus * p.max_nodes, self.region,
                                           f"{p.name}: {p.max_nodes} x {p.machine.gpus} GPUs") for p in self.gpu_pools]
        return [need for need in needs if need is not None]

    def to_args(self) -> dict[str, Any]:
        """The platform arguments (snake_case) this configuration was read from."""
        dump = lambda m: m.model_dump(exclude_defaults=True)  # noqa: E731
        return {
            "project": self.project, "region": self.region, "environment": self.environment,
            "team": self.labels.get("team", ""), "cost_center": self.labels.get("cost-center", ""),
            "cluster": dump(self.cluster), "storage": dump(self.storage), "pricing": dump(self.pricing),
            "monitoring": dump(self.monitoring),
            "tpu_slices": [dump(s) for s in self.tpu_slices], "gpu_pools": [dump(p) for p in self.gpu_pools],
            "cpu_pools": [dump(p) for p in self.cpu_pools],
            **{kind: [dump(o) for o in getattr(self, kind)] for kind in RAY_KINDS},
        }


# --- the two front ends --------------------------------------------------------------------------------------------


def decode_config_value(key: str, value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON text; plain string keys stay text."""
    if key in _STRING_KEYS or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value


_STRING_KEYS = {SECTIONS[k] for k in ("project", "region", "environment", "team", "cost_center")} | {"gcp:zone"}
PROJECT_KEYS = tuple(key.split(":", 1)[1] for key in SECTIONS.values() if key.startswith(f"{PROJECT}:"))


def parse_stack_config(values: dict[str, Any], stack: str) -> StackConfig:
    """Validate a stack's decoded config map; raises ConfigError with every problem found."""
    problems: list[Problem] = []
    known = set(SECTIONS.values())
    for full_key, value in sorted(values.items(), key=lambda kv: str(kv[0])):
        namespace, _, name = str(full_key).partition(":")
        if full_key in known:
            continue
        if namespace == PROJECT:
            allowed = ", ".join(f"{PROJECT}:{k}" for k in PROJECT_KEYS)
            problems.append(Problem(full_key, f"unknown key (given {show(value)}); allowed: {allowed}"))
        elif namespace not in CONFIG_NAMESPACES or not re.fullmatch(r"[a-z][A-Za-z0-9]*", name):
            problems.append(Problem(full_key, f"unknown key (given {show(value)}); keys are "
                                              f"<namespace>:<name> with namespace {', '.join(CONFIG_NAMESPACES)}"))
    sections = {section: values[key] for section, key in SECTIONS.items() if key in values}
    return _validate(sections, Paths("stack"), stack, problems)


def validate_platform_args(args: Any, name: str = "platform") -> StackConfig:
    """Validate RayTpuPlatformArgs (a mapping of snake_case keys) exactly as a stack file is validated."""
    paths = Paths("args", f"RayTpuPlatform({name}).args")
    if not isinstance(args, dict):
        raise ConfigError([Problem(paths.root, f"must be RayTpuPlatformArgs, a mapping (given {show(args)})")])
    problems = [Problem(f"{paths.root}.{key}", f"unknown argument (given {show(value)}); allowed: "
                                                f"{', '.join(SECTIONS)}")
                for key, value in args.items() if key not in SECTIONS]
    sections = {k: v for k, v in args.items() if k in SECTIONS and v is not None}
    return _validate(sections, paths, args.get("environment") or "platform", problems)


def _validate(sections: dict[str, Any], paths: Paths, stack: str, problems: list[Problem]) -> StackConfig:
    def parse(model, value, path):
        try:
            return validate_as(model, value, paths.style)
        except ValidationError as exc:
            problems.extend(_problems(exc, path, model, paths.style))
            return None

    project = sections.get("project")
    if not isinstance(project, str) or not re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", project):
        problems.append(Problem(paths("project"), f"required: the Google Cloud project ID (given {show(project)})"))

    cluster_raw = sections.get("cluster")
    cluster = None
    if cluster_raw is None:
        problems.append(Problem(paths("cluster"), "required: the GKE cluster (name, location, ...)"))
    else:
        cluster = parse(ClusterConfig, cluster_raw, paths("cluster"))
    storage = parse(StorageConfig, sections.get("storage", {}), paths("storage"))
    pricing = parse(PricingConfig, sections.get("pricing", {}), paths("pricing"))
    monitoring = parse(MonitoringConfig, sections.get("monitoring", {}), paths("monitoring"))

    lists: dict[str, list] = {}
    raw_lists: dict[str, list] = {}
    for section in ("tpu_slices", "gpu_pools", "cpu_pools", *RAY_KINDS):
        raw = sections.get(section, [])
        if not isinstance(raw, list):
            problems.append(Problem(paths(section), f"must be a list (given {show(raw)})"))
            raw = None
        raw_lists[section] = raw
        lists[section] = [parse(_MODELS[section], item, paths(section, i)) for i, item in enumerate(raw or [])]

    labels = {}
    environment = sections.get("environment", stack)
    for section, label in (("environment", "environment"), ("team", "team"), ("cost_center", "cost-center")):
        value = environment if section == "environment" else sections.get(section, "")
        try:
            admission.check_gcp_label_value(value)
        except (ValueError, TypeError) as error:
            problems.append(Problem(paths(section), f"{show(value)} is invalid: {error}"))
            continue
        if value:
            labels[label] = value

    region = sections.get("region")
    context = _cluster_context(cluster_raw, cluster, paths.style)
    if "region" in sections and not (isinstance(region, str) and re.fullmatch(r"[a-z]+-[a-z]+[0-9]+", region)):
        problems.append(Problem(paths("region"), f"{show(region)} is invalid: must be a region such as us-east5"))
        region = None
    elif context.location is not None:
        if region is not None and region != context.region:
            problems.append(Problem(paths("cluster", "location"), f"{show(context.location)} is outside "
                                                                   f"{paths('region')} {show(region)}"))
        region = region or context.region

    warnings: list[str] = []
    from . import checks  # the rules across sections; imported here as they need this module's types

    problems += checks.check_cluster(cluster, context, paths)
    problems += checks.check_slices(context, raw_lists["tpu_slices"], lists["tpu_slices"], paths, warnings)
    problems += checks.check_worker_pools(context, lists, paths, warnings)
    problems += checks.check_ray_objects(context, raw_lists, lists, paths, warnings)
    problems += checks.check_heads(cluster, lists, paths)
    if problems:
        raise ConfigError(problems)
    return StackConfig(
        stack=stack, project=project, region=region, environment=environment, labels=labels, cluster=cluster,
        storage=storage, tpu_slices=tuple(lists["tpu_slices"]), gpu_pools=tuple(lists["gpu_pools"]),
        cpu_pools=tuple(lists["cpu_pools"]),
        ray_clusters=tuple(lists["ray_clusters"]), ray_services=tuple(lists["ray_services"]),
        ray_jobs=tuple(lists["ray_jobs"]), warnings=tuple(warnings), pricing=pricing, monitoring=monitoring,
    )


@dataclass(frozen=True)
class ClusterContext:
    """What the rules of other sections need to know of the cluster, each part known where it alone is valid, so a
    bad cluster block does not hide the problems of the slices and Ray objects."""

    mode: Optional[str] = None
    location: Optional[str] = None
    min_master_version: Optional[str] = None

    @property
    def region(self) -> Optional[str]:
        return admission.region_of(self.location) if self.location else None

    @property
    def zonal(self) -> bool:
        return bool(self.location) and admission.is_zone(self.location)


def _cluster_context(raw: Any, cluster: Optional[ClusterConfig], style: str) -> ClusterContext:
    if cluster is not None:
        return ClusterContext(cluster.mode, cluster.location, cluster.min_master_version)
    if not isinstance(raw, dict):
        return ClusterContext()
    fields = ClusterConfig.model_fields

    def part(name):
        key = to_camel(name) if style == "stack" else name
        value = raw.get(key, fields[name].default)
        try:
            return ClusterConfig.__pydantic_validator__.validate_assignment(
                ClusterConfig.model_construct(), name, value).__dict__[name] if value is not None else None
        except (ValidationError, TypeError):
            return None

    return ClusterContext(part("mode"), part("location"), part("min_master_version"))


# --- the arguments of a component used on its own ------------------------------------------------------------------


def component_args(args: Any, root: str, kind: str, required: tuple[str, ...]) -> list[Problem]:
    """The first checks of a component's arguments: a mapping, with every required argument (ConfigError if it is no
    mapping at all)."""
    if not isinstance(args, dict):
        raise ConfigError([Problem(root, f"must be {kind}, a mapping (given {show(args)})")])
    return [Problem(f"{root}.{key}", "required argument is missing") for key in required if args.get(key) is None]


def location_arg(args: dict, root: str, problems: list[Problem]) -> Optional[str]:
    """The `location` argument where it is a zone or a region (else None, with the problem noted)."""
    location = args.get("location")
    try:
        admission.check_location(location)
    except (TypeError, ValueError) as error:
        if location is not None:
            problems.append(Problem(f"{root}.location", f"{show(location)} is invalid: {error}"))
        return None
    return location


# --- turning pydantic's errors into one line per problem -----------------------------------------------------------


def _problems(exc: ValidationError, base: str, model: type[BaseModel], style: str) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        path = base + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        kind = error["type"]
        given = show(error.get("input"))
        if kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1], style)
            message = f"unknown key (given {given}); allowed: {', '.join(allowed)}"
        else:
            reason = error["msg"].removeprefix("Value error, ")
            message = f"{given} is invalid: {reason[0].lower()}{reason[1:]}"
        problems.append(Problem(path, message))
    return problems


def _allowed_keys(model: Any, loc: tuple, style: str) -> list[str]:
    """The keys of the model found by walking `loc` from `model`, in the front end's spelling."""
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
        return [(f.alias or n) if style == "stack" else n for n, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Optional[X] -> X."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    return annotation

