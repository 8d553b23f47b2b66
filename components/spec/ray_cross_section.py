"""Rules across sections for the Ray objects, pure: each worker group's target (a slice or pool that exists),
names unique per namespace, images that fit their accelerator, a RayJob's cluster, the demand of the groups on
their slices and pools, and the heads on the system pool.

Like `cross_section` (the cluster, its slices and pools), each function returns problems (and appends warnings)
with paths in the front end's spelling; the rules themselves, and their sources, are in `admission`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

from pydantic import ValidationError

from .. import admission, catalog
from ..catalog import ray_versions
from . import images, llm_checks, multislice, serve_checks
from .models import ClusterConfig, validate_as
from .paths import ClusterContext, Paths
from .problems import Problem, show
from .ray_models import RayJobConfig, RayServiceConfig, WorkerGroupConfig

# Where a worker group runs: its key, the section of that kind and how the section is spelt in messages.
_TARGETS = (
    ("slice", "tpu_slices", "tpuSlices"),
    ("gpu_pool", "gpu_pools", "gpuPools"),
    ("cpu_pool", "cpu_pools", "cpuPools"),
)


def _known_targets(raw_lists: dict, lists: dict) -> tuple[dict, dict]:
    """(valid entries by kind and name, names that are unknown only because their entry is broken or unreadable)."""
    known, broken = {}, {}
    for key, section, _ in _TARGETS:
        known[key] = {entry.name: entry for entry in lists[section] if entry is not None}
        raw = raw_lists[section]
        broken[key] = (
            None
            if raw is None
            else {
                item.get("name")
                for item, parsed in zip(raw, lists[section])
                if parsed is None and isinstance(item, dict) and isinstance(item.get("name"), str)
            }
        )
    return known, broken


def _check_group(
    group, gpath: str, kind: str, i: int, j: int, known: dict, broken: dict, paths: Paths
) -> list[Problem]:
    """The rules of one worker group on its own: one target that exists, replicas within their bounds."""
    problems = []
    given = [key for key, _, _ in _TARGETS if getattr(group, key) is not None]
    if len(given) != 1:
        keys = ", ".join(paths.key(key) for key, _, _ in _TARGETS)
        problems.append(Problem(gpath, f"names {len(given)} of {keys}; allowed: exactly one (where the group runs)"))
    for key, section, spelt in _TARGETS:
        name = getattr(group, key)
        if name is None or name in known[key] or broken[key] is None or name in broken[key]:
            continue
        allowed = ", ".join(sorted(known[key])) or "none defined"
        problems.append(Problem(f"{gpath}.{paths.key(key)}", f"{show(name)} is not a {spelt} name; allowed: {allowed}"))
    if group.min_replicas > group.replicas:
        problems.append(
            Problem(
                paths(kind, i, "worker_groups", j, "min_replicas"),
                f"{group.min_replicas} exceeds replicas {group.replicas}",
            )
        )
    if group.replicas > group.max:
        problems.append(
            Problem(
                paths(kind, i, "worker_groups", j, "max_replicas"), f"{group.max} is below replicas {group.replicas}"
            )
        )
    return problems


def check_ray_objects(
    context: ClusterContext, raw_lists: dict, lists: dict, paths: Paths, warnings: list[str]
) -> list[Problem]:
    problems: list[Problem] = []
    known, broken = _known_targets(raw_lists, lists)
    # (kind, name) -> [(who, at once, at most)]: slices for TPU groups, pods (= nodes) for GPU and CPU groups.
    demand: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    clusters = {(o.namespace, o.name) for o in lists["ray_clusters"] if o is not None}
    for kind in ("ray_clusters", "ray_services", "ray_jobs"):
        joined: dict[str, str] = {}
        for i, obj in enumerate(lists[kind]):
            if obj is None:  # its own problems are reported; its worker groups are still checked
                problems += _groups_of_broken_object((raw_lists[kind] or [])[i], kind, i, known, broken, paths)
                continue
            path = paths(kind, i)
            resource = f"{obj.namespace}-{obj.name}"
            if resource in joined and obj.intact("namespace", "name"):
                same = joined[resource] == f"{obj.namespace}/{obj.name}"
                problems.append(
                    Problem(
                        f"{path}.name",
                        f"{show(obj.name)} is used twice in namespace {show(obj.namespace)}"
                        if same
                        else f"{obj.namespace}/{obj.name} and {joined[resource]} both become the Pulumi "
                        f"resource {resource}; rename one",
                    )
                )
            joined.setdefault(resource, f"{obj.namespace}/{obj.name}")
            if not getattr(obj, "cluster", None):  # a job on an existing cluster runs in that cluster's Ray
                warnings += _behind_default(obj.ray_version, paths(kind, i, "ray_version"))
            if isinstance(obj, RayJobConfig):
                problems += _check_job(obj, path, paths, clusters)
                if isinstance(obj.runtime_env, dict):  # Ray's runtime env validation (admission.RUNTIME_ENV_VARS)
                    problems += [
                        Problem(f"{path}.{paths.key('runtime_env')}.env_vars{key}", message)
                        for key, message in admission.env_vars_problems(obj.runtime_env.get("env_vars"))
                    ]
            elif not obj.worker_groups:
                problems.append(Problem(paths(kind, i, "worker_groups"), "at least one worker group is required"))
            surge = isinstance(obj, RayServiceConfig) and obj.upgrade_strategy == "NewCluster"
            groups = set()
            for j, group in enumerate(obj.worker_groups):
                gpath = paths(kind, i, "worker_groups", j)
                who = f"{obj.namespace}/{obj.name}" if obj.intact("namespace") else obj.name
                who += f" group {group.name}"
                if group.name in groups:
                    problems.append(Problem(f"{gpath}.name", f"{show(group.name)} is used twice in {obj.name}"))
                groups.add(group.name)
                problems += _check_group(group, gpath, kind, i, j, known, broken, paths)
                if group.replicas == 0 and not obj.autoscaling.enabled and obj.intact("autoscaling"):
                    problems.append(
                        Problem(
                            paths(kind, i, "worker_groups", j, "replicas"),
                            "0 with Ray autoscaling off: the group never gets a pod; allowed: "
                            "replicas of 1 or more, or autoscaling.enabled: true",
                        )
                    )
                if kind == "ray_clusters" and obj.autoscaling.enabled and group.replicas != group.min_replicas:
                    # render/manifests.py autoscaler_owns_replicas: Pulumi leaves the count to Ray's autoscaler.
                    warnings.append(
                        f"{paths(kind, i, 'worker_groups', j, 'replicas')}: {group.replicas} is not applied: "
                        "Ray's autoscaler owns an autoscaled RayCluster's replicas, so the group starts at "
                        f"minReplicas ({group.min_replicas}) and the autoscaler sizes it (docs/operations.md, "
                        f'"What an update does to a scaled cluster"); set replicas to {group.min_replicas} '
                        "(ray-autoscaler-owns-replicas)"
                    )
                target_kind, target = group.target
                wrong_image = images.mismatch(obj.image, target_kind)
                if wrong_image:
                    problems.append(Problem(paths(kind, i, "image"), f"{wrong_image} (group {group.name})"))
                if target not in known[target_kind]:
                    continue
                if target_kind == "slice":
                    tpu_slice = known["slice"][target]
                    accelerator = catalog.generation(tpu_slice.generation).accelerator
                    if obj.autoscaling.enabled and accelerator not in admission.ray_autoscaler_accelerators(
                        obj.ray_version
                    ):
                        problems.append(
                            Problem(
                                paths(kind, i, "autoscaling", "enabled"),
                                f"true, but Ray {obj.ray_version}'s autoscaler cannot map TPU "
                                f"{tpu_slice.generation} ({accelerator}) of group {group.name} and fails; allowed: "
                                "autoscaling off for this Ray object, or a Ray version whose autoscaler knows it "
                                "(tpu7x: rayVersion 2.56.0 or later)",
                            )
                        )
                factor = 2 if surge else 1
                at_most = group.max if obj.autoscaling.enabled else group.replicas
                demand[(target_kind, target)].append(
                    (
                        who + (" (twice: NewCluster upgrades)" if surge else ""),
                        group.replicas * factor,
                        at_most * factor,
                    )
                )
    if context.mode == "standard":
        problems += _check_demand(lists, demand, paths, warnings)
    problems += multislice.check(context, lists, paths, warnings)  # grace periods, start timeouts, multislice
    problems += serve_checks.check_services(lists["ray_services"], known, paths)  # Serve autoscaling on the groups
    problems += llm_checks.check_llm_services(lists["ray_services"], known, paths, warnings)  # LLM services
    return problems


def _behind_default(ray_version: str, where: str) -> list[str]:
    """A Ray object pinned below the default Ray release: what it lacks that the default has (the catalogue's rows,
    ray_versions.RAY_FEATURES, each with the release that brought it)."""
    lacking = ray_versions.ray_lacks(ray_version)
    if not lacking:
        return []
    listed = "; ".join(f"{f.key} ({f.since})" for f in lacking)
    return [
        f"{where}: {ray_version} is older than the default Ray {ray_versions.DEFAULT_RAY_VERSION} and lacks: {listed} "
        "(docs/admission.md, Ray versions)"
    ]


def _groups_of_broken_object(raw: Any, kind: str, i: int, known: dict, broken: dict, paths: Paths) -> list[Problem]:
    """The rules of each worker group alone, for a Ray object that failed validation elsewhere, so one run reports
    every problem."""
    groups = raw.get(paths.key("worker_groups")) if isinstance(raw, dict) else None
    if not isinstance(groups, list):
        return []
    problems, names = [], set()
    for j, item in enumerate(groups):
        try:
            group = validate_as(WorkerGroupConfig, item, paths.style)
        except (ValidationError, TypeError):
            continue  # reported with the object
        gpath = paths(kind, i, "worker_groups", j)
        if group.name in names:
            problems.append(Problem(f"{gpath}.name", f"{show(group.name)} is used twice"))
        names.add(group.name)
        problems += _check_group(group, gpath, kind, i, j, known, broken, paths)
    return problems


def _check_job(job: RayJobConfig, path: str, paths: Paths, clusters: set) -> list[Problem]:
    problems: list[Problem] = []
    if not job.intact("cluster", "worker_groups", "shutdown_after_job_finishes", "suspend", "wait_for_ready"):
        return problems  # which cluster the job runs on is not known
    if job.suspend and job.cluster is not None:
        problems.append(
            Problem(
                f"{path}.{paths.key('suspend')}",
                f"true is not allowed with cluster "
                f"{show(job.cluster)}: an existing RayCluster's job cannot be suspended "
                f"({admission.RAYJOB_SUSPEND_CLUSTER_SELECTOR.id}); allowed: false",
            )
        )
    elif job.suspend and job.wait_for_ready:
        problems.append(
            Problem(
                f"{path}.{paths.key('suspend')}",
                "true is not allowed with waitForReady: true: a "
                "suspended job never runs, and the deploy would wait for it forever "
                f"({admission.RAYJOB_SUSPEND_WAIT.id}); allowed: false, or waitForReady: false",
            )
        )
    elif job.suspend and not job.shutdown_after_job_finishes:
        problems.append(
            Problem(
                f"{path}.{paths.key('suspend')}",
                "true is only allowed with "
                f"shutdownAfterJobFinishes: true ({admission.RAYJOB_SUSPEND_SHUTDOWN.id}); "
                "allowed: false",
            )
        )
    if job.ttl_seconds_after_finished is not None and not job.shutdown_after_job_finishes:
        problems.append(
            Problem(
                f"{path}.{paths.key('ttl_seconds_after_finished')}",
                f"{job.ttl_seconds_after_finished} is only allowed with shutdownAfterJobFinishes: true",
            )
        )
    if job.cluster is not None:
        if job.shutdown_after_job_finishes and "shutdown_after_job_finishes" in job.model_fields_set:
            problems.append(
                Problem(
                    f"{path}.{paths.key('shutdown_after_job_finishes')}",
                    f"true is not allowed with cluster {show(job.cluster)}: the job never deletes a "
                    "RayCluster it did not create; allowed: false",
                )
            )
        if job.worker_groups:
            problems.append(
                Problem(
                    f"{path}.{paths.key('worker_groups')}",
                    f"not allowed with cluster {show(job.cluster)}: the job runs on that RayCluster's workers",
                )
            )
        if (job.namespace, job.cluster) not in clusters:
            allowed = ", ".join(sorted(name for ns, name in clusters if ns == job.namespace)) or "none"
            problems.append(
                Problem(
                    f"{path}.cluster",
                    f"{show(job.cluster)} is not a rayClusters name in namespace "
                    f"{show(job.namespace)}; allowed: {allowed}",
                )
            )
    elif not job.worker_groups:
        problems.append(
            Problem(
                f"{path}.{paths.key('worker_groups')}",
                "at least one TPU worker group is required (or cluster: an existing RayCluster)",
            )
        )
    return problems


def _check_demand(lists: dict, demand: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    """Standard mode: a slice entry provisions `count` pools and a GPU or CPU pool at most its nodes, one Ray pod per
    node; the Ray objects' groups may not ask for more at once."""
    problems = []
    for key, section, _ in _TARGETS:
        for i, entry in enumerate(lists[section]):
            if entry is None or (key, entry.name) not in demand:
                continue
            asks = demand[(key, entry.name)]
            at_once = sum(n for _, n, _ in asks)
            at_most = sum(n for _, _, n in asks)
            who = "; ".join(f"{w}: {n}" for w, n, _ in asks)
            have, what, field = (
                (entry.count, "slice(s)", "count") if key == "slice" else (entry.max_nodes, "node(s)", "count")
            )
            if at_once > have:
                problems.append(
                    Problem(
                        paths(section, i, field),
                        f"{have} {what} of {entry.name}, but the Ray objects ask for {at_once} at once "
                        f"({who}); allowed: at least {at_once}, or fewer replicas",
                    )
                )
            elif at_most > have:
                most = "; ".join(f"{w}: up to {n}" for w, _, n in asks)
                warnings.append(
                    f"{paths(section, i, field)}: {have} {what} of {entry.name}, but Ray autoscaling may "
                    f"ask for {at_most} ({most}); the rest would wait for capacity"
                )
    return problems


def check_heads(cluster: Optional[ClusterConfig], lists: dict, paths: Paths) -> list[Problem]:
    """Standard mode: every Ray head, with its sidecars, fits a node of the system pool it selects."""
    if cluster is None or cluster.mode != "standard" or not cluster.intact("mode", "system_pool"):
        return []
    machine = admission.cpu_machine(cluster.system_pool.machine_type)
    if machine is None:
        return []
    cpu_free, memory_free = admission.allocatable(*machine)
    problems = []
    for kind in ("ray_clusters", "ray_services", "ray_jobs"):
        for i, obj in enumerate(lists[kind]):
            if (
                obj is None
                or (isinstance(obj, RayJobConfig) and obj.cluster is not None)
                or not obj.intact("autoscaling", "gcs_fuse")
            ):
                continue
            cpu = admission.parse_quantity(obj.head.cpu)
            memory = admission.parse_quantity(obj.head.memory) / 2**30
            sidecars = [admission.AUTOSCALER_SIDECAR] if obj.autoscaling.enabled else []
            sidecars += [admission.GCS_FUSE_SIDECAR] if obj.gcs_fuse else []
            cpu += sum(c for c, _ in sidecars)
            memory += sum(m for _, m in sidecars)
            if cpu > cpu_free or memory > memory_free:
                problems.append(
                    Problem(
                        paths(kind, i, "head"),
                        f"{obj.head.cpu} CPU and {obj.head.memory} (with sidecars {cpu:g} CPU, {memory:.2f} GiB) "
                        "do not fit "
                        f"a {cluster.system_pool.machine_type} system node, which allocates {cpu_free:.2f} CPU and "
                        f"{memory_free:.2f} GiB to pods; allowed: a smaller head or a larger "
                        f"{paths.key('system_pool')}.{paths.key('machine_type')}",
                    )
                )
    return problems
