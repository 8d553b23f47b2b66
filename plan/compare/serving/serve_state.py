"""Serve's own state, read the way KubeRay reads it: the Serve REST API on the Ray dashboard (`GET
/api/serve/applications/`, Ray 2.55 python/ray/dashboard/modules/serve/serve_head.py; the document is
ray.serve.schema.ServeInstanceDetails), locally on the dashboard's port, live through `kubectl port-forward` to the
head's 8265. `PUT` of the same path deploys a Serve config (what KubeRay does with serveConfigV2), `DELETE` removes
every application.

Samples keep, per poll, the measured deployment's status, `target_num_replicas` (Serve's autoscaling decision) and
its replicas with their states and `start_time_s`; the pure functions below read replicas over time, the start of the
first replica and the autoscaler's reaction to a load step from them, never from a guess.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

APPLICATIONS_PATH = "/api/serve/applications/"
RUNNING = "RUNNING"  # ray.serve ReplicaState.RUNNING and ApplicationStatus.RUNNING


class ServeApi:
    """The Serve REST API of one Ray dashboard (`base`: http://127.0.0.1:PORT)."""

    def __init__(self, base: str, timeout_s: float = 30.0):
        import httpx

        self.base, self._client = base.rstrip("/"), httpx.Client(timeout=timeout_s, trust_env=False)

    def applications(self) -> dict:
        response = self._client.get(self.base + APPLICATIONS_PATH)
        response.raise_for_status()
        return response.json()

    def deploy(self, config: dict, timeout_s: float = 300.0) -> None:
        """The first PUT also starts Serve (its controller and proxy): on a busy machine, minutes."""
        self._client.put(self.base + APPLICATIONS_PATH, json=config, timeout=timeout_s).raise_for_status()

    def delete(self, timeout_s: float = 120.0) -> None:
        self._client.delete(self.base + APPLICATIONS_PATH, timeout=timeout_s).raise_for_status()

    def close(self) -> None:
        self._client.close()


def sample(document: dict, app: str, deployment: str, at: float) -> dict:
    """One poll's view of the measured deployment."""
    application = (document.get("applications") or {}).get(app) or {}
    details = (application.get("deployments") or {}).get(deployment) or {}
    return {
        "at": at,
        "appStatus": application.get("status"),
        "status": details.get("status"),
        "target": details.get("target_num_replicas"),
        "replicas": [
            {
                "id": r.get("replica_id"),
                "state": r.get("state"),
                "startedAt": r.get("start_time_s"),
                "node": r.get("node_id"),
            }
            for r in details.get("replicas") or []
        ],
    }


def running(s: dict) -> int:
    return sum(1 for r in s["replicas"] if r["state"] == RUNNING)


class Poller:
    """Polls the API every `interval_s` on a thread of its own; `samples` grows until `stop()`."""

    def __init__(
        self,
        read: Callable[[], dict],
        app: str,
        deployment: str,
        interval_s: float = 0.5,
        clock: Callable[[], float] = time.time,
    ):
        self.read, self.app, self.deployment, self.interval_s, self.clock = read, app, deployment, interval_s, clock
        self.samples: list[dict] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()  # a poll from another thread (poll_once) keeps the samples in time order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Poller":
        self._thread.start()
        return self

    def poll_once(self) -> Optional[dict]:
        with self._lock:
            try:
                found = sample(self.read(), self.app, self.deployment, self.clock())
            except Exception as error:  # the API may be down for a moment (head restarting): keep polling, keep count
                self.errors.append(f"{type(error).__name__}: {error}")
                return None
            self.samples.append(found)
            return found

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            self._stop.wait(self.interval_s)

    def stop(self) -> list[dict]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.samples


# --- what the samples say ----------------------------------------------------------------------------------------


def timeline(samples: list[dict], since: float) -> list[dict]:
    """Replicas over time: seconds from `since`, RUNNING replicas, Serve's target."""
    return [{"t": round(s["at"] - since, 3), "running": running(s), "target": s["target"]} for s in samples]


def first_app_running(samples: list[dict], after: float) -> Optional[float]:
    return next((s["at"] for s in samples if s["at"] >= after and s["appStatus"] == RUNNING), None)


def first_replica(samples: list[dict], after: float) -> Optional[dict]:
    """The first replica seen RUNNING after `after`: its id, when Serve started its actor (`startedAt`) and when a
    poll first saw it RUNNING (`runningAt`)."""
    for s in samples:
        if s["at"] < after:
            continue
        for r in s["replicas"]:
            if r["state"] == RUNNING:
                return {"id": r["id"], "startedAt": r["startedAt"], "runningAt": s["at"]}
    return None


def upscale(samples: list[dict], step_at: float, decided_by: Optional[float] = None) -> Optional[tuple[dict, dict]]:
    """Serve's first upscale decision after a load step at `step_at`: the poll before and the poll at which its
    `target_num_replicas` rose, or None when it did not rise by `decided_by`."""
    after = [s for s in samples if s["at"] > step_at]
    before = [s for s in samples if s["at"] <= step_at]
    previous = before[-1] if before else None
    for s in after:
        if decided_by is not None and s["at"] > decided_by:
            return None
        if previous is not None and (s["target"] or 0) > (previous["target"] or 0):
            return previous, s
        previous = s
    return None


def reaction(samples: list[dict], step_at: float, decided_by: Optional[float] = None) -> Optional[dict]:
    """The autoscaler's reaction to a load step at `step_at`: Serve's first upscale decision after the step
    (`decisionS`, from `upscale`) and when a replica beyond those RUNNING before that decision was seen RUNNING
    (`reactionS`), both from the step. None when Serve raised no target by `decided_by` or no replica came of it."""
    decided = upscale(samples, step_at, decided_by)
    if decided is None:
        return None
    before, decision = decided
    base = running(before)
    known = {r["id"] for r in before["replicas"] if r["state"] == RUNNING}
    for later in (s for s in samples if s["at"] >= decision["at"]):
        added = [r for r in later["replicas"] if r["state"] == RUNNING and r["id"] not in known]
        if running(later) > base and added:
            return {
                "fromReplicas": base,
                "toReplicas": running(later),
                "decisionS": round(decision["at"] - step_at, 3),
                "reactionS": round(later["at"] - step_at, 3),
                "replica": added[0]["id"],
            }
    return None
