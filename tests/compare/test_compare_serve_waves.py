"""How the local serving rehearsal puts sides on its one Ray cluster (plan/compare/serving/local.py): sides of
different accelerators run at once, in one Serve config that keeps each side's application apart, and each side's
simulated nodes are its own. Pure: the compare stack's planned sides, no Ray."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from plan.compare import __main__ as compare_cli
from plan.compare.serving import local, services


@functools.lru_cache(maxsize=None)
def sides() -> tuple[services.ServiceSide, ...]:
    plan, values = compare_cli.load_plan("compare")
    return tuple(services.services(plan, values))


def test_a_tpu_and_a_gpu_side_run_at_once_and_two_of_a_kind_one_after_the_other():
    tpu, gpu = (next(s for s in sides() if s.kind == kind) for kind in ("tpu", "gpu"))
    second_tpu = dataclasses.replace(tpu, name="serve-tpu-b")
    assert [[s.name for s in w] for w in local.waves([tpu, gpu])] == [["serve-tpu", "serve-gpu"]]
    assert [[s.name for s in w] for w in local.waves([tpu, second_tpu, gpu])] == [
        ["serve-tpu", "serve-gpu"], ["serve-tpu-b"]]


def test_one_serve_config_holds_each_sides_application_apart_with_the_local_delays():
    wave = list(sides())
    planned = [s.serve_config for s in wave]
    config = local.local_config(wave, 8123)
    apps = config["applications"]
    assert [a["name"] for a in apps] == [s.name for s in wave]
    assert [a["route_prefix"] for a in apps] == [f"/{s.name}" for s in wave]  # the stack's route is /
    assert config["http_options"] == {"host": "127.0.0.1", "port": 8123} and config["proxy_location"] == "HeadOnly"
    for app, side in zip(apps, wave):
        assert app["import_path"] == side.application["import_path"]
        assert app["runtime_env"]["env_vars"]["LM_PRESET"] == "tiny"
        scaling = app["deployments"][0]["autoscaling_config"]
        assert scaling == {**side.autoscaling, **local.LOCAL_AUTOSCALING}
        assert app["deployments"][0]["ray_actor_options"] == side.deployment["ray_actor_options"]
    assert [s.serve_config for s in wave] == planned  # the plan's own configs untouched


def test_node_spans_follow_each_nodes_events_and_drop_a_node_that_never_registered():
    events = [
        {"event": "node", "action": "requested", "name": "a", "at": 1.0},
        {"event": "node", "action": "requested", "name": "b", "at": 1.5},
        {"event": "node", "action": "ready", "name": "a", "at": 4.0},
        {"event": "node", "action": "failed", "name": "b", "at": 31.5},
        {"event": "node", "action": "removed", "name": "a", "at": 9.0, "why": "idle 1.2 s"},
    ]
    assert local.node_spans(events) == [
        {"name": "a", "requestedAt": 1.0, "readyAt": 4.0, "removedAt": 9.0, "removedBecause": "idle 1.2 s"}]


def test_the_first_request_waits_for_the_wave_and_the_patterns_follow_at_once(monkeypatch):
    from plan.compare.serving import drive, load, patterns

    calls = []
    monkeypatch.setattr(load, "run", lambda pattern, *a, **k: calls.append(pattern.name) or load.LoadRun(
        pattern.name, 0.0, []))
    chosen = [patterns.steady(2, 1), patterns.burst(1, 2, 1, 1, 1)]
    drive.traffic({"name": "serve-tpu", "patterns": {}}, "http://127.0.0.1:1/", chosen, {}, timeout_s=1,
                  cold_timeout_s=1, say=lambda _: None, ready=lambda: calls.append("ready"))
    assert calls == ["ready", "cold", "steady", "burst"]  # a wait between patterns would let Serve scale to zero


def test_a_side_that_fails_breaks_the_waves_barrier_so_the_other_side_stops_waiting():
    import threading

    class Failed:  # Serve's state: the side's application could not deploy
        def applications(self):
            return {"applications": {"serve-tpu": {"status": "DEPLOY_FAILED"}}}

    tpu = next(s for s in sides() if s.kind == "tpu")
    together, seen = threading.Barrier(2), {"name": tpu.name, "patterns": {}}
    failures = local._at_once([together.wait, lambda: local._drive(Failed(), 1, tpu, seen, [], {}, 1.0, together,
                                                                    lambda _: None)])
    assert sorted(type(f).__name__ for f in failures) == ["BrokenBarrierError", "DriveError"]
    assert "endedAt" in seen


def test_a_runs_overrides_replace_the_local_delays_and_are_checked():
    wave = list(sides())
    overrides = local.parse_autoscaling("downscale_delay_s=600, look_back_period_s=2")
    assert overrides == {"downscale_delay_s": 600.0, "look_back_period_s": 2.0}
    scaling = local.local_config(wave, 8123, overrides)["applications"][0]["deployments"][0]["autoscaling_config"]
    assert scaling["downscale_delay_s"] == 600.0 and scaling["look_back_period_s"] == 2.0
    assert scaling["upscale_delay_s"] == local.LOCAL_AUTOSCALING["upscale_delay_s"]
    for bad in ("downscale_delay_s=0", "downscale_delay_s=nan", "min_replicas=1", "downscale_delay_s", "x=inf"):
        with pytest.raises(ValueError, match="--local-autoscaling"):
            local.parse_autoscaling(bad)


def test_the_local_look_back_outlasts_the_interval_at_which_handles_push_their_samples():
    # Ray 2.60 pushes every metrics_interval_s (10 s by default), which the rehearsal's look-back (seconds) must exceed.
    assert local.LOCAL_AUTOSCALING["look_back_period_s"] > local.LOCAL_AUTOSCALING["metrics_interval_s"]
    assert local.parse_autoscaling("metrics_interval_s=2,look_back_period_s=2.5") == {
        "metrics_interval_s": 2.0, "look_back_period_s": 2.5}
    for bad in ("look_back_period_s=1", "metrics_interval_s=3", "metrics_interval_s=4,look_back_period_s=2"):
        with pytest.raises(ValueError, match=r"look_back_period_s \S+ is not above metrics_interval_s"):
            local.parse_autoscaling(bad)


class _Api:
    """Serve's state as a list of (target, RUNNING replicas) polls; the last one repeats."""

    def __init__(self, polls):
        self.polls = list(polls)

    def applications(self):
        target, running = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        replicas = [{"replica_id": str(i), "state": "RUNNING"} for i in range(running)]
        if target > running:
            replicas.append({"replica_id": "new", "state": "STARTING"})
        return {"applications": {"app": {"deployments": {"D": {"target_num_replicas": target, "replicas": replicas}}}}}


def test_settle_waits_until_serves_target_is_running_and_guards_a_hang():
    from plan.compare.serving import drive

    clock = iter(range(10_000)).__next__
    api = _Api([(2, 1), (2, 1), (2, 2)])
    drive.settle(api, "app", "D", timeout=100, sleep=lambda s: None, clock=clock)
    assert api.polls == [(2, 2)]  # it polled until the added replica was RUNNING, then stopped
    with pytest.raises(drive.DriveError, match="target not RUNNING within 5 s"):
        drive.settle(_Api([(3, 1)]), "app", "D", timeout=5, sleep=lambda s: None, clock=clock)


class _Half:
    """The Ray half's side of a wave: each command answered at once, no node events."""

    events: list = []

    def send(self, **command):
        pass

    def wait_for(self, kind, timeout, name=None):
        return {"event": kind, "name": name}


class _Serve:
    """One side's application: target 2 with one replica RUNNING until the traffic ends, then both; gone once
    deleted."""

    base = "http://127.0.0.1:8265"

    def __init__(self, app: str):
        self.app, self.settled, self.deleted = app, False, False

    def deploy(self, config):
        pass

    def delete(self):
        self.deleted = True

    def applications(self):
        if self.deleted:
            return {"applications": {}}
        replicas = [{"replica_id": "first", "state": "RUNNING"},
                    {"replica_id": "added", "state": "RUNNING" if self.settled else "STARTING"}]
        deployment = {"target_num_replicas": 2, "replicas": replicas}
        return {"applications": {self.app: {"status": "RUNNING", "deployments": {"D": deployment}}}}


def test_the_wave_records_serves_state_as_the_drive_left_it_before_deleting_the_application():
    # The last pattern's replica may start between two of the poller's polls (every 0.5 s): the state drive.settle saw
    # is polled once more before the deletion, so that the report's reaction finds the added replica RUNNING.
    side = next(s for s in sides() if s.kind == "tpu")
    api = _Serve(local.local_name(side))

    def traffic(seen, url, patterns, body, *, ready, **_):
        ready()
        api.settled = True  # the added replica starts as the last pattern ends

    app = local.LocalApp(deployment=lambda s: "D", traffic=traffic)
    seen = local.run_wave(_Half(), api, 8000, [side], [], None, 60.0, say=lambda line: None, app=app)
    before_deletion = [s for s in seen[0]["samples"] if s["appStatus"] == "RUNNING"]
    assert before_deletion[-1]["target"] == 2 and [r["state"] for r in before_deletion[-1]["replicas"]] == [
        "RUNNING", "RUNNING"]
