"""The local serving comparison (`make compare-serve`): the sides' Serve applications on one local Ray cluster on this
machine, CPU standing in for the TPU host and the GPU node, at once.

This half runs in the project's virtualenv (the plan, httpx); the Ray half, `local_ray.py`, in the workloads
interpreter ($WORKLOADS_PYTHON), which adds and removes each side's simulated nodes as Ray's pending demand and
idleness ask. Sides whose accelerators differ (the TPU side and the GPU side) run at once, in one wave: Ray's demand
for `TPU` or `GPU` says whose replica waits for a node; sides of the same accelerator go in later waves. Their
latencies then share this machine's cores, one more reason the run is a rehearsal. Per wave, the sides' Serve
configs from the plan are deployed in one document through the Serve REST API (as KubeRay deploys serveConfigV2),
with local changes (`local_config`): each application named and routed after its side (one Serve instance holds
them all), Serve's HTTP proxy on a free loopback port and on the head only (every simulated node is this machine),
shorter autoscaling delays (LOCAL_AUTOSCALING), so that a scale-up, a scale-down and a scale-to-zero happen within
seconds, and the small model (LOCAL_ENV_VARS). Then each side's first request (the start from zero) and patterns on
a thread of its own, the first requests sent together; then the applications deleted and the sides' nodes
removed. What was seen goes to `report.build`, the same as for a live run.
"""

from __future__ import annotations

import copy
import functools
import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from . import drive, load, serve_state
from .patterns import Pattern
from .services import ServiceSide

SCRIPT = Path(__file__).resolve().parent / "local_ray.py"
ROOT = Path(__file__).resolve().parent.parent.parent.parent
# Serve's autoscaling locally: seconds, not the stack's minutes (AutoscalingConfig fields, Ray 2.55), as short as keeps
# the decisions steady. Serve samples a replica's ongoing requests five times per look-back, whatever its length (Ray
# 2.55 serve/_private/constants.py RAY_SERVE_AUTOSCALING_METRIC_RECORD_INTERVAL_FACTOR 0.2), and 3 s spans six of the
# steady pattern's requests. A replica busy a fifth of the time can still read idle over one look-back (all five
# samples at zero), so going to zero waits 8 s, several look-backs: at 2 s Serve scaled a replica to zero between
# steady and the burst, and at 5 s one busy a tenth of the time. The downscale delay (2 to 1) is 30 s: a replica
# Serve adds at the burst's step takes 15 to 25 s to start while the burst keeps both cores busy (a worker, JAX, the
# model's first compiles; both sides' at once), up to 35 s beside a process that keeps a core busy, and Serve stops a
# replica that is still starting first when it scales back down (at 2 and 5 s it did in a short burst, at 15 s once
# beside a test suite). Each delay is part of the sparse gap (sparse_gap_s), which must outlast them all.
# The handles (and replicas) push what they recorded to Serve's controller every metrics_interval_s, 10 s by default:
# Ray 2.60 reads this field, deprecated for $RAY_SERVE_{HANDLE,REPLICA}_AUTOSCALING_METRIC_PUSH_INTERVAL_S, which it
# declares but does not read yet (serve/_private/router.py and replica.py, the push task; constants.py). At 10 s, Serve
# saw a burst's queue up to 10 s late, a look-back's samples at a time. Every second here, within the look-back, as
# Serve asks (serve/config.py look_back_period_s_valid: a look-back not above the interval warns, later an error).
LOCAL_AUTOSCALING = {
    "upscale_delay_s": 1.0,
    "downscale_delay_s": 30.0,
    "downscale_to_zero_delay_s": 8.0,
    "look_back_period_s": 3.0,
    "metrics_interval_s": 1.0,
}
LOCAL_IDLE_TIMEOUT_S = 1.0  # the simulated node goes this long after its last replica (the stack's: 60 s)
# The model every local replica serves: workloads.serve_bench reads its size from $LM_PRESET (workloads.lm PRESETS);
# `tiny` answers in milliseconds on this CPU, where the stack's live preset would take seconds.
LOCAL_ENV_VARS = {"LM_PRESET": "tiny"}
APP_TIMEOUT_S = 180.0  # the application RUNNING after its config is applied
COLD_TIMEOUT_S = 180.0  # the first request's answer, a node and a replica started from zero
DRAIN_TIMEOUT_S = 60.0


LocalError = drive.DriveError


LOCAL_BUSY_ALLOWANCE_S = 15.0  # about what a start from zero, or a burst's backlog, takes here


def sparse_gap_s(delays: dict | None = None) -> float:
    """An idle gap long enough locally for Serve to scale to zero and the node to go: what still runs when the gap
    begins (the first gap: what Serve still holds of the pattern before, whose requests the client may have given up
    on; a later one: the sparse request before it, which may itself have started from zero, as the schedule is fixed),
    Serve's look-back draining, each downscale delay (2 to 1, 1 to 0) and the idle timeout, with a margin for polls."""
    delays = delays or LOCAL_AUTOSCALING
    return (
        LOCAL_BUSY_ALLOWANCE_S
        + delays["look_back_period_s"]
        + delays["downscale_delay_s"]
        + delays["downscale_to_zero_delay_s"]
        + LOCAL_IDLE_TIMEOUT_S
        + 4.0
    )


def local_name(side: ServiceSide) -> str:
    """The side's application on the shared local Serve instance: named after the side (RayService names are unique
    in a stack), so that one Serve config holds every side of a wave."""
    return side.name


def local_route(side: ServiceSide) -> str:
    return "/" + side.name + (side.application.get("route_prefix") or "/").rstrip("/")


def autoscaling(overrides: dict | None = None) -> dict:
    """LOCAL_AUTOSCALING with a run's overrides (`--local-autoscaling`)."""
    return {**LOCAL_AUTOSCALING, **(overrides or {})}


# What `--local-autoscaling` may set: the settings above and the requests a replica holds before Serve adds one (Ray
# 2.60 serve/config.py AutoscalingConfig: target_ongoing_requests, a positive number).
OVERRIDABLE = (*LOCAL_AUTOSCALING, "target_ongoing_requests")


def parse_autoscaling(text: str) -> dict:
    """`--local-autoscaling KEY=VALUE,...`: overrides of Serve's autoscaling for the rehearsal (OVERRIDABLE), each a
    positive number (Serve's AutoscalingConfig fields, Ray 2.60 serve/config.py: non-negative delays, a positive
    look-back, interval and target), the look-back still above the push interval once merged with LOCAL_AUTOSCALING."""
    found: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        key, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if key not in OVERRIDABLE or not (0 < number < 86400):
            raise ValueError(
                f"--local-autoscaling: {item!r} is not allowed; allowed: KEY=VALUE joined by commas, KEY one of "
                f"{', '.join(OVERRIDABLE)}, VALUE a number above 0 and below 86400"
            )
        found[key] = number
    merged = autoscaling(found)
    if merged["look_back_period_s"] <= merged["metrics_interval_s"]:
        raise ValueError(
            f"--local-autoscaling: look_back_period_s {merged['look_back_period_s']:g} is not above metrics_interval_s "
            f"{merged['metrics_interval_s']:g}; allowed: a look-back longer than the interval at which Serve's "
            "handles push their samples (Ray 2.60 serve/config.py look_back_period_s_valid)"
        )
    return found


def local_config(sides: list[ServiceSide], serve_port: int, overrides: dict | None = None) -> dict:
    """One Serve config for the sides of a wave: each side's measured application, renamed and routed after its side,
    with the local delays (and a run's `overrides` of them) and model; Serve's HTTP options (one per Serve instance)
    from the first side."""
    config = copy.deepcopy(sides[0].serve_config)
    config["http_options"] = {**(config.get("http_options") or {}), "host": "127.0.0.1", "port": serve_port}
    config["proxy_location"] = "HeadOnly"  # one proxy: every simulated node is this machine, one port each is taken
    config["applications"] = []
    for side in sides:
        app = copy.deepcopy(side.application)
        app.update({"name": local_name(side), "route_prefix": local_route(side)})
        runtime_env = app.setdefault("runtime_env", {})
        runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **LOCAL_ENV_VARS}
        for deployment in app.get("deployments") or []:
            if isinstance(deployment.get("autoscaling_config"), dict):
                deployment["autoscaling_config"].update(autoscaling(overrides))
        config["applications"].append(app)
    return config


@dataclass(frozen=True)
class LocalApp:
    """What a local run deploys and sends, the rest of it shared: the wave's Serve config (`config(sides,
    serve_port)`), the deployment whose replicas are read (`deployment(side)`), and the traffic once the application
    is RUNNING (`traffic`, drive.traffic's signature: the request-serving app's by default, the LLM comparison's
    streamed token load in plan/compare/llm)."""

    config: Callable[[list[ServiceSide], int], dict] = local_config
    deployment: Callable[[ServiceSide], "str | None"] = lambda side: side.deployment.get("name")
    traffic: Callable = drive.traffic


SERVE_APP = LocalApp()


def waves(sides: list[ServiceSide]) -> list[list[ServiceSide]]:
    """The sides in runs at once, each run holding at most one side per accelerator kind, in the sides' order."""
    runs: list[list[ServiceSide]] = []
    for side in sides:
        wave = next((w for w in runs if all(s.kind != side.kind for s in w)), None)
        if wave is None:
            runs.append([side])
        else:
            wave.append(side)
    return runs


class RayHalf:
    """The Ray half as a subprocess: commands in on stdin, events out on stdout (each a JSON line)."""

    def __init__(self, python: str):
        self.process = subprocess.Popen(
            [python, str(SCRIPT), str(ROOT)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
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

    def wait_for(self, kind: str, timeout: float, name: str | None = None) -> dict:
        """The next event of `kind` (and of the side `name`); a side the Ray half refused is an error."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                event = self._new.get(timeout=min(1.0, max(0.01, deadline - time.time())))
            except queue.Empty:
                if self.process.poll() is not None:
                    raise LocalError(
                        f"the local Ray cluster exited ({self.process.returncode}) before {kind}"
                    ) from None
                continue
            if event["event"] == "refused" and event.get("name") == name:
                raise LocalError(f"the local Ray cluster refused side {name}: {event['message']}")
            if event["event"] == kind and (name is None or event.get("name") == name):
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
    shape = {
        "name": side.name,
        "kind": side.kind,
        "group": side.group,
        "hosts": side.hosts,
        "unitsPerNode": side.units_per_node,
        "maxNodes": side.max_nodes,
        "idleTimeoutS": LOCAL_IDLE_TIMEOUT_S,
        "cpusPerNode": side.replicas_per_node,
    }  # a replica takes 1 CPU (Serve's default num_cpus)
    if side.kind == "tpu":
        shape.update({"generation": side.generation, "topology": side.topology})
    return shape


def run_wave(
    half: RayHalf,
    api: serve_state.ServeApi,
    serve_port: int,
    sides: list[ServiceSide],
    patterns: list[Pattern],
    body,
    timeout_s: float,
    say=print,
    app: LocalApp = SERVE_APP,
) -> list[dict]:
    """The sides of one wave end to end, at once; what was seen of each, in the form report.side_entry reads."""
    first_event = len(half.events)
    for side in sides:
        half.send(cmd="side", side=side_shape(side))
        half.wait_for("side", 30, name=side.name)
    applied = time.time()
    seen = [
        {"name": side.name, "appliedAt": applied, "patterns": {}, "problems": [], "dashboard": api.base}
        for side in sides
    ]
    pollers = [serve_state.Poller(api.applications, local_name(side), app.deployment(side)).start() for side in sides]
    try:
        api.deploy(app.config(sides, serve_port))
        # The sides send their first requests together, so that each pattern meets the others' same pattern.
        together = threading.Barrier(len(sides))
        failures = _at_once(
            [
                lambda side=side, entry=entry: _drive(
                    api,
                    serve_port,
                    side,
                    entry,
                    patterns,
                    body,
                    timeout_s,
                    together,
                    say,
                    app.traffic,
                    app.deployment(side),
                )
                for side, entry in zip(sides, seen)
            ]
        )
        # Serve's state as the sides left it, on record before the deletion: a replica that drive.settle saw RUNNING
        # last may have started since the poller's latest poll.
        for poller in pollers:
            poller.poll_once()
        real = [f for f in failures if not isinstance(f, threading.BrokenBarrierError)]
        if failures:
            raise (real or failures)[0]  # the side's own error, not the barrier another side's broke
    finally:
        for entry in seen:
            entry.setdefault("endedAt", time.time())
        try:
            api.delete()
            for side in sides:
                _wait_gone(api, local_name(side), DRAIN_TIMEOUT_S)
        except Exception as error:  # reported; the nodes are removed all the same
            for entry in seen:
                entry["problems"].append(f"{entry['name']}: the application was not deleted: {error}")
        for side, entry, poller in zip(sides, seen, pollers):
            entry["samples"] = poller.stop()
            entry["pollErrors"] = len(poller.errors)
            half.send(cmd="end", name=side.name)
            half.wait_for("ended", 120, name=side.name)
    events = half.events[first_event:]
    warnings = [e["message"] for e in events if e["event"] == "warning"]  # the cluster's: every side of the wave
    for entry in seen:
        entry["nodes"] = node_spans([e for e in events if e["event"] == "node" and e.get("side") == entry["name"]])
        entry["clusterWarnings"] = warnings
    return seen


def _drive(
    api,
    serve_port: int,
    side: ServiceSide,
    seen: dict,
    patterns,
    body,
    timeout_s: float,
    together,
    say,
    traffic=drive.traffic,
    deployment: "str | None" = None,
) -> None:
    """One side's traffic: its application RUNNING, the first request sent with the other sides of the wave's
    (`together`, broken for them all when this side fails), every pattern."""
    app = local_name(side)
    url = f"http://127.0.0.1:{serve_port}{local_route(side)}"
    try:
        drive.wait_app(api, app, APP_TIMEOUT_S)
        say(f"{side.name}: application {app} RUNNING; the first request, from zero")
        traffic(
            seen,
            url,
            patterns,
            body,
            timeout_s=timeout_s,
            cold_timeout_s=COLD_TIMEOUT_S,
            say=say,
            ready=together.wait,
        )
        if deployment:  # wait for a replica Serve added for the load: a start, as the first request's
            drive.settle(api, app, deployment, COLD_TIMEOUT_S)
    except BaseException:
        together.abort()
        raise
    finally:
        seen["endedAt"] = time.time()


def _one_line_at_a_time(say):
    lock = threading.Lock()

    def locked(line: str) -> None:
        with lock:
            say(line)

    return locked


def _at_once(calls: list) -> list[BaseException]:
    """Each call on a thread of its own, all joined; what they raised."""
    failures: list[BaseException] = []

    def guarded(call) -> None:
        try:
            call()
        except BaseException as error:  # handed to the caller, which raises the first
            failures.append(error)

    threads = [threading.Thread(target=guarded, args=(call,), daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


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
        span = spans.setdefault(e["name"], {"name": e["name"], "requestedAt": None, "readyAt": None, "removedAt": None})
        key = {"requested": "requestedAt", "ready": "readyAt", "removed": "removedAt"}[e["action"]]
        span[key] = e["at"]
        if e["action"] == "removed":
            span["removedBecause"] = e.get("why")
    return list(spans.values())


def run(
    sides: list[ServiceSide],
    patterns: list,
    body,
    python: str,
    *,
    timeout_s: float = load.DEFAULT_TIMEOUT_S,
    autoscaling_overrides: dict | None = None,
    say=print,
    app: LocalApp = SERVE_APP,
) -> tuple[list[dict], dict]:
    """Every side on one local Ray cluster, in waves (`waves`); what was seen of each, and facts of the local run.
    `autoscaling_overrides` replace the request-serving app's local delays (`--local-autoscaling`)."""
    if autoscaling_overrides:
        app = replace(app, config=functools.partial(local_config, overrides=autoscaling_overrides))
    say = _one_line_at_a_time(say)  # the sides' threads report at once
    half = RayHalf(python)
    try:
        started = time.time()
        cluster = half.wait_for("cluster", 300)
        say(f"local Ray cluster up in {time.time() - started:.1f} s (dashboard {cluster['dashboard']})")
        api = serve_state.ServeApi(cluster["dashboard"])
        try:
            seen = [
                entry
                for wave in waves(sides)
                for entry in run_wave(half, api, cluster["servePort"], wave, patterns, body, timeout_s, say, app)
            ]
        finally:
            api.close()
    finally:
        half.close()
    return seen, {
        "clusterStartS": cluster["startS"],
        "localAutoscaling": autoscaling(autoscaling_overrides),
        "localIdleTimeoutS": LOCAL_IDLE_TIMEOUT_S,
    }
