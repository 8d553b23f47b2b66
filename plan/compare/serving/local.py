"""The local serving comparison (`make compare-serve`): both sides' Serve application on one local Ray cluster on this
machine, CPU standing in for the TPU host and the GPU node, one side after the other.

This half runs in the project's virtualenv (the plan, httpx); the Ray half, `local_ray.py`, in the workloads
interpreter ($WORKLOADS_PYTHON), which adds and removes each side's simulated nodes as Ray's pending demand and
idleness ask. Per side: the side's Serve config from the plan is deployed through the Serve REST API (as KubeRay
deploys serveConfigV2), with three local changes (`local_config`): Serve's HTTP proxy on a free loopback port and on
the head only (every simulated node is this machine), and shorter autoscaling delays (LOCAL_AUTOSCALING), so that a
scale-up, a scale-down and a scale-to-zero happen within a minute. Then the first request (the start from zero), the
patterns, and the application deleted and the side's nodes removed. What was seen goes to `report.build`, the same
as for a live run.
"""

from __future__ import annotations

import copy
import json
import queue
import subprocess
import threading
import time
from pathlib import Path

from . import drive, load, serve_state
from .patterns import Pattern
from .services import ServiceSide

SCRIPT = Path(__file__).resolve().parent / "local_ray.py"
ROOT = Path(__file__).resolve().parent.parent.parent.parent
# Serve's autoscaling locally: seconds, not the stack's minutes (AutoscalingConfig fields, Ray 2.55).
# A look-back of 5 s keeps a lightly loaded replica (a request in flight a tenth of the time) from reading as idle.
LOCAL_AUTOSCALING = {"upscale_delay_s": 1.0, "downscale_delay_s": 4.0, "downscale_to_zero_delay_s": 6.0,
                     "look_back_period_s": 5.0}
LOCAL_IDLE_TIMEOUT_S = 2.0  # the simulated node goes this long after its last replica (the stack's: 60 s)
APP_TIMEOUT_S = 180.0  # the application RUNNING after its config is applied
COLD_TIMEOUT_S = 180.0  # the first request's answer, a node and a replica started from zero
DRAIN_TIMEOUT_S = 60.0


LocalError = drive.DriveError


LOCAL_COLD_ALLOWANCE_S = 15.0  # about what a start from zero takes here (a node, a replica, its compile)


def sparse_gap_s() -> float:
    """An idle gap long enough locally for Serve to scale to zero and the node to go after the request before it,
    which itself may have started from zero (the schedule is fixed: the gap counts from that request's send): the
    cold start, Serve's look-back draining, each downscale delay (2 to 1, 1 to 0) and the idle timeout, with a
    margin for polls."""
    return (LOCAL_COLD_ALLOWANCE_S + LOCAL_AUTOSCALING["look_back_period_s"] + LOCAL_AUTOSCALING["downscale_delay_s"]
            + LOCAL_AUTOSCALING["downscale_to_zero_delay_s"] + LOCAL_IDLE_TIMEOUT_S + 3.0)


def local_config(side: ServiceSide, serve_port: int) -> dict:
    config = copy.deepcopy(side.serve_config)
    config["http_options"] = {**(config.get("http_options") or {}), "host": "127.0.0.1", "port": serve_port}
    config["proxy_location"] = "HeadOnly"  # one proxy: every simulated node is this machine, one port each is taken
    for app in config.get("applications") or []:
        for deployment in app.get("deployments") or []:
            if isinstance(deployment.get("autoscaling_config"), dict):
                deployment["autoscaling_config"].update(LOCAL_AUTOSCALING)
    return config


class RayHalf:
    """The Ray half as a subprocess: commands in on stdin, events out on stdout (each a JSON line)."""

    def __init__(self, python: str):
        self.process = subprocess.Popen([python, str(SCRIPT), str(ROOT)], cwd=ROOT, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
        self.events: list[dict] = []
        self._new: "queue.Queue[dict]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # Ray's own lines on stdout
            if isinstance(event, dict) and "event" in event:
                self.events.append(event)
                self._new.put(event)

    def send(self, **command) -> None:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def wait_for(self, kind: str, timeout: float) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                event = self._new.get(timeout=min(1.0, max(0.01, deadline - time.time())))
            except queue.Empty:
                if self.process.poll() is not None:
                    raise LocalError(f"the local Ray cluster exited ({self.process.returncode}) "
                                     f"before {kind}") from None
                continue
            if event["event"] == kind:
                return event
        raise LocalError(f"no {kind} from the local Ray cluster within {timeout:.0f} s")

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send(cmd="stop")
                self.process.wait(timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


def side_shape(side: ServiceSide) -> dict:
    shape = {"name": side.name, "kind": side.kind, "group": side.group, "hosts": side.hosts,
             "unitsPerNode": side.units_per_node, "maxNodes": side.max_nodes, "idleTimeoutS": LOCAL_IDLE_TIMEOUT_S,
             "cpusPerNode": side.replicas_per_node}  # a replica takes 1 CPU (Serve's default num_cpus)
    if side.kind == "tpu":
        shape.update({"generation": side.generation, "topology": side.topology})
    return shape


def run_side(half: RayHalf, api: serve_state.ServeApi, serve_port: int, side: ServiceSide,
             patterns: list[Pattern], body: dict, timeout_s: float, say=print) -> dict:
    """One side end to end; what was seen, in the form report.side_entry reads."""
    app, deployment = side.application.get("name"), side.deployment.get("name")
    url = f"http://127.0.0.1:{serve_port}{side.application.get('route_prefix') or '/'}"
    first_event = len(half.events)
    half.send(cmd="side", side=side_shape(side))
    half.wait_for("side", 30)
    seen: dict = {"name": side.name, "appliedAt": time.time(), "patterns": {}, "problems": []}
    poller = serve_state.Poller(api.applications, app, deployment).start()
    try:
        api.deploy(local_config(side, serve_port))
        drive.wait_app(api, app, APP_TIMEOUT_S)
        say(f"{side.name}: application {app} RUNNING; the first request, from zero")
        drive.traffic(seen, url, patterns, body, timeout_s=timeout_s, cold_timeout_s=COLD_TIMEOUT_S, say=say)
    finally:
        seen["endedAt"] = time.time()
        try:
            api.delete()
            _wait_gone(api, app, DRAIN_TIMEOUT_S)
        except Exception as error:  # reported; the nodes are removed all the same
            seen["problems"].append(f"{side.name}: the application was not deleted: {error}")
        seen["samples"] = poller.stop()
        seen["pollErrors"] = len(poller.errors)
        half.send(cmd="end")
        half.wait_for("ended", 120)
    events = half.events[first_event:]
    seen["nodes"] = node_spans([e for e in events if e["event"] == "node"])
    seen["clusterWarnings"] = [e["message"] for e in events if e["event"] == "warning"]
    return seen


def _wait_gone(api: serve_state.ServeApi, app: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if app not in (api.applications().get("applications") or {}):
            return
        time.sleep(0.3)
    raise LocalError(f"application {app} still there {timeout:.0f} s after its deletion")


def node_spans(events: list[dict]) -> list[dict]:
    """Each node the Ray half added: when it was asked for, Ready (registered) and removed (this machine's clock)."""
    spans: dict[str, dict] = {}
    for e in events:
        if e["action"] == "failed":  # its raylet never registered: no node, nothing billed
            spans.pop(e["name"], None)
            continue
        span = spans.setdefault(e["name"], {"name": e["name"], "requestedAt": None, "readyAt": None,
                                            "removedAt": None})
        key = {"requested": "requestedAt", "ready": "readyAt", "removed": "removedAt"}[e["action"]]
        span[key] = e["at"]
        if e["action"] == "removed":
            span["removedBecause"] = e.get("why")
    return list(spans.values())


def run(sides: list[ServiceSide], patterns: list[Pattern], body: dict, python: str, *,
        timeout_s: float = load.DEFAULT_TIMEOUT_S, say=print) -> tuple[list[dict], dict]:
    """Both sides on one local Ray cluster; what was seen of each, and facts of the local run."""
    half = RayHalf(python)
    try:
        started = time.time()
        cluster = half.wait_for("cluster", 300)
        say(f"local Ray cluster up in {time.time() - started:.1f} s (dashboard {cluster['dashboard']})")
        api = serve_state.ServeApi(cluster["dashboard"])
        try:
            seen = [run_side(half, api, cluster["servePort"], side, patterns, body, timeout_s, say) for side in sides]
        finally:
            api.close()
    finally:
        half.close()
    return seen, {"clusterStartS": cluster["startS"], "localAutoscaling": LOCAL_AUTOSCALING,
                  "localIdleTimeoutS": LOCAL_IDLE_TIMEOUT_S}
