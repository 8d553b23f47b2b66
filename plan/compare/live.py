"""The live collector: creates one fresh RayJob per side from the stack's own spec, follows each through kubectl, and
hands the report builder what the cluster knows (RayJob, pod and node timestamps, events) and the job's log.

Clocks: RayJob, pod and node times are the API server's (whole seconds); event lines and the result are the job's
(its pod's clock); the failure injection and a node's disappearance are this machine's clock at the poll that did or
saw it (at most one poll late). GKE nodes keep their time by NTP, so the three agree to well under a second.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from ray_tpu_gke import bench

from ..verify.kubectl import Kubectl, KubectlError
from .kube import go_duration, timestamp
from .report import Injection, NodeSpan, SideRun
from .sides import SidePlan, run_manifest

# KubeRay's pod labels (ray-operator/controllers/ray/utils/constant.go RayClusterLabelKey, RayNodeGroupLabelKey).
CLUSTER_LABEL, GROUP_LABEL = "ray.io/cluster", "ray.io/group"
# KubeRay RayJob status (ray-operator/apis/ray/v1/rayjob_types.go): KubeRay's deployment status, whose end states end
# the following (Ray's own jobStatus is only the outcome).
DEPLOYMENT_DONE = {"Complete", "Failed", "ValidationFailed"}
WAITING = {None, "", "New", "Initializing", "Waiting"}  # no submitter yet: no log to read
# The kubelet's event when it has pulled an image (kubernetes pkg/kubelet/images/image_manager.go
# EnsureImageExists): `Successfully pulled image "x" in 41.2s (41.3s including waiting). Image size: ...`.
PULLED_REASON = "Pulled"
_DURATION = r"(?:[0-9.]+(?:h|ms|us|µs|ns|m|s))+"  # a Go time.Duration's String()
_PULLED = re.compile(rf"Successfully pulled image \S+ in ({_DURATION})(?: \(({_DURATION}) including waiting\))?")


@dataclass
class PodSeen:
    name: str
    node: Optional[str] = None
    ready_at: Optional[float] = None
    phase: str = ""
    first_attempt: bool = True  # present before the failure was injected
    gone: bool = False


@dataclass
class Followed:
    side: SidePlan
    manifest: dict
    requested_at: Optional[float] = None
    status: dict = field(default_factory=dict)
    cluster: Optional[str] = None
    pods: dict[str, PodSeen] = field(default_factory=dict)
    nodes: dict[str, NodeSpan] = field(default_factory=dict)
    log: str = ""
    injection: Optional[Injection] = None
    injection_problem: Optional[str] = None
    outcome: str = "not started"
    done: bool = False
    created: bool = False

    @property
    def name(self) -> str:
        return self.manifest["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.manifest["metadata"]["namespace"]


def _ready_since(obj: dict) -> Optional[float]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return timestamp(condition.get("lastTransitionTime"))
    return None


def _finished(status: dict) -> bool:
    """KubeRay copies `jobStatus` from Ray as soon as Ray's job ends, before the submitter has printed the job's last
    lines; `jobDeploymentStatus` turns Complete (and `endTime` is set) only after the submitter has ended
    (rayjob_controller.go, kuberay PR #1919). So the deployment status ends the following; `jobStatus` is the
    outcome."""
    return status.get("jobDeploymentStatus") in DEPLOYMENT_DONE


class Collector:
    def __init__(
        self,
        kubectl: Kubectl,
        sides: list[SidePlan],
        run: str,
        seed: int = 0,
        inject_step: Optional[int] = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.kubectl, self.run_id, self.inject_step = kubectl, run, inject_step
        self.clock, self.sleep = clock, sleep
        self.followed = [Followed(s, run_manifest(s, run, seed=seed)) for s in sides]

    # --- one poll ------------------------------------------------------------------------------------------------

    def create(self) -> None:
        for f in self.followed:
            try:
                created = self.kubectl.json("create", "-f", "-", stdin=json.dumps(f.manifest))
            except KubectlError as error:
                f.outcome, f.done = f"could not be created: {error}", True
                continue
            f.created, f.outcome = True, "created"
            f.requested_at = timestamp((created or {}).get("metadata", {}).get("creationTimestamp")) or self.clock()

    def _pods(self, f: Followed, node_list: dict[str, dict]) -> None:
        if not f.cluster:
            return
        live = self.kubectl.items(
            "pods", "-n", f.namespace, "-l", f"{CLUSTER_LABEL}={f.cluster},{GROUP_LABEL}={f.side.group}"
        )
        names = set()
        for pod in live:
            name = pod["metadata"]["name"]
            names.add(name)
            seen = f.pods.get(name)
            if seen is None:
                seen = f.pods[name] = PodSeen(name, first_attempt=f.injection is None)
            seen.node = pod.get("spec", {}).get("nodeName") or seen.node
            seen.phase = (pod.get("status") or {}).get("phase", "")
            if seen.ready_at is None:
                seen.ready_at = _ready_since(pod)
        for name, seen in f.pods.items():
            seen.gone = name not in names
        for seen in f.pods.values():
            if seen.node and seen.node not in f.nodes and seen.node in node_list:
                node = node_list[seen.node]
                f.nodes[seen.node] = NodeSpan(seen.node, timestamp(node["metadata"].get("creationTimestamp")))

    def _nodes(self, f: Followed, node_list: dict[str, dict]) -> None:
        for name, span in f.nodes.items():
            node = node_list.get(name)
            if node is None:
                if span.removed_at is None:
                    span.removed_at = self.clock()  # first poll that no longer sees it
                continue
            if span.ready_at is None:
                span.ready_at = _ready_since(node)
            deleting = timestamp(node["metadata"].get("deletionTimestamp"))
            if deleting is not None:
                span.removed_at = deleting

    def _inject(self, f: Followed) -> None:
        if self.inject_step is None or f.injection is not None or f.injection_problem:
            return
        last = bench.read(f.log).last_step
        if f.done:
            f.injection_problem = (
                f"the job ended at step {last} before step {self.inject_step} was reported"
                if last is not None
                else "the job ended before any step was reported"
            )
            return
        if last is None or last < self.inject_step:
            return
        running = sorted(p.name for p in f.pods.values() if not p.gone and p.phase == "Running")
        if not running:
            return  # reported the step, but no worker pod is Running yet at this poll
        done = self.kubectl.run("delete", "pod", running[0], "-n", f.namespace, "--wait=false")
        if done.returncode != 0:
            f.injection_problem = f"kubectl delete pod {running[0]} failed: {done.stderr.strip()}"
            return
        f.injection = Injection(step=last, at=self.clock(), target=f"pod {running[0]}")

    def poll(self, f: Followed, node_list: dict[str, dict]) -> None:
        job = self.kubectl.json("get", "rayjob", f.name, "-n", f.namespace, missing_ok=True)
        if job is None:
            f.outcome, f.done = "the RayJob disappeared", True
            return
        f.status = job.get("status") or {}
        f.cluster = f.status.get("rayClusterName") or f.cluster
        f.outcome = f.status.get("jobStatus") or f.status.get("jobDeploymentStatus") or "pending"
        self._pods(f, node_list)
        self._nodes(f, node_list)
        if f.status.get("jobStatus") or f.status.get("jobDeploymentStatus") not in WAITING:
            logs = self.kubectl.run("logs", f"job/{f.name}", "-n", f.namespace)
            if logs.returncode == 0 and logs.stdout.strip():
                f.log = logs.stdout  # the latest whole log; kept when the submitter is gone
        f.done = _finished(f.status)
        self._inject(f)

    # --- the run -------------------------------------------------------------------------------------------------

    def follow(self, timeout: float, poll: float) -> None:
        """Poll until every job has ended or `timeout` seconds have passed."""
        deadline = self.clock() + timeout
        while True:
            node_list = {n["metadata"]["name"]: n for n in self.kubectl.items("nodes")}
            for f in self.followed:
                if f.created and not f.done:
                    self.poll(f, node_list)
                elif f.created:
                    self._nodes(f, node_list)
            if all(f.done for f in self.followed):
                return
            if self.clock() >= deadline:
                for f in self.followed:
                    if not f.done:
                        f.outcome = f"timeout: not finished within {timeout:.0f} s ({f.outcome})"
                return
            self.sleep(poll)

    def wait_for_removal(self, seconds: float, poll: float) -> None:
        """Keep watching the side's nodes for up to `seconds`, so that their removal, not the collection, ends what
        they cost."""
        deadline = self.clock() + seconds
        while any(n.removed_at is None for f in self.followed for n in f.nodes.values()) and self.clock() < deadline:
            self.sleep(poll)
            node_list = {n["metadata"]["name"]: n for n in self.kubectl.items("nodes")}
            for f in self.followed:
                self._nodes(f, node_list)

    def cluster_events(self, f: Followed) -> dict:
        """Events of the side's pods and RayJob: counts by reason and the longest image pull."""
        try:
            items = self.kubectl.items("events", "-n", f.namespace)
        except KubectlError:
            return {}
        mine = set(f.pods) | {f.name} | ({f.cluster} if f.cluster else set())
        reasons: dict[str, int] = {}
        pulls = []
        for event in items:
            if (event.get("involvedObject") or {}).get("name") not in mine:
                continue
            reason = event.get("reason", "")
            reasons[reason] = reasons.get(reason, 0) + int(event.get("count") or 1)
            match = _PULLED.search(event.get("message", "")) if reason == PULLED_REASON else None
            if match:
                pulled = go_duration(match.group(2) or match.group(1))
                if pulled is not None:
                    pulls.append(pulled)
        out: dict = {"eventReasons": dict(sorted(reasons.items()))}
        if pulls:
            out["imagePullS"] = max(pulls)
        return out

    def delete_jobs(self) -> None:
        for f in self.followed:
            if f.created:
                self.kubectl.run("delete", "rayjob", f.name, "-n", f.namespace, "--ignore-not-found", "--wait=false")

    def side_runs(self) -> list[SideRun]:
        runs = []
        for f in self.followed:
            first = [p for p in f.pods.values() if p.first_attempt]
            enough = len(first) >= f.side.nodes
            first_nodes = [f.nodes[p.node] for p in first if p.node in f.nodes]
            ready_nodes = [n.ready_at for n in first_nodes]
            nodes_ready = (
                max(ready_nodes)
                if enough and ready_nodes and None not in ready_nodes and len(first_nodes) == len(first)
                else None
            )
            ready_pods = [p.ready_at for p in first]
            pods_ready = max(ready_pods) if enough and ready_pods and None not in ready_pods else None
            if nodes_ready is not None and f.requested_at is not None:
                nodes_ready = max(nodes_ready, f.requested_at)  # nodes that were up already: no wait
            runs.append(
                SideRun(
                    side=f.side,
                    job=f"{f.namespace}/{f.name}",
                    requested_at=f.requested_at,
                    nodes=list(f.nodes.values()),
                    nodes_ready_at=nodes_ready,
                    pods_ready_at=pods_ready,
                    log=f.log,
                    outcome=f.outcome,
                    succeeded=f.status.get("jobStatus") == "SUCCEEDED",
                    ended_at=timestamp(f.status.get("endTime")),
                    inject_step=self.inject_step,
                    injection=f.injection,
                    injection_problem=f.injection_problem
                    or (
                        None
                        if f.injection or self.inject_step is None
                        else f"step {self.inject_step} was never reported ({f.outcome})"
                    ),
                    cluster=self.cluster_events(f) if f.created else {},
                )
            )
        return runs


def collect(
    kubectl: Kubectl,
    sides: list[SidePlan],
    run: str,
    *,
    seed: int = 0,
    inject_step: Optional[int] = None,
    timeout: float = 3600,
    poll: float = 10,
    wait_for_removal: float = 0,
    keep_jobs: bool = False,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[SideRun], float]:
    """Run every side once on the live cluster; what was seen of each, and the collection time."""
    collector = Collector(kubectl, sides, run, seed=seed, inject_step=inject_step, clock=clock, sleep=sleep)
    collector.create()
    try:
        collector.follow(timeout, poll)
        if wait_for_removal > 0:
            collector.wait_for_removal(wait_for_removal, poll)
        runs = collector.side_runs()
    finally:
        if not keep_jobs:
            collector.delete_jobs()
    return runs, clock()
