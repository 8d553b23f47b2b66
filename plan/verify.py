"""`python -m plan.verify STACK --context CONTEXT [--kubeconfig FILE] [--skip-smoke]`: after `pulumi up`, does the
live cluster match the stack's plan, and does every TPU slice work?

The stack is planned in-process, offline, by the same program and mocks as `python -m plan`; the cluster is read with
`kubectl ... -o json` (so a test can put a recorded-response `kubectl` on PATH). Checked, one line each:

- every TPU node pool of the plan (Standard mode): as many nodes as the slice has hosts (an autoscaled pool may be at
  zero: skipped, not failed), each Ready and labelled by GKE with the slice's accelerator, topology and machine type,
  and by the stack with its slice;
- every KubeRay object: it exists and is ready; for each TPU worker group of its Ray cluster, the worker pods come in
  whole slices (replicas within the plan's bounds), run, request the plan's chips, carry the TPU webhook's
  environment (TPU_WORKER_ID, TPU_NAME, and TPU_WORKER_HOSTNAMES on multi-host slices) with worker ids 0..hosts-1 per
  slice, and sit on nodes whose labels match the group's node selector, one node pool per slice;
- unless --skip-smoke: for each TPU worker group of a RayCluster or a RayService's active cluster, a RayJob running
  `python -m workloads.tpu_smoke` on that cluster (labels, slice reservation, cross-host psum; labels only on a
  RayService's slices, whose chips the Serve replicas hold); its JSON result.

Exit status: 0 when no check fails (skipped ones say why), 1 when one fails or the cluster cannot be read, 2 when the
configuration is invalid. The Ray image must contain the workloads package (docs/workloads.md).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ray_tpu_gke import admission, catalog, manifests
from ray_tpu_gke.config import ConfigError
from ray_tpu_gke.preflight import PreflightError
from workloads import tpu_smoke
from workloads.slice import SliceSpec

from . import harness, stackfile

PASS, FAIL, SKIP = "pass", "fail", "skip"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE, "About node pools": every node carries its pool's name
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # Kubernetes well-known label: the node's machine type
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
MAX_RAYJOB_NAME = 47  # KubeRay ray-operator/controllers/ray/utils/constant.go MaxRayJobNameLength (53 - 6)
RAY_KIND_PREFIX = "kubernetes:ray.io/v1:"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"


@dataclass
class Check:
    subject: str  # what was checked: "node pool v6e-16-0", "RayCluster ray/train group v6e-16"
    name: str
    status: str
    detail: str

    def to_json(self) -> dict:
        return {"subject": self.subject, "name": self.name, "status": self.status, "detail": self.detail}


# --- what the plan says --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolPlan:
    name: str
    slice: str
    shape: catalog.SliceShape
    autoscaled_from_zero: bool


@dataclass(frozen=True)
class GroupPlan:
    group: str
    spec: SliceSpec
    selector: dict
    replicas: int
    min_replicas: int
    max_replicas: int
    autoscaling: bool


@dataclass
class ObjectPlan:
    kind: str
    namespace: str
    name: str
    groups: list[GroupPlan]
    cluster_selector: Optional[str] = None  # a RayJob on an existing RayCluster

    @property
    def subject(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass
class StackPlan:
    pools: list[PoolPlan] = field(default_factory=list)
    objects: list[ObjectPlan] = field(default_factory=list)


def _generation_of_accelerator(accelerator: str) -> catalog.Generation:
    return next(g for g in catalog.GENERATIONS.values() if g.accelerator == accelerator)


def _tpu_container(pod_spec: dict) -> Optional[dict]:
    """The container that asks for TPU chips (the one the TPU webhook injects its environment into)."""
    return next((c for c in pod_spec.get("containers", [])
                 if catalog.TPU_RESOURCE in ((c.get("resources") or {}).get("limits") or {})), None)


def _group_plan(group: dict, autoscaling: bool) -> Optional[GroupPlan]:
    spec = group["template"]["spec"]
    container = _tpu_container(spec)
    if container is None:
        return None
    selector = dict(spec.get("nodeSelector") or {})
    slice_spec = SliceSpec(_generation_of_accelerator(selector[catalog.ACCELERATOR_LABEL]).name,
                           selector[catalog.TOPOLOGY_LABEL], int(group["numOfHosts"]),
                           int(container["resources"]["limits"][catalog.TPU_RESOURCE]))
    return GroupPlan(group["groupName"], slice_spec, selector, int(group["replicas"]), int(group["minReplicas"]),
                     int(group["maxReplicas"]), autoscaling)


def stack_plan(plan: harness.Plan, config) -> StackPlan:
    """The TPU node pools and KubeRay objects of a plan, with the slice each stands for."""
    out = StackPlan()
    for step in plan.steps:
        inputs = step.inputs
        if step.type == NODE_POOL_TYPE:
            node_config = inputs.get("nodeConfig") or {}
            if catalog.generation_of_machine_type(node_config.get("machineType", "")) is None:
                continue  # the system pool
            slice_name = node_config["labels"][manifests.SLICE_LABEL]
            autoscaling = inputs.get("autoscaling") or {}
            out.pools.append(PoolPlan(inputs["name"], slice_name, config.slice(slice_name).shape,
                                      bool(autoscaling) and autoscaling.get("minNodeCount", 0) == 0))
        elif step.type.startswith(RAY_KIND_PREFIX):
            spec = inputs["spec"]
            cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec
            autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
            groups = [g for g in (_group_plan(g, autoscaling) for g in manifests.tpu_worker_groups(inputs)) if g]
            selector = (spec.get("clusterSelector") or {}).get(CLUSTER_LABEL) if inputs["kind"] == "RayJob" else None
            out.objects.append(ObjectPlan(inputs["kind"], inputs["metadata"]["namespace"], inputs["metadata"]["name"],
                                          groups, selector))
    return out


# --- reading the cluster -------------------------------------------------------------------------------------------

class KubectlError(RuntimeError):
    pass


class Kubectl:
    """kubectl against one context; every read asks for JSON."""

    def __init__(self, context: str, kubeconfig: Optional[Path] = None, executable: str = "kubectl"):
        self.base = [executable, "--context", context] + (["--kubeconfig", str(kubeconfig)] if kubeconfig else [])

    def run(self, *args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise KubectlError(f"{self.base[0]} is not installed or not on PATH") from None
        except subprocess.TimeoutExpired:
            raise KubectlError(f"kubectl {' '.join(args)} did not answer within 120s") from None

    def json(self, *args: str, stdin: Optional[str] = None, missing_ok: bool = False) -> Optional[dict]:
        done = self.run(*args, "-o", "json", stdin=stdin)
        if done.returncode != 0:
            if missing_ok and "(NotFound)" in done.stderr:
                return None
            raise KubectlError(f"kubectl {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise KubectlError(f"kubectl {' '.join(args)} printed no JSON") from None

    def get(self, kind: str, name: str, namespace: str) -> Optional[dict]:
        return self.json("get", kind.lower(), name, "-n", namespace, missing_ok=True)

    def items(self, *args: str) -> list[dict]:
        return (self.json("get", *args) or {}).get("items", [])


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
    annotation uses (components/manifests.py _READY)."""
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


# --- the smoke test ------------------------------------------------------------------------------------------------

def smoke_job_name(group: str) -> str:
    name = f"smoke-{group}"[:MAX_RAYJOB_NAME - 7].rstrip("-") + "-" + secrets.token_hex(3)
    admission.check_dns_label(name, MAX_RAYJOB_NAME)
    return name


def smoke_job(namespace: str, cluster: str, group: GroupPlan, timeout: int, labels_only: bool = False) -> dict:
    """A RayJob that runs the smoke test of one worker group on its existing Ray cluster (KubeRay clusterSelector),
    submitted from a Kubernetes Job (K8sJobMode) whose log carries the result."""
    slices = max(1, group.min_replicas if group.autoscaling else group.replicas)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": smoke_job_name(group.group), "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "ray-tpu-gke",
                                "app.kubernetes.io/component": "post-deploy-check"}},
        "spec": {
            "entrypoint": tpu_smoke.command(group.spec, group.group, slices=slices, timeout=timeout,
                                            labels_only=labels_only),
            "clusterSelector": {CLUSTER_LABEL: cluster},
            "submissionMode": "K8sJobMode",
            "shutdownAfterJobFinishes": False,  # never for a job on an existing cluster
            "activeDeadlineSeconds": timeout + 300,  # the submitter's start and Ray's job start on top
        },
    }


def smoke_verdict(subject: str, group: GroupPlan, job: dict, log: str) -> Check:
    """The smoke check from the RayJob's final status and the result line in its log."""
    status = job.get("status") or {}
    result = tpu_smoke.parse_result(log)
    state = f"jobStatus {status.get('jobStatus') or 'unset'}"
    if result is None:
        tail = " | ".join(line for line in log.strip().splitlines()[-3:])
        return Check(subject, "smoke", FAIL, f"{state}; no smoke result in the job's log{': ' + tail if tail else ''}")
    want = {**group.spec.to_json(), "group": group.group}
    differs = [f"{k} {result.get('expected', {}).get(k)!r} (asked {v!r})" for k, v in want.items()
               if result.get("expected", {}).get(k) != v]
    if differs:
        return Check(subject, "smoke", FAIL, f"the result is for another slice: {', '.join(differs)}")
    failed = [f"{c['name']}{' ' + c['slice'] if c.get('slice') else ''}: {c['detail']}"
              for c in result.get("checks", []) if c.get("status") == FAIL]
    if result.get("ok") and not failed and status.get("jobStatus") == "SUCCEEDED":
        timings = result.get("timings", {})
        passed, skipped = (sum(c.get("status") == s for c in result.get("checks", [])) for s in (PASS, SKIP))
        times = ", ".join(f"{what} {timings[key]}s" for what, key in (("compile", "compile_s"), ("psum", "psum_s"))
                          if key in timings)
        return Check(subject, "smoke", PASS, f"{passed} checks passed, {skipped} skipped on "
                                             f"{', '.join(result.get('slices', {}))}" + (f"; {times}" if times else ""))
    return Check(subject, "smoke", FAIL, f"{state}; " + (_listing(failed) if failed else "the job did not succeed"))


def _finished(status: dict) -> bool:
    return (status.get("jobStatus") in JOB_DONE
            or status.get("jobDeploymentStatus") in DEPLOYMENT_FAILED | {"Complete"})


@dataclass(frozen=True)
class SmokeTarget:
    subject: str  # the Ray object's
    namespace: str
    cluster: str  # the live Ray cluster the group belongs to
    group: GroupPlan
    labels_only: bool = False  # a RayService's slices serve: the smoke test leaves their chips alone


def run_smoke(kubectl: Kubectl, targets: list[SmokeTarget], timeout: int, poll: float, keep: bool,
              clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
              ) -> list[Check]:
    """Submit one smoke RayJob per target, all at once; wait for each; read its result from the log of its submitter
    Job (named as the RayJob in K8sJobMode); delete it unless `keep`."""
    checks, runs = [], []
    wait = timeout + 360  # the RayJob's activeDeadlineSeconds and a minute more
    for target in targets:
        group, namespace = target.group, target.namespace
        subject = f"{target.subject} group {group.group}"
        manifest = smoke_job(namespace, target.cluster, group, timeout, labels_only=target.labels_only)
        try:
            created = kubectl.json("create", "-f", "-", stdin=json.dumps(manifest))
        except KubectlError as error:
            checks.append(Check(subject, "smoke", FAIL, f"could not create the smoke RayJob: {error}"))
            continue
        runs.append((subject, group, namespace, _name(created), clock() + wait))
    for subject, group, namespace, name, deadline in runs:
        try:
            while True:
                job = kubectl.get("RayJob", name, namespace) or {}
                if _finished(job.get("status") or {}) or clock() >= deadline:
                    break
                sleep(poll)
            status = job.get("status") or {}
            if not _finished(status):
                checks.append(Check(subject, "smoke", FAIL, f"RayJob {namespace}/{name} not done within {wait}s "
                                                            f"(jobStatus {status.get('jobStatus') or 'unset'})"))
                continue
            logs = kubectl.run("logs", f"job/{name}", "-n", namespace)
            checks.append(smoke_verdict(subject, group, job, logs.stdout if logs.returncode == 0 else ""))
        finally:
            if not keep:
                kubectl.run("delete", "rayjob", name, "-n", namespace, "--ignore-not-found", "--wait=false")
    return checks


# --- the whole check -----------------------------------------------------------------------------------------------

def verify(stack: StackPlan, kubectl: Kubectl, skip_smoke: bool = False, timeout: int = 1200, poll: float = 10.0,
           keep_jobs: bool = False) -> list[Check]:
    checks: list[Check] = []
    node_list = kubectl.items("nodes")
    nodes = {_name(n): n for n in node_list}
    for pool in stack.pools:
        checks += pool_checks(pool, node_list)
    targets = []
    for obj in stack.objects:
        live = kubectl.get(obj.kind, obj.name, obj.namespace)
        own, cluster = object_checks(obj, live)
        checks += own
        if not obj.groups:
            continue
        reason = None
        if live is None:
            reason = "the object was not found"
        elif obj.kind == "RayJob" and _finished((live.get("status") or {})):
            reason = "the job has finished; its Ray cluster lives only as long as the job"
        elif cluster is None:
            reason = "its Ray cluster is not named in its status yet"
        if reason:
            checks += [Check(f"{obj.subject} group {g.group}", "pods", SKIP, reason) for g in obj.groups]
            continue
        pods = kubectl.items("pods", "-n", obj.namespace, "-l", f"{CLUSTER_LABEL}={cluster},{NODE_TYPE_LABEL}=worker")
        for group in obj.groups:
            checks += group_checks(obj.subject, group, [p for p in pods if _labels(p).get(GROUP_LABEL) == group.group],
                                   nodes)
            if obj.kind == "RayJob":
                continue  # a RayJob's own cluster lives as long as its job: the smoke test runs on the long-lived ones
            if skip_smoke:
                checks.append(Check(f"{obj.subject} group {group.group}", "smoke", SKIP, "--skip-smoke"))
            elif group.max_replicas == 0:
                checks.append(Check(f"{obj.subject} group {group.group}", "smoke", SKIP, "the group has no slices "
                                                                                          "(maxReplicas 0)"))
            else:
                targets.append(SmokeTarget(obj.subject, obj.namespace, cluster, group,
                                           labels_only=obj.kind == "RayService"))
    if targets:
        checks += run_smoke(kubectl, targets, timeout, poll, keep_jobs)
    return checks


def report(checks: list[Check], out=None) -> None:
    out = out or sys.stdout
    width = max((len(f"{c.subject}: {c.name}") for c in checks), default=0)
    for c in checks:
        print(f"{c.status.upper():4}  {f'{c.subject}: {c.name}':{width}}  {c.detail}", file=out)
    counts = {s: sum(c.status == s for c in checks) for s in (PASS, FAIL, SKIP)}
    print(f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped", file=out)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m plan.verify", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--context", required=True, help="the kubeconfig context of the stack's cluster")
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: kubectl's)")
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    parser.add_argument("--skip-smoke", action="store_true", help="do not run the TPU smoke test RayJobs")
    parser.add_argument("--timeout", type=int, default=1200,
                        help="seconds each smoke test may take, scale-up from zero included (default 1200)")
    parser.add_argument("--poll", type=float, default=10.0, help="seconds between RayJob status reads (default 10)")
    parser.add_argument("--keep-jobs", action="store_true", help="leave the smoke RayJobs in place to inspect them")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON instead of lines")
    args = parser.parse_args(argv)
    if args.timeout < 1 or args.poll < 0:
        parser.error("--timeout must be positive and --poll not negative")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        values, secret_keys, config = stackfile.load_checked(args.stack, args.config_file)
        plan = harness.run_program(args.stack, values, secret_keys)
    except (ConfigError, stackfile.StackNotFound) as error:
        return stackfile.report(error)
    except PreflightError as error:
        print(f"error: deploy-time check failed: {error}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    if shutil.which("kubectl") is None:
        print("error: kubectl is not on PATH", file=sys.stderr)
        return stackfile.EXIT_ERROR
    kubectl = Kubectl(args.context, args.kubeconfig)
    try:
        checks = verify(stack_plan(plan, config), kubectl, skip_smoke=args.skip_smoke, timeout=args.timeout,
                        poll=args.poll, keep_jobs=args.keep_jobs)
    except KubectlError as error:
        print(f"error: cannot read the cluster: {error}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    ok = not any(c.status == FAIL for c in checks)
    if args.json:
        print(json.dumps({"stack": args.stack, "context": args.context, "ok": ok,
                          "checks": [c.to_json() for c in checks]}, indent=2))
    else:
        report(checks)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    sys.exit(main())
