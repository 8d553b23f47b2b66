"""The front ends of the components' own arguments (GkeCluster, TpuSlicePools, WorkerPool, RayCluster, RayService,
RayJob): each validates its `*Args` with the models and the rules across sections a stack file meets, in the
arguments' snake_case spelling, and raises `ConfigError` naming every bad argument before anything is registered.
SliceMonitoring's is `monitoring_args`, RayTpuPlatform's `config.validate_platform_args`.

Arguments that `RayTpuPlatform` hands to the components it builds come as `Validated`: the whole stack was validated
once (`config`), so these front ends return what they hold without validating it again. The components log the
warnings returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from .. import admission
from . import args as typed
from . import cross_section, ray_cross_section
from .models import ClusterConfig, CpuPoolConfig, GpuPoolConfig, TpuSliceConfig, validate_as
from .paths import ClusterContext, EntryPaths, Paths
from .problems import ConfigError, Problem, location_arg, show, validation_problems
from .ray_models import RayObjectConfig


class Validated(dict):
    """Component arguments validated with the whole stack (RayTpuPlatform's): not validated again."""


def validated(args: dict[str, Any]) -> Any:
    """Arguments validated with the whole stack, handed to a component in place of its `...Args`. It reads them as
    they are: models where its TypedDict has mappings, which no TypedDict type spells (hence `Any`)."""
    return Validated(args)


def required_args(args_type: Any) -> tuple[str, ...]:
    """The required keys of a generated `*Args` TypedDict class, in its order (args.py, from the declarations).
    `Any`: the typing module names no type of TypedDict classes."""
    return tuple(key for key in args_type.__annotations__ if key in args_type.__required_keys__)


def component_args(args: Any, root: str, args_type: type) -> list[Problem]:
    """The first checks of a component's arguments: a mapping, with every required argument (ConfigError if it is no
    mapping at all)."""
    if not isinstance(args, dict):
        raise ConfigError([Problem(root, f"must be {args_type.__name__}, a mapping (given {show(args)})")])
    return [
        Problem(f"{root}.{key}", "required argument is missing")
        for key in required_args(args_type)
        if args.get(key) is None
    ]


def validate_cluster_args(args: Any, name: str) -> ClusterConfig:
    """The validated cluster of GkeClusterArgs; ConfigError names every bad argument."""
    if isinstance(args, Validated):
        return args["cluster"]
    root = f"GkeCluster({name}).args"
    problems = component_args(args, root, typed.GkeClusterArgs)
    cluster = None
    if args.get("cluster") is not None:
        try:
            cluster = validate_as(ClusterConfig, args["cluster"], "args")
        except ValidationError as exc:
            problems += validation_problems(exc, f"{root}.cluster", ClusterConfig, "args")
    for i, namespace in enumerate(args.get("namespaces") or []):
        try:
            admission.check_namespace(namespace)
        except (TypeError, ValueError) as error:
            problems.append(Problem(f"{root}.namespaces[{i}]", f"{show(namespace)} is invalid: {error}"))
    if cluster is not None:
        problems += cross_section.check_cluster(
            cluster, ClusterContext(cluster.mode, cluster.location), Paths("args", root)
        )
    if problems:
        raise ConfigError(problems)
    assert cluster is not None  # a missing cluster is a problem above
    return cluster


def validate_pool_args(args: Any, name: str) -> tuple[TpuSliceConfig, list[str]]:
    """The validated slice of TpuSlicePoolsArgs and its warnings; ConfigError names every bad argument."""
    if isinstance(args, Validated):
        return args["slice"], []
    root = f"TpuSlicePools({name}).args"
    paths = EntryPaths("args", root, renames=(("tpu_slices", "slice"),))
    problems = component_args(args, root, typed.TpuSlicePoolsArgs)
    location = location_arg(args, root, problems)
    tpu_slice: Optional[TpuSliceConfig] = None
    warnings: list[str] = []
    if args.get("slice") is not None:
        try:
            tpu_slice = validate_as(TpuSliceConfig, args["slice"], "args")
        except ValidationError as exc:
            problems += validation_problems(exc, f"{root}.slice", TpuSliceConfig, "args")
        if isinstance(args["slice"], dict):
            raw = args["slice"]
        else:  # a TpuSliceConfig passes as it is; anything else failed above and is checked as no entry
            raw = tpu_slice.model_dump() if tpu_slice is not None else {}
        problems += cross_section.check_slices(
            ClusterContext("standard", location), [raw], [tpu_slice], paths, warnings
        )
    if problems:
        raise ConfigError(problems)
    assert tpu_slice is not None  # a missing slice is a problem above
    return tpu_slice, warnings


def validate_worker_pool_args(args: Any, name: str) -> tuple[GpuPoolConfig | CpuPoolConfig, list[str]]:
    """The validated GPU or CPU pool of WorkerPoolArgs and its warnings; ConfigError names every bad argument."""
    if isinstance(args, Validated):
        return args.get("gpu") or args["cpu"], []
    root = f"WorkerPool({name}).args"
    problems = component_args(args, root, typed.WorkerPoolArgs)
    given = [key for key in ("gpu", "cpu") if args.get(key) is not None]
    if len(given) != 1:
        problems.append(Problem(root, f"names {len(given)} of gpu, cpu; allowed: exactly one"))
    location = location_arg(args, root, problems)
    pool: Optional[GpuPoolConfig | CpuPoolConfig] = None
    warnings: list[str] = []
    if len(given) == 1:
        key = given[0]
        model: type[GpuPoolConfig] | type[CpuPoolConfig] = GpuPoolConfig if key == "gpu" else CpuPoolConfig
        try:
            pool = (
                validate_as(GpuPoolConfig, args[key], "args")
                if key == "gpu"
                else validate_as(CpuPoolConfig, args[key], "args")
            )
        except ValidationError as exc:
            problems += validation_problems(exc, f"{root}.{key}", model, "args")
        if pool is not None:
            section = f"{key}_pools"
            lists = {"tpu_slices": [], "gpu_pools": [], "cpu_pools": [], section: [pool]}
            paths = EntryPaths("args", root, renames=(("gpu_pools", "gpu"), ("cpu_pools", "cpu")))
            problems += cross_section.check_worker_pools(ClusterContext("standard", location), lists, paths, warnings)
    if problems:
        raise ConfigError(problems)
    assert pool is not None  # a missing pool is a problem above
    return pool, warnings


_TARGET_MODELS = (
    ("tpu_slices", "slice", TpuSliceConfig),
    ("gpu_pools", "gpu_pool", GpuPoolConfig),
    ("cpu_pools", "cpu_pool", CpuPoolConfig),
)


@dataclass(frozen=True)
class RayArgs:
    """A Ray object's validated arguments: the object, what its groups run on by kind and name, and how they run."""

    obj: RayObjectConfig
    targets: dict[str, dict[str, Any]]
    mode: str
    cluster_name: str


def validate_ray_args(kind: str, model: type[RayObjectConfig], args: Any, name: str) -> RayArgs:
    """The validated Ray object and what its groups run on, from RayClusterArgs (or its RayService/RayJob forms);
    ConfigError names every bad argument."""
    root = f"{kind}({name}).args"
    paths = Paths("args", root)
    problems = component_args(args, root, getattr(typed, f"{kind}Args"))
    mode = args.get("mode", "standard")
    if mode not in ("standard", "autopilot"):
        problems.append(Problem(f"{root}.mode", f"{show(mode)} is invalid: allowed: standard, autopilot"))
    obj = None
    try:
        obj = validate_as(model, args.get("spec"), "args") if args.get("spec") is not None else None
    except ValidationError as exc:
        problems += validation_problems(exc, f"{root}.spec", model, "args")
    lists: dict[str, list] = {"ray_clusters": [], "ray_services": [], "ray_jobs": []}
    for section, _, entry_model in _TARGET_MODELS:
        lists[section] = []
        for i, item in enumerate(args.get(section) or []):
            try:
                lists[section].append(validate_as(entry_model, item, "args"))
            except ValidationError as exc:
                problems += validation_problems(exc, f"{root}.{section}[{i}]", entry_model, "args")
                lists[section].append(None)
    if obj is not None and not problems:
        section = {"RayCluster": "ray_clusters", "RayService": "ray_services", "RayJob": "ray_jobs"}[kind]
        lists[section] = [obj]
        raw = {k: list(v) for k, v in lists.items()}
        problems += [
            Problem(p.path.replace(f"{root}.{section}[0]", f"{root}.spec"), p.message)
            for p in ray_cross_section.check_ray_objects(ClusterContext(mode), raw, lists, paths, [])
        ]
    if problems:
        raise ConfigError(problems)
    assert obj is not None  # a missing or invalid spec is a problem above
    targets = {key: {e.name: e for e in lists[section] if e is not None} for section, key, _ in _TARGET_MODELS}
    cluster_name = args.get("cluster_name") or ""
    if mode == "autopilot" and not cluster_name:
        ironwood = sorted(
            {
                g.slice
                for g in obj.worker_groups
                if g.slice is not None
                and g.slice in targets["slice"]
                and admission.needs_workload_policy(targets["slice"][g.slice].shape)
            }
        )
        if ironwood:
            raise ConfigError(
                [
                    Problem(
                        f"{root}.cluster_name",
                        "required in Autopilot mode for the multi-host Ironwood "
                        f"slices {', '.join(ironwood)}: their pods select the workload policy "
                        "<cluster>-<slice> (ironwood_workload_policy creates it)",
                    )
                ]
            )
    return RayArgs(obj, targets, mode, cluster_name)


def service_account_warning(kind: str, name: str, args: dict, obj: RayObjectConfig) -> Optional[str]:
    """A Ray object whose pods act as no Google service account: what the component warns."""
    if args.get("service_account"):
        return None
    return (
        f"{kind}({name}): its pods run as the Kubernetes service account `default` of namespace {obj.namespace}, "
        "with no Workload Identity: they act as no Google service account; set `service_account` to one "
        "annotated iam.gke.io/gcp-service-account and bound by roles/iam.workloadIdentityUser (RayTpuPlatform's "
        "namespaces have one, `ray`)"
    )
