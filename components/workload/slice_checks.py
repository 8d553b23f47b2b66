"""The checks of TPU slices in a live cluster, one implementation for both callers: `ray-tpu-gke verify` (from the
deployer's machine, through kubectl) and `python -m workloads.slice_health` (the in-cluster CronJob, through the
Kubernetes API). Pure functions over the JSON the Kubernetes API and Ray's dashboard return: no Ray or Pulumi
import, so they run in the workloads image and in the toolchain's virtualenv alike.

- `pool_checks`: the nodes of one TPU node pool (count, GKE's TPU labels, Ready);
- `object_checks`: a KubeRay object exists and is ready (RayJob: not failed);
- `group_checks`: the worker pods of one TPU worker group (whole slices, running, chips, the TPU webhook's
  environment with TPU_WORKER_ID 0..n-1 once per slice, the nodes they run on);
- `ray_view_checks`: a Ray head's own view of the group (its nodes' `ray.io/tpu-*` labels, hosts per slice), with the
  label checks of the smoke test (`ray_labels.label_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from . import ray_labels
from .ray_labels import FAIL, PASS, SKIP
from .slice import SliceSpec

# --- what GKE, KubeRay and the TPU webhook put on nodes, pods and Ray objects ---------------------------------------

NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE, "About node pools": every node carries its pool's name
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # Kubernetes well-known label: the node's machine type
# GKE's TPU node labels and extended resource (GKE "Deploy TPU workloads in GKE Standard"); the same strings as
# ray_tpu_gke.catalog ACCELERATOR_LABEL, TOPOLOGY_LABEL, TPU_RESOURCE (tests/workloads/test_health_check.py compares
# them).
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
TPU_RESOURCE = "google.com/tpu"
SLICE_LABEL = "ray-tpu-gke/slice"  # the stack's own node label on a slice's pool (ray_tpu_gke.render.manifests)
# KubeRay's pod labels (ray-operator/controllers/ray/utils/constant.go RayClusterLabelKey, RayNodeGroupLabelKey,
# RayNodeTypeLabelKey); the TPU webhook selects worker pods by the same (ai-on-gke kuberay-tpu-webhook main.go).
CLUSTER_LABEL, GROUP_LABEL, NODE_TYPE_LABEL = "ray.io/cluster", "ray.io/group", "ray.io/node-type"
# Environment the Ray Operator add-on's TPU webhook injects into each TPU container of a worker pod
# (GoogleCloudPlatform/ai-on-gke ray-on-gke/tpu/kuberay-tpu-webhook/main.go, mutatePod): TPU_WORKER_HOSTNAMES only when
# the slice has more than one host, TPU_NAME = <group>-<replica index>.
WORKER_ID_ENV, NAME_ENV, HOSTNAMES_ENV = "TPU_WORKER_ID", "TPU_NAME", "TPU_WORKER_HOSTNAMES"
# KubeRay RayJob status (ray-operator/apis/ray/v1/rayjob_types.go): Ray's job status and KubeRay's deployment status.
JOB_DONE = {"SUCCEEDED", "FAILED", "STOPPED"}
DEPLOYMENT_FAILED = {"Failed", "ValidationFailed"}
# The status field and value that say a RayService is ready (KubeRay v1 rayservice_types.go ServiceStatus "Running"):
# the same as the library's pulumi.com/waitFor annotation (ray_tpu_gke.render.manifests._READY; tests compare them).
READY_FIELD = {"RayService": (("status", "serviceStatus"), "Running")}
# A RayCluster is ready while these conditions of status.conditions are True (KubeRay v1.7 raycluster_types.go:
# HeadPodReady "whether RayCluster's head Pod is ready for requests", RayClusterProvisioned "whether all Ray Pods are
# ready for the first time"; set by default since v1.3, feature gate RayClusterStatusConditions). Its status.state is
# deprecated: set to ready once and never reset, so a head pod that dies later would still read ready.
READY_CONDITIONS = {"RayCluster": ("HeadPodReady", "RayClusterProvisioned")}


@dataclass
class Check:
    subject: str  # what was checked: "node pool v6e-16-0", "RayCluster ray/train group v6e-16"
    name: str
    status: str
    detail: str

    def to_json(self) -> dict:
        return {"subject": self.subject, "name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class PoolPlan:
    """A TPU node pool the stack creates: one slice of `slice`'s shape."""

    name: str
    slice: str
    accelerator: str  # GKE's cloud.google.com/gke-tpu-accelerator value
    topology: str
    machine_type: str
    hosts: int
    autoscaled_from_zero: bool

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict) -> "PoolPlan":
        return cls(**data)


@dataclass(frozen=True)
class GroupPlan:
    """A TPU worker group of a Ray object: its slice shape, node selector and replica bounds."""

    group: str
    spec: SliceSpec
    selector: dict
    replicas: int
    min_replicas: int
    max_replicas: int
    autoscaling: bool
    slice: str = ""  # the tpuSlices entry it runs on

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "spec": {
                "generation": self.spec.generation,
                "topology": self.spec.topology,
                "hosts": self.spec.hosts,
                "chips_per_host": self.spec.chips_per_host,
            },
            "selector": dict(self.selector),
            "replicas": self.replicas,
            "min_replicas": self.min_replicas,
            "max_replicas": self.max_replicas,
            "autoscaling": self.autoscaling,
            "slice": self.slice,
        }

    @classmethod
    def from_json(cls, data: dict) -> "GroupPlan":
        return cls(**{**data, "spec": SliceSpec(**data["spec"])})


def labels_of(obj: dict) -> dict:
    return obj.get("metadata", {}).get("labels") or {}


def name_of(obj: dict) -> str:
    return obj.get("metadata", {}).get("name", "?")


def is_ready(obj: dict) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _status(problems: list[str]) -> str:
    return FAIL if problems else PASS


def listing(items: list[str], limit: int = 6) -> str:
    return "; ".join(items[:limit]) + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def tpu_container(pod_spec: dict) -> Optional[dict]:
    """The container that asks for TPU chips (the one the TPU webhook injects its environment into)."""
    return next(
        (c for c in pod_spec.get("containers", []) if TPU_RESOURCE in ((c.get("resources") or {}).get("limits") or {})),
        None,
    )


# --- node pools ----------------------------------------------------------------------------------------------------


def pool_checks(pool: PoolPlan, nodes: list[dict]) -> list[Check]:
    subject = f"node pool {pool.name}"
    mine = [n for n in nodes if labels_of(n).get(NODE_POOL_LABEL) == pool.name]
    hosts = pool.hosts
    if not mine and pool.autoscaled_from_zero:
        detail = f"0 nodes: the pool autoscales from zero ({hosts} when in use)"
        return [
            Check(subject, "nodes", SKIP, detail),
            Check(subject, "labels", SKIP, "no nodes"),
            Check(subject, "ready", SKIP, "no nodes"),
        ]
    want = f"0 or {hosts}" if pool.autoscaled_from_zero else str(hosts)
    short = "" if len(mine) == hosts else f", expected {want} (hosts of {pool.slice})"
    checks = [Check(subject, "nodes", PASS if len(mine) == hosts else FAIL, f"{len(mine)} nodes{short}")]
    expected = {
        ACCELERATOR_LABEL: pool.accelerator,
        TOPOLOGY_LABEL: pool.topology,
        SLICE_LABEL: pool.slice,
        INSTANCE_TYPE_LABEL: pool.machine_type,
    }
    problems = [
        f"{name_of(n)} {key}={labels_of(n).get(key)!r}"
        for n in mine
        for key, value in expected.items()
        if labels_of(n).get(key) != value
    ]
    checks.append(
        Check(
            subject,
            "labels",
            _status(problems),
            listing(problems) or ", ".join(f"{k}={v}" for k, v in expected.items()),
        )
    )
    problems = [name_of(n) for n in mine if not is_ready(n)]
    checks.append(
        Check(
            subject,
            "ready",
            _status(problems),
            f"not Ready: {listing(problems)}" if problems else f"{len(mine)} nodes Ready",
        )
    )
    return checks


# --- Ray objects ---------------------------------------------------------------------------------------------------


def field_at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def object_checks(
    subject: str, kind: str, name: str, live: Optional[dict], cluster_selector: Optional[str] = None
) -> tuple[list[Check], Optional[str]]:
    """Whether the object exists and is ready (a RayJob: has not failed), and the name of the Ray cluster its pods
    belong to (None when it has none yet)."""
    if live is None:
        return [Check(subject, "exists", FAIL, "not found")], None
    checks = [Check(subject, "exists", PASS, "found")]
    status = live.get("status") or {}
    if kind == "RayJob":
        deployment, job = status.get("jobDeploymentStatus", ""), status.get("jobStatus", "")
        bad = deployment in DEPLOYMENT_FAILED or job in {"FAILED", "STOPPED"}
        detail = f"jobDeploymentStatus {deployment or 'unset'}, jobStatus {job or 'unset'}"
        if status.get("message") and bad:
            detail += f": {status['message']}"
        checks.append(Check(subject, "ready", FAIL if bad else PASS, detail))
        return checks, cluster_selector or status.get("rayClusterName") or None
    ready, said = ready_state(kind, live)
    if kind in READY_CONDITIONS:
        detail = said if not ready else f"{', '.join(READY_CONDITIONS[kind])} True"
    else:
        path, value = READY_FIELD[kind]
        detail = f"{'.'.join(path)} {said!r}" + ("" if ready else f", expected {value!r}")
    checks.append(Check(subject, "ready", PASS if ready else FAIL, detail))
    if kind == "RayService":
        return checks, field_at(live, ("status", "activeServiceStatus", "rayClusterName")) or None
    return checks, name


def ready_state(kind: str, live: dict) -> tuple[bool, str]:
    """Whether a RayCluster or RayService is ready, and what its status says: the field's value, or the first
    readiness condition that is not True with its status and reason ("HeadPodReady False (HeadPodNotFound)")."""
    if kind in READY_CONDITIONS:
        conditions = {c.get("type"): c for c in (live.get("status") or {}).get("conditions") or []}
        for wanted in READY_CONDITIONS[kind]:
            condition = conditions.get(wanted) or {}
            if condition.get("status") != "True":
                reason = condition.get("reason")
                return False, f"{wanted} {condition.get('status') or 'unset'}" + (f" ({reason})" if reason else "")
        return True, "ready"
    path, value = READY_FIELD[kind]
    actual = field_at(live, path)
    return actual == value, str(actual) if actual is not None else "unset"


def job_finished(status: dict) -> bool:
    return status.get("jobStatus") in JOB_DONE or status.get("jobDeploymentStatus") in {"Complete", *DEPLOYMENT_FAILED}


# --- the worker pods of a TPU worker group -------------------------------------------------------------------------


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
    checks.append(
        Check(
            subject,
            "pods",
            PASS if ok else FAIL,
            f"{len(pods)} worker pods: {slices} slices of {spec.hosts}"
            + ("" if rest == 0 else f" and {rest} over")
            + (f"; expected {bounds} slices" if not ok else f" ({bounds} planned)"),
        )
    )
    if not pods:
        return checks + [
            Check(subject, name, SKIP, "no worker pods")
            for name in ("running", "tpu request", "webhook env", "slices", "nodes")
        ]

    problems = [
        f"{name_of(p)} {p.get('status', {}).get('phase', 'unknown')}" + ("" if is_ready(p) else ", not Ready")
        for p in pods
        if p.get("status", {}).get("phase") != "Running" or not is_ready(p)
    ]
    checks.append(Check(subject, "running", _status(problems), listing(problems) or f"{len(pods)} pods Running"))

    containers = {name_of(p): tpu_container(p.get("spec", {})) for p in pods}
    problems = []
    for pod, container in containers.items():
        if container is None:
            problems.append(f"{pod} has no container with a {TPU_RESOURCE} limit")
            continue
        resources = container.get("resources", {})
        got = [str((resources.get(k) or {}).get(TPU_RESOURCE)) for k in ("requests", "limits")]
        if got != [str(spec.chips_per_host)] * 2:
            problems.append(f"{pod} requests/limits {TPU_RESOURCE} {'/'.join(got)}")
    checks.append(
        Check(
            subject,
            "tpu request",
            _status(problems),
            listing(problems) or f"{TPU_RESOURCE} {spec.chips_per_host} per pod",
        )
    )

    wanted = [WORKER_ID_ENV, NAME_ENV] + ([HOSTNAMES_ENV] if spec.hosts > 1 else [])
    envs = {pod: _env(c) for pod, c in containers.items() if c is not None}
    problems = [
        f"{pod} lacks {', '.join(k for k in wanted if not env.get(k))}"
        for pod, env in envs.items()
        if not all(env.get(k) for k in wanted)
    ]
    checks.append(
        Check(
            subject,
            "webhook env",
            _status(problems),
            listing(problems) or f"{', '.join(wanted)} on every TPU container",
        )
    )
    if problems:
        checks.append(Check(subject, "slices", SKIP, "the TPU webhook's environment is missing"))
    else:
        checks.append(_slice_check(subject, group, pods, envs, nodes))
    checks.append(_node_check(subject, group, pods, nodes))
    return checks


def slice_problems(group: GroupPlan, pods: list[dict], nodes: dict[str, dict]) -> dict[str, list[str]]:
    """What is wrong with each slice of a worker group's pods, by its TPU_NAME (empty list: nothing): worker ids
    0..hosts-1 once each, as many hostnames as hosts, one node pool. Pods without the webhook's TPU_NAME are left out
    (the "webhook env" check names them)."""
    spec = group.spec
    by_slice: dict[str, list[dict]] = {}
    envs = {}
    for pod in pods:
        container = tpu_container(pod.get("spec", {}))
        env = _env(container) if container else {}
        if env.get(NAME_ENV):
            envs[name_of(pod)] = env
            by_slice.setdefault(env[NAME_ENV], []).append(pod)
    out: dict[str, list[str]] = {}
    for name, members in sorted(by_slice.items()):
        problems = out.setdefault(name, [])
        if not name.startswith(f"{group.group}-"):
            problems.append(f"{NAME_ENV} {name!r} is not {group.group}-<replica>")
        ids = sorted(str(envs[name_of(p)].get(WORKER_ID_ENV)) for p in members)
        want = sorted(str(i) for i in range(spec.hosts))
        if ids != want:
            problems.append(f"{name}: {WORKER_ID_ENV} {', '.join(ids)}, expected {', '.join(want)}")
        if spec.hosts > 1:
            counts = sorted({len((envs[name_of(p)].get(HOSTNAMES_ENV) or "").split(",")) for p in members})
            if counts != [spec.hosts]:
                problems.append(f"{name}: {HOSTNAMES_ENV} lists {counts} hosts, expected {spec.hosts}")
        pools = sorted(pools_of(members, nodes))
        if len(pools) > 1:
            problems.append(f"{name}: hosts on node pools {', '.join(pools)}; a slice is one pool")
    return out


def pools_of(pods: list[dict], nodes: dict[str, dict]) -> set[str]:
    """The node pools the pods are scheduled on."""
    scheduled = [nodes.get(p.get("spec", {}).get("nodeName") or "") for p in pods]
    return {labels_of(n).get(NODE_POOL_LABEL, "?") for n in scheduled if n}


def _slice_check(
    subject: str, group: GroupPlan, pods: list[dict], envs: dict[str, dict], nodes: dict[str, dict]
) -> Check:
    by_slice = slice_problems(group, pods, nodes)
    problems = [p for name in sorted(by_slice) for p in by_slice[name]]
    return Check(
        subject,
        "slices",
        _status(problems),
        listing(problems) or f"{len(by_slice)} slices, {WORKER_ID_ENV} 0..{group.spec.hosts - 1} in each",
    )


def _node_check(subject: str, group: GroupPlan, pods: list[dict], nodes: dict[str, dict]) -> Check:
    problems = []
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name:
            problems.append(f"{name_of(pod)} is not scheduled")
            continue
        node = nodes.get(node_name)
        if node is None:
            problems.append(f"{name_of(pod)} runs on {node_name}, which is not a node of the cluster")
            continue
        problems += [
            f"{node_name} {key}={labels_of(node).get(key)!r}, expected {value!r}"
            for key, value in group.selector.items()
            if labels_of(node).get(key) != value
        ]
    return Check(
        subject,
        "nodes",
        _status(problems),
        listing(problems) or "every pod on a node with " + ", ".join(f"{k}={v}" for k, v in group.selector.items()),
    )


def slice_of_pods(pods: list[dict]) -> dict[str, str]:
    """Each worker pod's slice (its TPU_NAME, the webhook's <group>-<replica>), by pod name; pods without one are
    left out."""
    out = {}
    for pod in pods:
        container = tpu_container(pod.get("spec", {}))
        name = _env(container).get(NAME_ENV) if container else None
        if name:
            out[name_of(pod)] = name
    return out


# --- Ray's own view ------------------------------------------------------------------------------------------------


def ray_nodes_of_state_api(answer: Any) -> Optional[list[dict]]:
    """The nodes of a Ray dashboard's `GET /api/v0/nodes` answer in the shape of `ray.nodes()`, which the smoke
    test's label checks read; None when the answer is not a successful one.

    The state API answers `{"result": true, "data": {"result": {"result": [NodeState, ...]}}}`, each NodeState with
    `node_id`, `node_ip`, `state` (ALIVE or DEAD), `labels` and `resources_total` (Ray 2.55
    ray/dashboard/modules/state/state_head.py, ray/util/state/common.py NodeState)."""
    if not (isinstance(answer, dict) and answer.get("result") is True):
        return None
    rows = field_at(answer, ("data", "result", "result"))
    if not isinstance(rows, list):
        return None
    return [
        {
            "NodeID": n.get("node_id", ""),
            "NodeManagerAddress": n.get("node_ip", ""),
            "Alive": n.get("state") == "ALIVE",
            "Labels": n.get("labels") or {},
            "Resources": n.get("resources_total") or {},
        }
        for n in rows
        if isinstance(n, dict)
    ]


def ray_view_checks(
    subject: str, group: GroupPlan, ray_nodes: Optional[list[dict]], expected_slices: int, error: str = ""
) -> tuple[list[Check], dict[str, list[str]]]:
    """Ray's view of one TPU worker group: as many whole, correctly labelled slices as the group has pods for, each
    with the slice's hosts. Returns the checks and, per Ray slice name, what is wrong with it (empty: whole).

    `ray_nodes` is None when the head did not answer (`error` says why): the check fails, it is never skipped."""
    subject = f"{subject} group {group.group}"
    if ray_nodes is None:
        return [Check(subject, "ray view", FAIL, f"the Ray head did not answer: {error or 'no answer'}")], {}
    observed = ray_labels.observe(ray_nodes, group.group)
    found, _ = ray_labels.label_checks(observed, group.spec, expected_slices)
    problems = [f"{c.slice + ': ' if c.slice else ''}{c.name}: {c.detail}" for c in found if c.status == FAIL]
    per_slice: dict[str, list[str]] = {name: [] for name in observed.slices}
    for c in found:
        if c.slice and c.status == FAIL:
            per_slice[c.slice].append(c.name)
    detail = (
        listing(problems)
        if problems
        else f"{len(observed.slices)} slices of {group.spec.hosts} hosts with ray.io/tpu-* labels as declared"
    )
    return [Check(subject, "ray view", _status(problems), detail)], per_slice
