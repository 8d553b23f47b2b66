"""The live checks, one `Check` each: TPU node pools, KubeRay objects, and the worker pods of each TPU worker group
(whole slices, the TPU webhook's environment, the nodes they sit on)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ray_tpu_gke import catalog
from ray_tpu_gke.render import manifests

from .expected import GroupPlan, ObjectPlan, PoolPlan, _tpu_container
from .labels import (
    DEPLOYMENT_FAILED,
    HOSTNAMES_ENV,
    INSTANCE_TYPE_LABEL,
    NAME_ENV,
    NODE_POOL_LABEL,
    WORKER_ID_ENV,
)

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass
class Check:
    subject: str  # what was checked: "node pool v6e-16-0", "RayCluster ray/train group v6e-16"
    name: str
    status: str
    detail: str

    def to_json(self) -> dict:
        return {"subject": self.subject, "name": self.name, "status": self.status, "detail": self.detail}




def _labels(obj: dict) -> dict:
    return obj.get("metadata", {}).get("labels") or {}


def _name(obj: dict) -> str:
    return obj.get("metadata", {}).get("name", "?")


def _ready(obj: dict) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _status(problems: list[str]) -> str:
    return FAIL if problems else PASS


def _listing(items: list[str], limit: int = 6) -> str:
    return "; ".join(items[:limit]) + (f"; and {len(items) - limit} more" if len(items) > limit else "")


# --- node pools ----------------------------------------------------------------------------------------------------

def pool_checks(pool: PoolPlan, nodes: list[dict]) -> list[Check]:
    subject = f"node pool {pool.name}"
    mine = [n for n in nodes if _labels(n).get(NODE_POOL_LABEL) == pool.name]
    hosts = pool.shape.hosts
    if not mine and pool.autoscaled_from_zero:
        detail = f"0 nodes: the pool autoscales from zero ({hosts} when in use)"
        return [Check(subject, "nodes", SKIP, detail), Check(subject, "labels", SKIP, "no nodes"),
                Check(subject, "ready", SKIP, "no nodes")]
    want = f"0 or {hosts}" if pool.autoscaled_from_zero else str(hosts)
    short = "" if len(mine) == hosts else f", expected {want} (hosts of {pool.slice})"
    checks = [Check(subject, "nodes", PASS if len(mine) == hosts else FAIL, f"{len(mine)} nodes{short}")]
    expected = {catalog.ACCELERATOR_LABEL: pool.shape.accelerator, catalog.TOPOLOGY_LABEL: pool.shape.topology,
                manifests.SLICE_LABEL: pool.slice, INSTANCE_TYPE_LABEL: pool.shape.machine_type.name}
    problems = [f"{_name(n)} {key}={_labels(n).get(key)!r}" for n in mine for key, value in expected.items()
                if _labels(n).get(key) != value]
    checks.append(Check(subject, "labels", _status(problems), _listing(problems) or ", ".join(
        f"{k}={v}" for k, v in expected.items())))
    problems = [_name(n) for n in mine if not _ready(n)]
    checks.append(Check(subject, "ready", _status(problems),
                        f"not Ready: {_listing(problems)}" if problems else f"{len(mine)} nodes Ready"))
    return checks


# --- Ray objects ---------------------------------------------------------------------------------------------------

def _ready_condition(kind: str) -> tuple[list[str], str]:
    """The status field and value that say a RayCluster or RayService is ready: the same that Pulumi's waitFor
    annotation uses (components/render/manifests.py _READY)."""
    path, value = manifests._READY[kind].removeprefix("jsonpath={").split("}=")
    return path.lstrip(".").split("."), value


def _field(obj: dict, path: list[str]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def object_checks(plan: ObjectPlan, live: Optional[dict]) -> tuple[list[Check], Optional[str]]:
    """Whether the object exists and is ready, and the name of the Ray cluster its pods belong to."""
    if live is None:
        return [Check(plan.subject, "exists", FAIL, "not found")], None
    checks = [Check(plan.subject, "exists", PASS, "found")]
    status = live.get("status") or {}
    if plan.kind == "RayJob":
        deployment, job = status.get("jobDeploymentStatus", ""), status.get("jobStatus", "")
        bad = deployment in DEPLOYMENT_FAILED or job in {"FAILED", "STOPPED"}
        detail = f"jobDeploymentStatus {deployment or 'unset'}, jobStatus {job or 'unset'}"
        if status.get("message") and bad:
            detail += f": {status['message']}"
        checks.append(Check(plan.subject, "ready", FAIL if bad else PASS, detail))
        return checks, plan.cluster_selector or status.get("rayClusterName") or None
    path, value = _ready_condition(plan.kind)
    actual = _field(live, path)
    checks.append(Check(plan.subject, "ready", PASS if actual == value else FAIL,
                        f"{'.'.join(path)} {actual!r}" + ("" if actual == value else f", expected {value!r}")))
    if plan.kind == "RayService":
        return checks, _field(live, ["status", "activeServiceStatus", "rayClusterName"]) or None
    return checks, plan.name


def _env(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or [] if "name" in e}


def group_checks(subject: str, group: GroupPlan, pods: list[dict], nodes: dict[str, dict]) -> list[Check]:
    """The worker pods of one TPU worker group against the plan: whole slices, running, webhook environment, chips,
    and the nodes they run on."""
    spec = group.spec
    subject = f"{subject} group {group.group}"
    checks = []
    slices, rest = divmod(len(pods), spec.hosts)
    low, high = (group.min_replicas, group.max_replicas) if group.autoscaling else (group.replicas, group.replicas)
    bounds = f"{low}" if low == high else f"{low} to {high}"
    ok = rest == 0 and low <= slices <= high
    checks.append(Check(subject, "pods", PASS if ok else FAIL,
                        f"{len(pods)} worker pods: {slices} slices of {spec.hosts}" + ("" if rest == 0 else
                        f" and {rest} over") + (f"; expected {bounds} slices" if not ok else f" ({bounds} planned)")))
    if not pods:
        return checks + [Check(subject, name, SKIP, "no worker pods") for name in
                         ("running", "tpu request", "webhook env", "slices", "nodes")]

    problems = [f"{_name(p)} {p.get('status', {}).get('phase', 'unknown')}" + ("" if _ready(p) else ", not Ready")
                for p in pods if p.get("status", {}).get("phase") != "Running" or not _ready(p)]
    checks.append(Check(subject, "running", _status(problems), _listing(problems) or f"{len(pods)} pods Running"))

    containers = {_name(p): _tpu_container(p.get("spec", {})) for p in pods}
    problems = []
    for pod, container in containers.items():
        if container is None:
            problems.append(f"{pod} has no container with a {catalog.TPU_RESOURCE} limit")
            continue
        resources = container.get("resources", {})
        got = [str((resources.get(k) or {}).get(catalog.TPU_RESOURCE)) for k in ("requests", "limits")]
        if got != [str(spec.chips_per_host)] * 2:
            problems.append(f"{pod} requests/limits {catalog.TPU_RESOURCE} {'/'.join(got)}")
    checks.append(Check(subject, "tpu request", _status(problems),
                        _listing(problems) or f"{catalog.TPU_RESOURCE} {spec.chips_per_host} per pod"))

    wanted = [WORKER_ID_ENV, NAME_ENV] + ([HOSTNAMES_ENV] if spec.hosts > 1 else [])
    envs = {pod: _env(c) for pod, c in containers.items() if c is not None}
    problems = [f"{pod} lacks {', '.join(k for k in wanted if not env.get(k))}" for pod, env in envs.items()
                if not all(env.get(k) for k in wanted)]
    checks.append(Check(subject, "webhook env", _status(problems),
                        _listing(problems) or f"{', '.join(wanted)} on every TPU container"))
    if problems:
        checks.append(Check(subject, "slices", SKIP, "the TPU webhook's environment is missing"))
    else:
        checks.append(_slice_check(subject, group, pods, envs, nodes))
    checks.append(_node_check(subject, group, pods, nodes))
    return checks


def _slice_check(subject: str, group: GroupPlan, pods: list[dict], envs: dict[str, dict],
                 nodes: dict[str, dict]) -> Check:
    """Per TPU_NAME: worker ids 0..hosts-1 once each, as many hostnames as hosts, one node pool."""
    spec = group.spec
    by_slice: dict[str, list[dict]] = {}
    for pod in pods:
        by_slice.setdefault(envs[_name(pod)][NAME_ENV], []).append(pod)
    problems = []
    for name, members in sorted(by_slice.items()):
        if not name.startswith(f"{group.group}-"):
            problems.append(f"{NAME_ENV} {name!r} is not {group.group}-<replica>")
        ids = sorted(envs[_name(p)][WORKER_ID_ENV] for p in members)
        want = sorted(str(i) for i in range(spec.hosts))
        if ids != want:
            problems.append(f"{name}: {WORKER_ID_ENV} {', '.join(ids)}, expected {', '.join(want)}")
        if spec.hosts > 1:
            counts = sorted({len(envs[_name(p)][HOSTNAMES_ENV].split(",")) for p in members})
            if counts != [spec.hosts]:
                problems.append(f"{name}: {HOSTNAMES_ENV} lists {counts} hosts, expected {spec.hosts}")
        scheduled = [nodes.get(p.get("spec", {}).get("nodeName", "")) for p in members]
        pools = sorted({_labels(n).get(NODE_POOL_LABEL, "?") for n in scheduled if n})
        if len(pools) > 1:
            problems.append(f"{name}: hosts on node pools {', '.join(pools)}; a slice is one pool")
    return Check(subject, "slices", _status(problems),
                 _listing(problems) or f"{len(by_slice)} slices, {WORKER_ID_ENV} 0..{spec.hosts - 1} in each")


def _node_check(subject: str, group: GroupPlan, pods: list[dict], nodes: dict[str, dict]) -> Check:
    problems = []
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name:
            problems.append(f"{_name(pod)} is not scheduled")
            continue
        node = nodes.get(node_name)
        if node is None:
            problems.append(f"{_name(pod)} runs on {node_name}, which is not a node of the cluster")
            continue
        problems += [f"{node_name} {key}={_labels(node).get(key)!r}, expected {value!r}"
                     for key, value in group.selector.items() if _labels(node).get(key) != value]
    return Check(subject, "nodes", _status(problems), _listing(problems) or "every pod on a node with " + ", ".join(
        f"{k}={v}" for k, v in group.selector.items()))



