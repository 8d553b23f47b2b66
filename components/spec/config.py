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
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from .. import admission
from .models import (
    ClusterConfig,
    CpuPoolConfig,
    GpuPoolConfig,
    MonitoringConfig,
    PricingConfig,
    StorageConfig,
    TpuSliceConfig,
    validate_as,
)
from .partial import validate_partial
from .paths import CONFIG_NAMESPACES, PROJECT, RAY_KINDS, SECTIONS, Paths, _cluster_context
from .problems import ConfigError, Problem, did_you_mean, show, validation_problems
from .provider import GCP_PROVIDER_KEYS, GCP_PROVIDER_SETTINGS
from .ray_models import RayClusterConfig, RayJobConfig, RayObjectConfig, RayServiceConfig

_MODELS = {
    "cluster": ClusterConfig,
    "storage": StorageConfig,
    "pricing": PricingConfig,
    "monitoring": MonitoringConfig,
    "tpu_slices": TpuSliceConfig,
    "gpu_pools": GpuPoolConfig,
    "cpu_pools": CpuPoolConfig,
    "ray_clusters": RayClusterConfig,
    "ray_services": RayServiceConfig,
    "ray_jobs": RayJobConfig,
}


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
        return {
            "slice": self.slices_by_name,
            "gpu_pool": {p.name: p for p in self.gpu_pools},
            "cpu_pool": {p.name: p for p in self.cpu_pools},
        }

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
        needs += [
            n
            for p in self.gpu_pools
            for n in admission.gpu_version_needs(p.accelerator, p.capacity, autopilot, p.machine.gpus)
        ]
        return admission.newest(needs)

    def quota_needs(self) -> list[admission.QuotaNeed]:
        """The accelerator quota each slice entry and GPU pool draws on at its largest, per region."""
        needs = [
            admission.tpu_quota_need(
                s.generation,
                s.capacity,
                s.shape.chips * s.count,
                self.region,
                f"{s.name}: {s.count} x {s.shape.chips} chips",
            )
            for s in self.tpu_slices
        ]
        needs += [
            admission.gpu_quota_need(
                p.accelerator,
                p.capacity,
                p.machine.gpus * p.max_nodes,
                self.region,
                f"{p.name}: {p.max_nodes} x {p.machine.gpus} GPUs",
            )
            for p in self.gpu_pools
        ]
        return [need for need in needs if need is not None]

    def to_args(self) -> dict[str, Any]:
        """The platform arguments (snake_case) this configuration was read from."""
        dump = lambda m: m.model_dump(exclude_defaults=True)  # noqa: E731
        return {
            "project": self.project,
            "region": self.region,
            "environment": self.environment,
            "team": self.labels.get("team", ""),
            "cost_center": self.labels.get("cost-center", ""),
            "cluster": dump(self.cluster),
            "storage": dump(self.storage),
            "pricing": dump(self.pricing),
            "monitoring": dump(self.monitoring),
            "tpu_slices": [dump(s) for s in self.tpu_slices],
            "gpu_pools": [dump(p) for p in self.gpu_pools],
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
            meant = did_you_mean(full_key, [f"{PROJECT}:{k}" for k in PROJECT_KEYS])
            problems.append(Problem(full_key, f"unknown key{meant} (given {show(value)}); allowed: {allowed}"))
        elif namespace not in CONFIG_NAMESPACES or not re.fullmatch(r"[a-z][A-Za-z0-9]*", name):
            problems.append(
                Problem(
                    full_key,
                    f"unknown key (given {show(value)}); keys are "
                    f"<namespace>:<name> with namespace {', '.join(CONFIG_NAMESPACES)}",
                )
            )
        elif namespace == "gcp" and name not in GCP_PROVIDER_KEYS:
            problems.append(Problem(full_key, _not_a_provider_setting(name, value)))
    sections = {section: values[key] for section, key in SECTIONS.items() if key in values}
    return _validate(sections, Paths("stack"), stack, problems)


def _not_a_provider_setting(name: str, value: Any) -> str:
    """A `gcp:` key the provider does not read: a project key in the wrong namespace, or a mistake."""
    if name in PROJECT_KEYS:
        return (
            f"unknown key: no setting of the gcp provider (given {show(value)}), so it would be ignored; "
            f"allowed: {PROJECT}:{name}, this project's key"
        )
    return (
        f"unknown key: no setting of the gcp provider (given {show(value)}); allowed: "
        f"{', '.join(GCP_PROVIDER_SETTINGS)} or <service>CustomEndpoint (pulumi-gcp 10.2.0)"
    )


def validate_platform_args(args: Any, name: str = "platform") -> StackConfig:
    """Validate RayTpuPlatformArgs (a mapping of snake_case keys) exactly as a stack file is validated."""
    paths = Paths("args", f"RayTpuPlatform({name}).args")
    if not isinstance(args, dict):
        raise ConfigError([Problem(paths.root, f"must be RayTpuPlatformArgs, a mapping (given {show(args)})")])
    problems = [
        Problem(
            f"{paths.root}.{key}",
            f"unknown argument{did_you_mean(key, list(SECTIONS))} (given "
            f"{show(value)}); allowed: {', '.join(SECTIONS)}",
        )
        for key, value in args.items()
        if key not in SECTIONS
    ]
    sections = {k: v for k, v in args.items() if k in SECTIONS and v is not None}
    return _validate(sections, paths, args.get("environment") or "platform", problems)


def _validate(sections: dict[str, Any], paths: Paths, stack: str, problems: list[Problem]) -> StackConfig:
    # Every rule runs on whatever validated: an entry with bad keys is checked across sections without them
    # (`validate_partial`), and what those rules say about the keys left out is not repeated (`_overlaps`).
    dropped: list[str] = []
    partials: dict[int, Any] = {}

    def parse(model, value, path):
        try:
            return validate_as(model, value, paths.style)
        except ValidationError as exc:
            found = validation_problems(exc, path, model, paths.style)
            problems.extend(found)
            dropped.extend(p.path for p in found)
            partial = validate_partial(model, value, paths.style, exc)
            if partial is not None:
                partials[id(value)] = partial
            return None

    def checked(value, parsed):
        return parsed if parsed is not None else partials.get(id(value))

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
    # What the rules across sections see: each entry as validated, or what of it validated.
    seen = {
        section: [checked(item, parsed) for item, parsed in zip(raw_lists[section] or [], lists[section])]
        for section in lists
    }
    cluster_seen = checked(cluster_raw, cluster) if cluster_raw is not None else None

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
            problems.append(
                Problem(
                    paths("cluster", "location"),
                    f"{show(context.location)} is outside {paths('region')} {show(region)}",
                )
            )
        region = region or context.region

    warnings: list[str] = []
    from . import cross_section, platform_rules, ray_cross_section

    across = cross_section.check_cluster(cluster_seen, context, paths)
    across += platform_rules.check_storage(
        checked(sections.get("storage", {}), storage), project, cluster_seen, context, paths, warnings
    )
    across += platform_rules.check_pricing(checked(sections.get("pricing", {}), pricing), paths)
    across += cross_section.check_slices(context, raw_lists["tpu_slices"], seen["tpu_slices"], paths, warnings)
    across += cross_section.check_worker_pools(context, seen, paths, warnings)
    across += platform_rules.check_node_pool_count(context, seen, paths, warnings)
    across += ray_cross_section.check_ray_objects(context, raw_lists, seen, paths, warnings)
    across += ray_cross_section.check_heads(cluster_seen, seen, paths)
    problems += [p for p in across if not _overlaps(p.path, dropped)]
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
    # With no problem the project, the region and the cluster are known (each missing one is a problem above).
    assert isinstance(project, str) and isinstance(region, str) and cluster is not None
    return StackConfig(
        stack=stack,
        project=project,
        region=region,
        environment=environment,
        labels=labels,
        cluster=cluster,
        storage=storage,
        tpu_slices=tuple(lists["tpu_slices"]),
        gpu_pools=tuple(lists["gpu_pools"]),
        cpu_pools=tuple(lists["cpu_pools"]),
        ray_clusters=tuple(lists["ray_clusters"]),
        ray_services=tuple(lists["ray_services"]),
        ray_jobs=tuple(lists["ray_jobs"]),
        warnings=tuple(warnings),
        pricing=pricing,
        monitoring=monitoring,
    )


def _overlaps(path: str, dropped: list[str]) -> bool:
    """Whether a rule's problem is about a key already reported (the key, a key under it, or one it holds)."""

    def under(inner: str, outer: str) -> bool:
        return inner == outer or inner.startswith(outer + ".") or inner.startswith(outer + "[")

    # A whole section's problem (a count over all its entries) stands even where one entry lost a key.
    return any(under(path, d) or ("[" in path and under(d, path)) for d in dropped)
