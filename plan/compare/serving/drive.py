"""What a serving run does once a side's Serve application is up, the same locally and live: wait for Serve's
application RUNNING, send the first request (the start from zero), then each pattern; what was sent and answered is
kept in the form report.py reads."""

from __future__ import annotations

import time

from . import load, serve_state
from .patterns import Pattern, Phase

APP_TIMEOUT_S = 600.0  # the application RUNNING (live: the head pod scheduled and pulled first)
COLD_TIMEOUT_S = 900.0  # the first request's answer: a node, a pod, a replica started from zero
COLD = Pattern("cold", (Phase("cold", 1.0, 1.0),))  # one request, sent at once


class DriveError(RuntimeError):
    pass


def wait_app(api: serve_state.ServeApi, app: str, timeout: float, sleep=time.sleep, clock=time.time) -> float:
    deadline = clock() + timeout
    while clock() < deadline:
        try:
            status = ((api.applications().get("applications") or {}).get(app) or {}).get("status")
        except Exception:  # the dashboard not up yet
            status = None
        if status == serve_state.RUNNING:
            return clock()
        if status == "DEPLOY_FAILED":
            raise DriveError(f"Serve could not deploy application {app}")
        sleep(0.5)
    raise DriveError(f"application {app} not RUNNING within {timeout:.0f} s")


def run_json(run: load.LoadRun) -> dict:
    return {
        "pattern": run.pattern,
        "startedAt": run.started_at,
        "outcomes": [{**o.to_json(), **({"reply": o.reply} if o.reply is not None else {})} for o in run.outcomes],
    }


def traffic(
    seen: dict,
    url: str,
    patterns: list[Pattern],
    body: dict,
    *,
    timeout_s: float,
    cold_timeout_s: float,
    say=print,
    ready=lambda: None,
) -> None:
    """The first request, then every pattern, into `seen` ("cold", "patterns"); `ready()` returns when the first
    request may leave (locally: when every side of the wave is there, so that the sides start together). The patterns
    follow at once: a wait between them would leave the service idle, and a service at min_replicas 0 would scale to
    zero in it."""
    ready()
    seen["cold"] = run_json(load.run(COLD, url, body, timeout_s=cold_timeout_s, keep_replies=True))
    for pattern in patterns:
        say(f"{seen['name']}: {pattern.name}, {pattern.requests} requests over {pattern.duration_s:g} s")
        # Sparse requests meet a service scaled to zero: each may wait for a node and a replica.
        done = load.run(pattern, url, body, timeout_s=cold_timeout_s if pattern.gap_s else timeout_s)
        seen["patterns"][pattern.name] = {"startedAt": done.started_at, "endedAt": time.time(), "run": run_json(done)}


def settle(
    api: serve_state.ServeApi, app: str, deployment: str, timeout: float, sleep=time.sleep, clock=time.time
) -> None:
    """After the last pattern: wait until Serve's target for the measured deployment is what it has RUNNING (a
    replica Serve added for the load has started, or Serve gave it up), so that the report reads the autoscaler's
    reaction from Serve's state instead of racing it. A hang guard: DriveError after `timeout`."""
    deadline = clock() + timeout
    while clock() < deadline:
        try:
            now = serve_state.sample(api.applications(), app, deployment, clock())
        except Exception:  # the API may be down for a moment: poll again
            now = None
        if now is not None and (now["target"] is None or now["target"] <= serve_state.running(now)):
            return
        sleep(0.5)
    raise DriveError(f"application {app}: Serve's replica target not RUNNING within {timeout:.0f} s")
