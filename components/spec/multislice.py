"""Multislice training and TPU training jobs at plan time: the shape each Ray pod is told, the drain grace period,
Ray Train's worker-group start timeout, and the rules that keep N slices of one job possible (pure).

A multislice job is one JaxTrainer over N slices of one shape: a TPU worker group with `replicas: N` (N whole
slices, `numOfHosts` hosts each) in a RayCluster or RayJob. JaxTrainer reserves all N slices with one slice
placement group before its first step and sets MEGASCALE_* itself (Ray 2.55 ray/util/tpu.py SlicePlacementGroup,
ray/train/v2/jax/config.py), so the job runs only while all N are up: slices that come up early bill and wait.
A RayService's replicas are Serve replicas, each a slice of its own, and are not multislice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

from .. import admission, catalog
from ..catalog import ray_versions
from ..workload.slice import COUNT_ENV, ENV
from .models import TpuSliceConfig
from .paths import ClusterContext, Paths
from .problems import Problem
from .ray_models import RayJobConfig, RayObjectConfig, RayServiceConfig, WorkerGroupConfig

# The environment every Ray pod of a TPU worker group gets (and the head, where the object has one TPU group): the
# names the workloads read (ray_tpu_gke.workload.slice), so a job learns its shape from the platform.
SLICE_ENV = {**ENV, "count": COUNT_ENV}
# Read by Ray Train in the driver and handed to its controller (Ray 2.55 ray/train/v2/_internal/constants.py
# WORKER_GROUP_START_TIMEOUT_S_ENV_VAR, in ENV_VARS_TO_PROPAGATE), so it goes on the head, where the driver runs.
START_TIMEOUT_ENV = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"
# Twice Ray's 30 s drain (ray_versions.DRAIN_TIMEOUT_S): the drain, then Ray's teardown of its processes, then exit.
DEFAULT_TPU_GRACE_PERIOD_S = 2 * ray_versions.DRAIN_TIMEOUT_S
# A cold multi-host slice: node provisioning, image pull and Ray start on every host; GKE's TPU node start-up alone
# is minutes (the kubernetes.io/node/latencies/startup metric). 15 minutes, against Ray Train's 60 s default.
DEFAULT_START_TIMEOUT_S = 900


def slices(obj: RayObjectConfig, group: WorkerGroupConfig) -> int:
    """The slices a job on the group trains on: its replicas; in a RayJob whose group Ray autoscaling starts from
    zero, the most it may bring up (maxReplicas), since the job's slice placement group is what scales it. (A
    RayCluster's group that starts from zero may serve notebooks and small jobs: it declares no job's slices.)"""
    if isinstance(obj, RayJobConfig) and obj.autoscaling.enabled and group.replicas == 0:
        return group.max
    return group.replicas


def is_multislice(obj: RayObjectConfig, group: WorkerGroupConfig) -> bool:
    return group.slice is not None and slices(obj, group) > 1 and not isinstance(obj, RayServiceConfig)


# On a Ray object that runs multislice, what for (in the plan JSON, `--manifests` and `kubectl get -o yaml`).
ANNOTATION = "ray-tpu-gke/multislice"


def annotation(obj: RayObjectConfig, entries: Mapping[str, TpuSliceConfig]) -> Optional[str]:
    """`<group>: <N> slices of <entry> x <chips> chips = <total> chips` per multislice group, or None."""
    parts = []
    for group in tpu_groups(obj):
        entry = entries.get(group.slice) if group.slice is not None else None
        if entry is not None and is_multislice(obj, group):
            n, chips = slices(obj, group), entry.shape.chips
            parts.append(f"{group.name}: {n} slices of {group.slice} x {chips} chips = {n * chips} chips")
    return "; ".join(parts) or None


def slice_env(tpu_slice: TpuSliceConfig, slices: int) -> list[dict]:
    shape = tpu_slice.shape
    values = {
        "generation": tpu_slice.generation,
        "topology": shape.topology,
        "hosts": shape.hosts,
        "chips_per_host": shape.chips_per_host,
        "count": slices,
    }
    return [{"name": SLICE_ENV[key], "value": str(value)} for key, value in values.items()]


def tpu_groups(obj: RayObjectConfig) -> list[WorkerGroupConfig]:
    return [group for group in obj.worker_groups if group.slice is not None]


def head_env(obj: RayObjectConfig, entries: Mapping[str, TpuSliceConfig]) -> list[dict]:
    """The head's environment: the start timeout for a trainer driven from it, and the shape where the object has
    exactly one TPU group (the driver of `python -m workloads.train` reads it there)."""
    groups = [(g, entries[g.slice]) for g in tpu_groups(obj) if g.slice is not None and g.slice in entries]
    env = []
    timeout = start_timeout(obj)
    if timeout is not None:
        env.append({"name": START_TIMEOUT_ENV, "value": str(timeout)})
    if len(groups) == 1:
        (group, entry), *_ = groups
        env += slice_env(entry, max(1, slices(obj, group)))
    return env


def start_timeout(obj: RayObjectConfig) -> Optional[int]:
    """Seconds Ray Train waits for a worker group to be placed: the object's own, else the default for objects
    that train on TPU slices (RayServices serve and start no trainer)."""
    if obj.worker_group_start_timeout_seconds is not None:
        return obj.worker_group_start_timeout_seconds
    if isinstance(obj, RayServiceConfig) or not tpu_groups(obj):
        return None
    return DEFAULT_START_TIMEOUT_S


def grace_period(obj: RayObjectConfig, group: Optional[WorkerGroupConfig] = None) -> Optional[int]:
    """terminationGracePeriodSeconds of a group's pods (the head's without a group): the group's own, else 60 s on
    TPU slices, and 60 s on every Ray pod of a Ray that drains on SIGTERM (2.57+); else Kubernetes' default."""
    if group is not None and group.termination_grace_period_seconds is not None:
        return group.termination_grace_period_seconds
    if (group is not None and group.slice is not None) or ray_versions.ray_has(obj.ray_version, "drain-on-sigterm"):
        return DEFAULT_TPU_GRACE_PERIOD_S
    return None


# --- plan-time rules -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Use:
    kind: str
    i: int
    j: int
    obj: RayObjectConfig
    group: WorkerGroupConfig
    entry: TpuSliceConfig
    entry_index: int  # its position in tpuSlices, for key paths


def _whole(model, *names: str) -> bool:
    """Whether these fields of a model were validated, not left at their defaults (config `validate_partial`)."""
    return model.intact(*names) if hasattr(model, "intact") else True


def _shaped(entry: TpuSliceConfig) -> bool:
    """Whether the entry's generation, topology and machine type make a slice (their problems are reported apart)."""
    try:
        entry.shape
    except catalog.CatalogError:
        return False
    return True


def _uses(lists: dict) -> Iterator[_Use]:
    """Every worker group on a valid slice entry, of objects whose fields these rules read were all valid."""
    entries = {
        s.name: (index, s)
        for index, s in enumerate(lists["tpu_slices"])
        if s is not None
        and _whole(s, "name", "generation", "topology", "count", "capacity", "autoscaling")
        and _shaped(s)
    }
    for kind in ("ray_clusters", "ray_services", "ray_jobs"):
        for i, obj in enumerate(lists[kind]):
            if obj is None or not _whole(
                obj, "worker_groups", "autoscaling", "ray_version", "worker_group_start_timeout_seconds"
            ):
                continue
            for j, group in enumerate(obj.worker_groups):
                if (
                    group.slice in entries
                    and sum(x is not None for x in (group.slice, group.gpu_pool, group.cpu_pool)) == 1
                ):
                    yield _Use(kind, i, j, obj, group, entries[group.slice][1], entries[group.slice][0])


def _at_once(use: _Use) -> int:
    surge = isinstance(use.obj, RayServiceConfig) and use.obj.upgrade_strategy == "NewCluster"
    return use.group.replicas * (2 if surge else 1)


def check(context: ClusterContext, lists: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    """Drain grace periods, start timeouts and multislice groups of every valid Ray object on a TPU slice."""
    problems: list[Problem] = []
    uses = list(_uses(lists))
    by_entry: dict[str, list[_Use]] = defaultdict(list)
    for use in uses:
        by_entry[use.entry.name].append(use)
    for use in uses:
        gpath = paths(use.kind, use.i, "worker_groups", use.j)
        _grace(use, gpath, paths, warnings)
        _reservation_timeout(use, context, paths, warnings)
        if (
            use.kind != "ray_services"
            and use.entry.generation == "v5e"
            and use.obj.autoscaling.enabled
            and not ray_versions.ray_has(use.obj.ray_version, "autoscaler-v5litepod")
        ):
            warnings.append(
                f"{paths(use.kind, use.i, 'autoscaling', 'enabled')}: Ray {use.obj.ray_version}'s "
                f"autoscaler scales v5e group {use.group.name} by TPU-v5e-N-head, which v5e hosts do not "
                "advertise (they have TPU-v5litepod-N-head), so a job that reserves whole slices never "
                f"scales it up; fixed in Ray {ray_versions.ray_feature('autoscaler-v5litepod').since} "
                f"({admission.RAY_AUTOSCALER_TPU.id})"
            )
        if is_multislice(use.obj, use.group):
            problems += _multislice(use, by_entry[use.entry.name], context, gpath, paths, warnings)
    return problems


def _grace(use: _Use, gpath: str, paths: Paths, warnings: list[str]) -> None:
    grace = grace_period(use.obj, use.group)
    if (
        grace is not None
        and grace <= ray_versions.DRAIN_TIMEOUT_S
        and ray_versions.ray_has(use.obj.ray_version, "drain-on-sigterm")
    ):
        warnings.append(
            f"{gpath}.{paths.key('termination_grace_period_seconds')}: {grace} s is not longer than Ray "
            f"{use.obj.ray_version}'s {ray_versions.DRAIN_TIMEOUT_S} s drain on SIGTERM, so Kubernetes "
            f"kills the pod before it has drained; allowed: {DEFAULT_TPU_GRACE_PERIOD_S} or more "
            f"({admission.RAY_DRAIN_GRACE.id})"
        )


def _reservation_timeout(use: _Use, context: ClusterContext, paths: Paths, warnings: list[str]) -> None:
    """Ray < 2.56: a TPU trainer waits a hard-coded 100 s for each slice and fails the run after it."""
    shape = use.entry.shape
    cold = use.entry.autoscaled or context.mode == "autopilot"  # its nodes are created when the job asks
    if (
        use.kind == "ray_services"
        or not shape.multi_host
        or not cold
        or ray_versions.ray_has(use.obj.ray_version, "slice-reservation-timeout")
    ):
        return
    fixed = ray_versions.ray_feature("slice-reservation-timeout").since
    warnings.append(
        f"{paths(use.kind, use.i, 'ray_version')}: {use.obj.ray_version}: a JaxTrainer on group "
        f"{use.group.name} waits at most {ray_versions.SLICE_RESERVATION_TIMEOUT_S} s for each "
        f"{shape.hosts}-host slice of {use.entry.name}, which starts from cold here, and a timeout fails "
        f"the run whatever {START_TIMEOUT_ENV} says; fixed in Ray {fixed} (the wait follows "
        f"{START_TIMEOUT_ENV} and is retried), or keep the slices up (autoscaling off) "
        f"({admission.RAY_TRAIN_START_TIMEOUT.id})"
    )


def _multislice(
    use: _Use, sharing: list[_Use], context: ClusterContext, gpath: str, paths: Paths, warnings: list[str]
) -> list[Problem]:
    problems = []
    n, entry, obj = slices(use.obj, use.group), use.entry, use.obj
    who = f"{obj.namespace}/{obj.name} group {use.group.name}"
    others = [u for u in sharing if u is not use]
    held = sum(_at_once(u) for u in others)
    # In Standard mode checks._check_demand already refuses, at the same key, replicas that do not fit at once; this
    # rule adds the slices a job may grow to (maxReplicas under Ray autoscaling) and Autopilot, whose `count` is the
    # slices the stack plans for (cost, quota).
    reported = context.mode == "standard" and use.group.replicas + held > entry.count
    if n + held > entry.count and not reported:
        besides = "; ".join(f"{u.obj.namespace}/{u.obj.name} group {u.group.name}: {_at_once(u)}" for u in others)
        problems.append(
            Problem(
                paths("tpu_slices", use.entry_index, "count"),
                f"{entry.count} slice(s) of {entry.name}, but multislice {who} needs {n} at once"
                + (f" beside {held} held by others ({besides})" if others else "")
                + f"; allowed: at least {n + held} ({admission.RAY_MULTISLICE.id})",
            )
        )
    if not ray_versions.ray_has(obj.ray_version, "multislice-megascale-refresh"):
        feature = ray_versions.ray_feature("multislice-megascale-refresh")
        warnings.append(
            f"{paths(use.kind, use.i, 'ray_version')}: {obj.ray_version}: a multislice JaxTrainer on "
            f"{who} keeps stale MEGASCALE_* values after a slice is replaced and can hang; fixed in Ray "
            f"{feature.since} (ray-project/ray#62893)"
        )
    if entry.capacity == "spot":
        warnings.append(
            f"{gpath}.{paths.key('replicas')}: multislice {who} runs on {n} spot slices of {entry.name}: "
            "one preemption of any host stops all of them until a whole slice is back"
        )
    return problems


# --- pod traffic across slices -------------------------------------------------------------------------------------

# GKE's own allow rule for in-cluster traffic, gke-<cluster>-<hash>-all: from the Pod CIDR to the nodes, TCP, UDP,
# SCTP, ICMP, ESP, AH, priority 1000 (GKE "Automatically created firewall rules"). A deny the stack adds wins over it
# only with a lower priority number.
GKE_POD_ALLOW_PRIORITY = 1000


def cross_slice_blockers(resources: list[tuple[str, str, dict]]) -> list[str]:
    """What in a plan's resources ((type, name, inputs)) would stop the Ray pods of one cluster reaching each other
    across slices: the JAX coordinator (an ephemeral port on rank 0), MEGASCALE's DCN port 8081, and Ray's own
    ports (GCS 6379, raylet, object manager and workers 10002-19999, random) are all TCP between pods, so anything
    short of all TCP between the pods of a Ray cluster breaks a job. Kubernetes leaves a pod open to all ingress
    until a NetworkPolicy selects it (kubernetes.io "Network Policies")."""
    found = []
    for type_, name, inputs in resources:
        if (
            type_ == "gcp:compute/firewall:Firewall"
            and inputs.get("direction", "INGRESS") == "INGRESS"
            and inputs.get("denies")
            and inputs.get("priority", 1000) <= GKE_POD_ALLOW_PRIORITY
        ):
            found.append(
                f"firewall {name}: denies ingress at priority {inputs.get('priority', 1000)}, which wins "
                f"over GKE's pod-to-pod allow rule (priority {GKE_POD_ALLOW_PRIORITY})"
            )
        if type_.endswith("NetworkPolicy") and "Ingress" in (inputs.get("spec", {}).get("policyTypes") or ["Ingress"]):
            found.append(
                f"NetworkPolicy {name}: isolates the pods it selects; Ray pods need all TCP from the pods of "
                "their own Ray cluster (podSelector ray.io/cluster=<name>, no ports list)"
            )
    return found
