"""The front end of SliceMonitoring's arguments: SliceMonitoringArgs validated with the models and the rules a stack
file's slices meet, in snake_case, before the component builds its dashboards and alert policies (which check what
only the built pages know: resources/monitoring.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from pydantic import ValidationError

from .. import admission, catalog
from . import cross_section
from .args import SliceMonitoringArgs
from .component_args import Validated
from .models import GpuPoolConfig, MonitoringConfig, TpuSliceConfig, validate_as
from .paths import ClusterContext, EntryPaths
from .problems import ConfigError, Problem, show, validation_problems


@dataclass(frozen=True)
class MonitoredEntry:
    """A slice entry or GPU pool to observe: its index in the arguments, the entry, its node pools (none in Autopilot)
    and the Ray worker groups on it."""

    index: int
    entry: Union[TpuSliceConfig, GpuPoolConfig]
    pools: tuple[str, ...]
    worker_groups: tuple[str, ...]

    @property
    def tpu_slice(self) -> TpuSliceConfig:
        """The entry of one of `MonitoringRequest.slices`."""
        if not isinstance(self.entry, TpuSliceConfig):
            raise TypeError(f"entry {self.index} is a GPU pool, not a TPU slice")
        return self.entry

    @property
    def gpu_pool(self) -> GpuPoolConfig:
        """The entry of one of `MonitoringRequest.gpu_pools`."""
        if not isinstance(self.entry, GpuPoolConfig):
            raise TypeError(f"entry {self.index} is a TPU slice, not a GPU pool")
        return self.entry


@dataclass(frozen=True)
class MonitoringRequest:
    """SliceMonitoringArgs, validated."""

    project: str
    cluster: str
    environment: str
    mode: str
    monitoring: MonitoringConfig
    ray_metrics: bool
    slice_health: bool
    labels: dict[str, str]
    ray_namespaces: tuple[str, ...]
    ray_kinds: tuple[str, ...]
    slices: tuple[MonitoredEntry, ...]
    gpu_pools: tuple[MonitoredEntry, ...]


PROJECT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")


def validate_monitoring_args(args: Any, name: str) -> MonitoringRequest:
    """The validated SliceMonitoringArgs; ConfigError names every bad argument. The slices of `Validated` arguments
    (RayTpuPlatform's) were checked with the whole stack and are not checked again."""
    root = f"SliceMonitoring({name}).args"
    if not isinstance(args, dict):
        raise ConfigError([Problem(root, f"must be SliceMonitoringArgs, a mapping (given {show(args)})")])
    problems = [
        Problem(
            f"{root}.{key}",
            f"unknown argument (given {show(value)}); allowed: {', '.join(SliceMonitoringArgs.__annotations__)}",
        )
        for key, value in args.items()
        if key not in SliceMonitoringArgs.__annotations__
    ]
    project, cluster = args.get("project"), args.get("cluster")
    if not (isinstance(project, str) and PROJECT_ID.fullmatch(project)):
        problems.append(Problem(f"{root}.project", f"required: the Google Cloud project ID (given {show(project)})"))
    try:
        if not isinstance(cluster, str):
            raise TypeError("must be a string")
        admission.check_dns_label(cluster, 40)
    except (TypeError, ValueError) as error:
        problems.append(
            Problem(f"{root}.cluster", f"required: the cluster's name as a string (given {show(cluster)}): {error}")
        )
    environment = args.get("environment", cluster if isinstance(cluster, str) else "")
    try:
        admission.check_gcp_label_value(environment)
    except (TypeError, ValueError) as error:
        problems.append(Problem(f"{root}.environment", f"{show(environment)} is invalid: {error}"))
    mode = args.get("mode", "standard")
    if mode not in ("standard", "autopilot"):
        problems.append(Problem(f"{root}.mode", f"{show(mode)} is invalid; allowed: standard, autopilot"))
    ray_metrics, slice_health = args.get("ray_metrics", False), args.get("slice_health", False)
    for key, value in (("ray_metrics", ray_metrics), ("slice_health", slice_health)):
        if not isinstance(value, bool):
            problems.append(Problem(f"{root}.{key}", f"must be true or false (given {show(value)})"))
    labels = args.get("labels") or {}
    if not isinstance(labels, dict):
        problems.append(Problem(f"{root}.labels", f"must be a mapping of label keys to values (given {show(labels)})"))
        labels = {}
    for key, value in labels.items():
        try:
            if not (isinstance(key, str) and re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", key)):
                raise ValueError("a key is 1-63 lowercase letters, digits, - and _, starting with a letter")
            admission.check_gcp_label_value(value)
        except (TypeError, ValueError) as error:
            problems.append(Problem(f"{root}.labels.{key}", f"{show(value)} is invalid: {error}"))

    monitoring = None
    try:
        monitoring = validate_as(MonitoringConfig, args.get("monitoring") or {}, "args")
    except ValidationError as exc:
        problems += validation_problems(exc, f"{root}.monitoring", MonitoringConfig, "args")

    namespaces, kinds = args.get("ray_namespaces") or [], args.get("ray_kinds") or []
    for i, namespace in enumerate(namespaces if isinstance(namespaces, list) else [namespaces]):
        try:
            admission.check_namespace(namespace)
        except (TypeError, ValueError) as error:
            problems.append(Problem(f"{root}.ray_namespaces[{i}]", f"{show(namespace)} is invalid: {error}"))
    if not (isinstance(kinds, list) and set(kinds) <= {"RayCluster", "RayService", "RayJob"}):
        problems.append(
            Problem(f"{root}.ray_kinds", f"must be a list of RayCluster, RayService, RayJob (given {show(kinds)})")
        )
    pools: dict[str, str] = {}  # node pool name -> the entry that names it, across slices and GPU pools
    checked = isinstance(args, Validated)
    slices = _targets(args, "slices", root, mode, problems, pools, checked)
    gpu_pools = _targets(args, "gpu_pools", root, mode, problems, pools, checked)
    if problems:
        raise ConfigError(problems)
    # With no problem the project, the cluster and the monitoring settings are known (a bad one is a problem above).
    assert isinstance(project, str) and isinstance(cluster, str) and monitoring is not None
    return MonitoringRequest(
        project=project,
        cluster=cluster,
        environment=environment,
        mode=mode,
        monitoring=monitoring,
        ray_metrics=ray_metrics,
        slice_health=slice_health is True,
        labels=dict(labels),
        ray_namespaces=tuple(sorted(set(namespaces))),
        ray_kinds=tuple(sorted(set(kinds))),
        slices=tuple(slices),
        gpu_pools=tuple(gpu_pools),
    )


def _targets(
    args: dict, section: str, root: str, mode: str, problems: list[Problem], seen_pools: dict[str, str], checked: bool
) -> list[MonitoredEntry]:
    """The validated slice or GPU pool entries of one section, with their index; problems appended."""
    raw = args.get(section) or []
    if not isinstance(raw, list):
        problems.append(Problem(f"{root}.{section}", f"must be a list (given {show(raw)})"))
        return []
    gpu = section == "gpu_pools"
    key = "pool" if gpu else "slice"
    model: type[GpuPoolConfig] | type[TpuSliceConfig] = GpuPoolConfig if gpu else TpuSliceConfig
    out: list[MonitoredEntry] = []
    seen_names: dict[str, int] = {}
    for index, item in enumerate(raw):
        path = f"{root}.{section}[{index}]"
        if not isinstance(item, dict):
            problems.append(Problem(path, f"must be a mapping with `{key}` (given {show(item)})"))
            continue
        unknown = [k for k in item if k not in ("pool" if gpu else "slice", "pools", "worker_groups")]
        problems += [
            Problem(f"{path}.{k}", f"unknown argument (given {show(item[k])}); allowed: {key}, pools, worker_groups")
            for k in unknown
        ]
        entry: Optional[TpuSliceConfig | GpuPoolConfig] = None
        if item.get(key) is None:
            problems.append(Problem(f"{path}.{key}", "required argument is missing"))
        else:
            try:
                entry = (
                    validate_as(GpuPoolConfig, item[key], "args")
                    if gpu
                    else validate_as(TpuSliceConfig, item[key], "args")
                )
            except ValidationError as exc:
                problems += validation_problems(exc, f"{path}.{key}", model, "args")
            if not checked:
                entry = _checked_entry(entry, item[key], path, key, mode, problems)
        if entry is not None:
            if entry.name in seen_names:
                problems.append(
                    Problem(
                        f"{path}.{key}.name", f"{show(entry.name)} is also {root}.{section}[{seen_names[entry.name]}]"
                    )
                )
            seen_names.setdefault(entry.name, index)
        pools = item.get("pools")
        if mode == "autopilot" and pools:
            problems.append(
                Problem(
                    f"{path}.pools", f"Autopilot names its node pools itself: leave pools out (given {show(pools)})"
                )
            )
        elif mode == "standard":
            if not isinstance(pools, list) or not pools:
                problems.append(
                    Problem(
                        f"{path}.pools", f"required in Standard mode: the entry's node pool names (given {show(pools)})"
                    )
                )
                pools = None
            else:
                for i, pool in enumerate(pools):
                    try:
                        admission.check_dns_label(pool, 40)
                    except (TypeError, ValueError) as error:
                        problems.append(Problem(f"{path}.pools[{i}]", f"{show(pool)} is invalid: {error}"))
                        pools = None
                        break
                    if pool in seen_pools:
                        problems.append(
                            Problem(f"{path}.pools[{i}]", f"{show(pool)} is also a pool of {root}.{seen_pools[pool]}")
                        )
                    seen_pools.setdefault(pool, f"{section}[{index}]")
                if pools is not None and entry is not None and not gpu and len(pools) != entry.count:
                    problems.append(
                        Problem(
                            f"{path}.pools",
                            f"{len(pools)} pool(s) for a count of {entry.count}: one node pool per slice",
                        )
                    )
        groups = item.get("worker_groups") or []
        if not (isinstance(groups, list) and all(isinstance(g, str) and g for g in groups)):
            problems.append(
                Problem(f"{path}.worker_groups", f"must be a list of worker group names (given {show(groups)})")
            )
            groups = []
        if entry is None or (mode == "standard" and pools is None):
            continue
        out.append(MonitoredEntry(index, entry, tuple(pools or ()), tuple(dict.fromkeys(groups))))
    if section == "gpu_pools":
        names = {t.entry.name for t in out}
        for index, target in _slices_seen(args):
            if target in names:
                problems.append(
                    Problem(
                        f"{root}.gpu_pools",
                        f"GPU pool {show(target)} has the name of {root}.slices[{index}]: names must differ",
                    )
                )
    return out


def _checked_entry(entry: Any, raw: Any, path: str, key: str, mode: str, problems: list[Problem]) -> Any:
    """The entry when the rules across its fields hold (a topology of its generation, a reservation with capacity
    reservation, ...: the same checks as a stack file's), else None with the problems appended."""
    if isinstance(entry, TpuSliceConfig):
        found = cross_section.check_slices(
            ClusterContext(mode, None),
            [raw if isinstance(raw, dict) else entry.model_dump()],
            [entry],
            EntryPaths("args", path, renames=(("tpu_slices", "slice"),)),
            [],
        )
        problems += found
        return None if found else entry
    if entry is not None:  # a GPU pool: its machine type must carry its accelerator
        try:
            entry.machine
        except catalog.CatalogError as error:
            problems.append(Problem(f"{path}.{key}.machine_type", f"{show(entry.machine_type)} is invalid: {error}"))
            return None
    return entry


def _slices_seen(args: dict) -> list[tuple[int, str]]:
    out = []
    for index, item in enumerate(args.get("slices") or []):
        entry = item.get("slice") if isinstance(item, dict) else None
        name = entry.get("name") if isinstance(entry, dict) else getattr(entry, "name", None)
        if isinstance(name, str):
            out.append((index, name))
    return out
