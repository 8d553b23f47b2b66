"""The live serving comparison: per side, a fresh RayService from the stack's spec (services.run_manifest) created
with kubectl, its head pod found and port-forwarded (the dashboard's 8265 for the Serve REST API, Serve's 8000 for
requests), the same traffic as locally (drive.py), Serve's state polled through the API, the worker pods and nodes
watched through kubectl (creation, Ready, removal), and the RayService deleted after. What was seen goes to
report.build, the same as for a local run.

Kubernetes times are the API server's (`metadata.creationTimestamp`, a condition's `lastTransitionTime`: whole
seconds), the requests' and Serve's this machine's; GKE nodes keep time by NTP.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from datetime import datetime
from typing import Callable, Optional

from . import drive, serve_state
from .patterns import Pattern
from .services import ServiceSide, run_manifest

DASHBOARD_PORT, SERVE_PORT = 8265, 8000  # the head's dashboard and Serve's HTTP proxy (KubeRay's defaults)
CLUSTER_LABEL, TYPE_LABEL = "ray.io/cluster", "ray.io/node-type"  # KubeRay's pod labels
POLL_S = 5.0


class LiveError(RuntimeError):
    pass


def epoch(timestamp: Optional[str]) -> Optional[float]:
    """An API server time (RFC 3339, `2026-12-01T11:09:08Z`, fractions accepted) as epoch seconds."""
    if not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def ready_at(obj: dict) -> Optional[float]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return epoch(condition.get("lastTransitionTime"))
    return None


def port_forward(kubectl, namespace: str, target: str, port: int, timeout_s: float = 60.0):
    """`kubectl port-forward` to a free loopback port: (http://127.0.0.1:PORT, the process to end)."""
    process = subprocess.Popen(
        [*kubectl.base, "port-forward", "-n", namespace, target, f":{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        line = process.stdout.readline()
        found = re.search(r"Forwarding from 127\.0\.0\.1:(\d+)", line or "")
        if found:
            return f"http://127.0.0.1:{found.group(1)}", process
        if process.poll() is not None:
            break
    process.kill()
    raise LiveError(f"kubectl port-forward {target} {port} did not start: {process.stderr.read()[-500:]}")


class ClusterWatch:
    """Every `poll_s`: the RayCluster's worker pods (Ready time, node) and the nodes they run on (creation, Ready,
    and the first poll that no longer sees them)."""

    def __init__(self, kubectl, namespace: str, cluster: str, poll_s: float = POLL_S, clock=time.time):
        self.kubectl, self.namespace, self.cluster, self.poll_s, self.clock = kubectl, namespace, cluster, poll_s, clock
        self.pods: dict[str, dict] = {}
        self.nodes: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def poll(self) -> None:
        pods = self.kubectl.items(
            "pods", "-n", self.namespace, "-l", f"{CLUSTER_LABEL}={self.cluster},{TYPE_LABEL}=worker"
        )
        for pod in pods:
            name, node = pod["metadata"]["name"], (pod.get("spec") or {}).get("nodeName")
            entry = self.pods.setdefault(name, {"name": name, "node": node, "readyAt": None})
            entry["node"] = node or entry["node"]
            entry["readyAt"] = entry["readyAt"] or ready_at(pod)
        wanted = {p["node"] for p in self.pods.values() if p["node"]}
        seen = {}
        for node in self.kubectl.items("nodes") if wanted else []:
            if node["metadata"]["name"] in wanted:
                seen[node["metadata"]["name"]] = node
        for name in wanted:
            entry = self.nodes.setdefault(name, {"name": name, "createdAt": None, "readyAt": None, "removedAt": None})
            if name in seen:
                entry["createdAt"] = entry["createdAt"] or epoch(seen[name]["metadata"].get("creationTimestamp"))
                entry["readyAt"] = entry["readyAt"] or ready_at(seen[name])
            elif entry["createdAt"] is not None and entry["removedAt"] is None:
                entry["removedAt"] = self.clock()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:  # a failed read is retried at the next poll
                pass
            self._stop.wait(self.poll_s)

    def start(self) -> "ClusterWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.poll()


def _wait_head(kubectl, side: ServiceSide, name: str, timeout: float, sleep, clock) -> tuple[str, dict]:
    """The RayService's RayCluster name and its head pod, once Ready."""
    deadline = clock() + timeout
    while clock() < deadline:
        obj = kubectl.get("rayservice", name, side.namespace) or {}
        status = obj.get("status") or {}
        cluster = (status.get("pendingServiceStatus") or {}).get("rayClusterName") or (
            status.get("activeServiceStatus") or {}
        ).get("rayClusterName")
        if cluster:
            heads = kubectl.items("pods", "-n", side.namespace, "-l", f"{CLUSTER_LABEL}={cluster},{TYPE_LABEL}=head")
            ready = [p for p in heads if ready_at(p) is not None]
            if ready:
                return cluster, ready[0]
        sleep(POLL_S)
    raise LiveError(f"RayService {side.namespace}/{name}: no head pod Ready within {timeout:.0f} s")


def run_side(
    kubectl,
    side: ServiceSide,
    run_id: str,
    patterns: list[Pattern],
    body: dict,
    *,
    timeout_s: float,
    forward: Callable = port_forward,
    keep: bool = False,
    poll_s: float = POLL_S,
    sleep=time.sleep,
    clock=time.time,
    say=print,
    traffic: Callable = drive.traffic,
    deployment: Optional[str] = None,
) -> dict:
    """One side's run; `traffic` (drive.traffic's signature) sends the load once the application is RUNNING (the LLM
    comparison's runs it from a Job in the cluster), `deployment` names the deployment whose replicas are read."""
    manifest = run_manifest(side, run_id)
    name = manifest["metadata"]["name"]
    created = kubectl.json("create", "-f", "-", stdin=json.dumps(manifest))
    seen: dict = {
        "name": side.name,
        "service": name,
        "patterns": {},
        "problems": [],
        "appliedAt": epoch(created["metadata"].get("creationTimestamp")) or clock(),
    }
    forwards, poller, watch = [], None, None
    try:
        say(f"{side.name}: RayService {side.namespace}/{name} created; waiting for its head")
        cluster, head = _wait_head(kubectl, side, name, drive.APP_TIMEOUT_S, sleep, clock)
        seen["headReadyAt"], seen["rayCluster"] = ready_at(head), cluster
        watch = ClusterWatch(kubectl, side.namespace, cluster, poll_s, clock).start()
        dashboard, process = forward(kubectl, side.namespace, f"pod/{head['metadata']['name']}", DASHBOARD_PORT)
        forwards.append(process)
        serve, process = forward(kubectl, side.namespace, f"pod/{head['metadata']['name']}", SERVE_PORT)
        forwards.append(process)
        api = serve_state.ServeApi(dashboard)
        app, deployment = side.application.get("name"), deployment or side.deployment.get("name")
        poller = serve_state.Poller(api.applications, app, deployment).start()
        drive.wait_app(api, app, drive.APP_TIMEOUT_S, sleep=sleep, clock=clock)
        say(f"{side.name}: application {app} RUNNING; the first request, from zero")
        url = serve + (side.application.get("route_prefix") or "/")
        traffic(seen, url, patterns, body, timeout_s=timeout_s, cold_timeout_s=drive.COLD_TIMEOUT_S, say=say)
    except (LiveError, drive.DriveError) as error:
        seen["problems"].append(f"{side.name}: {error}")
    finally:
        seen["endedAt"] = clock()
        if poller is not None:
            seen["samples"] = poller.stop()
            seen["pollErrors"] = len(poller.errors)
        for process in forwards:
            process.terminate()
        if not keep:  # first, so that the last look at the nodes sees what the deletion released at once
            kubectl.run("delete", "rayservice", name, "-n", side.namespace, "--wait=false")
        if watch is not None:
            watch.stop()
            seen["nodes"] = list(watch.nodes.values())
            sent = (seen.get("cold") or {}).get("startedAt")
            ready = sorted(
                p["readyAt"] for p in watch.pods.values() if p["readyAt"] and (sent is None or p["readyAt"] >= sent - 1)
            )
            seen["podReadyAt"] = ready[0] if ready else None
            seen["podsReadyAt"] = sorted(p["readyAt"] for p in watch.pods.values() if p["readyAt"])
    return seen


def collect(kubectl, sides: list[ServiceSide], run_id: str, patterns: list[Pattern], body: dict, **options):
    """Both sides, one after the other (they may share nodes of the stack's pools)."""
    return [run_side(kubectl, side, run_id, patterns, body, **options) for side in sides]
