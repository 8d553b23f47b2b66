"""The serving report's arithmetic on what a run saw (the same lines for local and live runs): start-up phases, cost
per million requests from the plan's price and the billed node time, the autoscaler's reaction from Serve's own
state, idle cost, and report.md's first line. Synthetic observations, no Ray."""

from __future__ import annotations

import functools

import pytest

from plan.compare import __main__ as compare_cli
from plan.compare.serving import markdown, patterns, report, serve_state, services


@functools.lru_cache(maxsize=None)
def _sides():
    plan, values = compare_cli.load_plan("compare")
    return tuple(services.services(plan, values))


def tpu_side() -> services.ServiceSide:
    return next(s for s in _sides() if s.kind == "tpu")


def outcomes(pattern: patterns.Pattern, latency: float, fail=()):
    return [{"label": label, "due": due, "sent": due, "done": due + latency, "status": 500 if i in fail else 200,
             "error": "http 500" if i in fail else None} for i, (due, label) in enumerate(pattern.schedule())]


def replica(rid, state, started=1030.0):
    return {"id": rid, "state": state, "startedAt": started, "node": "n"}


STEADY, BURST = patterns.steady(2, 5), patterns.burst(1, 10, 2, 4, 2)
SPARSE = patterns.sparse(2, 20, downscale_delay_s=10)


def seen() -> dict:
    return {
        "name": "serve-tpu", "appliedAt": 1000.0, "podReadyAt": 1014.0, "problems": [],
        "cold": {"pattern": "cold", "startedAt": 1010.0, "outcomes": [
            {"label": "cold", "due": 0.0, "sent": 0.0, "done": 9.0, "status": 200, "error": None,
             "reply": {"replica": {"startedAt": 1015.0, "loadS": 1.0, "compileS": 0.5, "platform": "tpu"}}}]},
        "nodes": [{"name": "n1", "requestedAt": 1010.5, "readyAt": 1013.0, "removedAt": 1060.0}],
        "patterns": {
            "steady": {"startedAt": 1020.0, "endedAt": 1025.5,
                       "run": {"pattern": "steady", "startedAt": 1020.0, "outcomes": outcomes(STEADY, 0.1, fail=(3,))}},
            "burst": {"startedAt": 1030.0, "endedAt": 1038.5,
                      "run": {"pattern": "burst", "startedAt": 1030.0, "outcomes": outcomes(BURST, 0.2)}},
            "sparse": {"startedAt": 1040.0, "endedAt": 1081.0,
                       "run": {"pattern": "sparse", "startedAt": 1040.0, "outcomes": outcomes(SPARSE, 1.0)}}},
        "samples": [
            {"at": 1005.0, "appStatus": "RUNNING", "status": "HEALTHY", "target": 0, "replicas": []},
            {"at": 1031.0, "appStatus": "RUNNING", "status": "HEALTHY", "target": 1,
             "replicas": [replica("a", "RUNNING")]},
            {"at": 1033.0, "appStatus": "RUNNING", "status": "UPSCALING", "target": 2,
             "replicas": [replica("a", "RUNNING")]},
            {"at": 1035.0, "appStatus": "RUNNING", "status": "UPSCALING", "target": 2,
             "replicas": [replica("a", "RUNNING"), replica("b", "STARTING")]},
            {"at": 1036.5, "appStatus": "RUNNING", "status": "HEALTHY", "target": 2,
             "replicas": [replica("a", "RUNNING"), replica("b", "RUNNING")]}],
    }


def build(observed=None):
    return report.build("compare", "live", "run-1", [tpu_side()], [observed or seen()], [STEADY, BURST, SPARSE],
                        slo_ms=150.0, context="ctx")


def test_cold_start_phases_are_the_observed_times_between_creation_and_the_first_answer():
    entry = build()["serving"][0]
    cold = entry["coldStartS"]
    assert {k: cold[k] for k in ("totalS", "rayStartS", "capacityAndNodeS", "podAndImageS", "replicaStartS",
                                 "firstResponseS")} == {"totalS": 19.0, "rayStartS": 10.0, "capacityAndNodeS": 3.0,
                                                        "podAndImageS": 1.0, "replicaStartS": 2.5,
                                                        "firstResponseS": 2.5}
    assert entry["replicaStartup"] == {"loadS": 1.0, "compileS": 0.5, "platform": "tpu"}


def test_cost_per_million_is_the_billed_node_time_at_the_plans_price_over_the_answered_requests():
    side = tpu_side()
    steady = build()["serving"][0]["patterns"]["steady"]
    assert (steady["requests"], steady["errors"], steady["billedNodeS"]) == (10, 1, 5.5)
    assert steady["costPerMillionUsd"] == pytest.approx(5.5 * side.node_hourly / 3600 / 9 * 1e6, rel=1e-4)
    # The node went at 1060: the sparse pattern (1040 to 1081) pays for 20 s of it.
    sparse = build()["serving"][0]["patterns"]["sparse"]
    assert sparse["billedNodeS"] == 20.0
    assert sparse["sentAtZeroReplicas"] == [False, False]  # Serve's last state before 1060 and 1080: 2 RUNNING


def test_autoscale_reaction_is_read_from_serves_replica_states():
    entry = build()["serving"][0]
    assert entry["autoscaleReactionS"] == 4.5  # step at 1032 (2 s at the low rate), replica b RUNNING at 1036.5
    assert (entry["autoscale"]["decisionS"], entry["autoscale"]["fromReplicas"], entry["autoscale"]["toReplicas"],
            entry["autoscale"]["replica"]) == (1.0, 1, 2, "b")


def test_no_upscale_decision_is_a_missing_measure_with_its_reason():
    observed = seen()
    observed["samples"] = [s for s in observed["samples"] if s["at"] < 1033]
    document = build(observed)
    assert document["serving"][0]["autoscaleReactionS"] is None and document["complete"] is False
    assert any(p.startswith("serve-tpu: autoscaleReactionS: Serve raised no replica target after the burst's step")
               for p in document["problems"])


def test_an_added_replica_stopped_before_it_ran_is_told_apart_from_no_decision():
    observed = seen()
    for sample in observed["samples"]:  # replica b started and was stopped, never RUNNING
        sample["replicas"] = [r for r in sample["replicas"] if r["id"] != "b" or r["state"] != "RUNNING"]
    document = build(observed)
    assert document["serving"][0]["autoscaleReactionS"] is None
    assert ("serve-tpu: autoscaleReactionS: Serve raised its replica target from 1 to 2 1.0 s after the burst's step, "
            "and no added replica was seen RUNNING after it") in "\n".join(document["problems"])


def test_a_target_raised_before_the_step_is_named_as_such():
    observed = seen()
    for sample in observed["samples"]:  # Serve asked for 2 replicas during the low rate already (step at 1032)
        if 1031.0 <= sample["at"] < 1036.5:
            sample["target"] = 2
    document = build(observed)
    assert document["serving"][0]["autoscaleReactionS"] is None
    assert ("serve-tpu: autoscaleReactionS: Serve had raised its replica target to 2 before the burst's step, with 1 "
            "RUNNING") in "\n".join(document["problems"])


def test_highest_rate_under_the_objective_comes_from_the_constant_rate_phases():
    entry = build()["serving"][0]
    # steady (2/s) lost a request; the burst's steps (1/s, 10/s) answered every request, in 200 ms: above 150 ms
    assert entry["maxRpsUnderSlo"] == {"sloMs": 150.0, "quantile": "p95", "rps": 0.0, "ratesTried": [1.0, 2.0, 10.0]}
    relaxed = report.build("compare", "live", "r", [tpu_side()], [seen()], [STEADY, BURST, SPARSE], slo_ms=250.0)
    assert relaxed["serving"][0]["maxRpsUnderSlo"]["rps"] == 10.0


def test_idle_cost_is_the_nodes_min_replicas_hold_at_the_plans_price():
    side = tpu_side()
    assert build()["serving"][0]["idleCostPerHourUsd"] == 0  # min_replicas 0
    assert side.nodes_for(1) == 1 and side.nodes_for(2) == 1 and side.nodes_for(3) == 2  # two replicas per host


def test_report_md_names_the_run_and_states_no_ratio():
    document = build()
    text = markdown.render(document, [])
    assert text.splitlines()[0].startswith("# Serving on TPU and GPU, measured live on ctx")
    local = dict(document, mode="local", simulated=True)
    assert markdown.render(local, []).splitlines()[0] == f"# {markdown.REHEARSAL}"
    assert "x)" not in text and "faster" not in text


def test_report_md_says_what_every_request_asked():
    from plan.compare.serving import cli

    document = build()
    generating = markdown.render(dict(document, liveRun={"request": cli.request_body(128)}), [])
    assert "- Every request sent 4 token sequences of 16 ids and asked for 128 greedy tokens after each." in generating
    scoring = markdown.render(dict(document, liveRun={"request": cli.request_body(0)}), [])
    assert "- Every request sent 4 token sequences of 16 ids and asked for their log-likelihood." in scoring
    assert "Every request" not in markdown.render(document, [])  # no request recorded: nothing said


def test_serve_state_samples_read_the_rest_api_document():
    document = {"applications": {"scorer": {"status": "RUNNING", "deployments": {"Scorer": {
        "status": "UPSCALING", "target_num_replicas": 2,
        "replicas": [{"replica_id": "a", "state": "RUNNING", "start_time_s": 5.0, "node_id": "n1"},
                     {"replica_id": "b", "state": "STARTING", "start_time_s": 6.0, "node_id": "n1"}]}}}}}
    found = serve_state.sample(document, "scorer", "Scorer", 7.0)
    assert (found["appStatus"], found["target"], serve_state.running(found)) == ("RUNNING", 2, 1)
    assert serve_state.first_replica([found], 6.5) == {"id": "a", "startedAt": 5.0, "runningAt": 7.0}
