"""The local serving comparison end to end (`make compare-serve`): the compare stack's two RayServices' Serve
application on a real local Ray cluster in the workloads interpreter, CPU standing in for the TPU host and the GPU
node, nodes added and removed as Ray's demand asks, under steady, burst and sparse open-loop traffic; the report
written. One run for the module, many assertions on its artifacts; skipped, saying so, only when there is no
workloads interpreter. The run is the shortest that still obtains every measure, its flags on the command line: a
short steady pattern, a burst whose high step makes Serve add a replica (which then starts within Serve's local
downscale delay, beside other tests too), and one sparse request after the default local gap (longer than Serve's
local downscale delays and the simulated node's idle timeout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, workloads_python
from plan.compare import __main__ as compare_cli
from plan.compare.serving import services

pytestmark = pytest.mark.local_ray


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    python = workloads_python()
    out = tmp_path_factory.mktemp("compare-serve") / "report"
    # An objective a busy two-core machine holds at the steady rate, both sides at once, so that maxRpsUnderSlo finds a
    # rate (the default 500 ms is the user's to judge; here a rehearsal's latencies move with the machine's load).
    shortest = ["--steady-s", "3", "--burst-s", "1,10,1", "--sparse-requests", "1", "--slo-ms", "3000"]
    done = subprocess.run([sys.executable, "-m", "plan.compare", "compare", "--serve", "--local", "--out", str(out),
                           *shortest],
                          cwd=ROOT, env={**os.environ, "WORKLOADS_PYTHON": python}, capture_output=True, text=True,
                          timeout=1200)
    written = out / "report.json"
    if not written.exists():
        pytest.fail(f"no report (exit {done.returncode}):\n{done.stderr[-6000:]}")
    return done, json.loads(written.read_text()), out


def by_kind(document: dict) -> dict:
    return {s["kind"]: s for s in document["serving"]}


def test_make_compare_serve_writes_a_complete_simulated_report_for_both_sides(served):
    done, document, out = served
    assert document["problems"] == [] and done.returncode == 0, done.stderr[-4000:]
    assert document["mode"] == "local" and document["simulated"] is True
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md", "serve-latency.png",
                                                     "serve-replicas.png"]
    assert all((out / name).stat().st_size > 1000 for name in ("serve-latency.png", "serve-replicas.png"))
    assert sorted(by_kind(document)) == ["gpu", "tpu"]
    for side in document["serving"]:
        assert side["simulated"] is True and sorted(side["patterns"]) == ["burst", "sparse", "steady"]
        assert side["application"] == "workloads.serve_bench:app"


def test_start_from_zero_is_split_into_phases_that_add_up(served):
    _, document, _ = served
    for side in document["serving"]:
        cold = side["coldStartS"]
        phases = ("rayStartS", "capacityAndNodeS", "replicaStartS", "firstResponseS")
        assert all(cold[p] >= 0 for p in phases) and cold["capacityAndNodeS"] > 0 and cold["replicaStartS"] > 0
        assert sum(cold[p] for p in phases) == pytest.approx(cold["totalS"], abs=0.05)
        assert all(isinstance(value, float) for value in cold.values())  # every phase a number of seconds
        assert side["replicaStartup"]["platform"] == "cpu" and side["replicaStartup"]["loadS"] > 0


def test_each_pattern_sent_its_schedule_and_measured_latency(served):
    _, document, _ = served
    for side in document["serving"]:
        steady, burst, sparse = (side["patterns"][n] for n in ("steady", "burst", "sparse"))
        assert steady["requests"] == round(steady["params"]["rps"] * steady["params"]["seconds"])
        assert [p["label"] for p in burst["phases"]] == ["low", "high", "after"]
        high = burst["phases"][1]
        assert high["rps"] > burst["phases"][0]["rps"] and high["requests"] > burst["phases"][0]["requests"]
        for name, summary in (("steady", steady), ("burst", burst), ("sparse", sparse)):
            latency = summary["latencyMs"]
            assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
            assert summary["costPerMillionUsd"] > 0 and summary["billedNodeS"] > 0
            assert len(side["latenciesMs"][name]) == summary["requests"] - summary["errors"]
        # A sparse request sent while Serve had no replica RUNNING waited for a node and a replica.
        cold = [v for v, zero in zip(sparse["coldLatenciesMs"], sparse["sentAtZeroReplicas"]) if zero]
        assert cold and all(v is not None and v > steady["latencyMs"]["p99"] for v in cold)
        assert side["maxRpsUnderSlo"]["sloMs"] == document["sloMs"] and side["maxRpsUnderSlo"]["rps"] > 0


def test_autoscaling_is_read_from_serves_state_and_nodes_follow_the_demand(served):
    _, document, _ = served
    for side in document["serving"]:
        react = side["autoscale"]
        assert "reactionS" in react, document["problems"]
        assert side["autoscaleReactionS"] == react["reactionS"] > 0
        assert react["toReplicas"] > react["fromReplicas"] and 0 <= react["decisionS"] <= react["reactionS"]
        running = [p["running"] for p in side["timeline"]["replicas"]]
        assert max(running) >= 2 and running[0] == 0 and 0 in running[running.index(max(running)):]
        # The nodes were asked for by Ray's pending demand, and the idle ones removed before the side ended.
        nodes = side["nodes"]
        assert len(nodes) >= 2 and all(n["requestedAt"] <= n["readyAt"] <= n["removedAt"] for n in nodes)
        assert any(n["removedBecause"].startswith("idle") for n in nodes)
        assert side["idleCostPerHourUsd"] == 0 and side["idleNodes"] == 0  # min_replicas 0


def test_costs_are_the_plans_prices_for_the_real_hardware(served):
    _, document, _ = served
    plan, values = compare_cli.load_plan("compare")
    for planned in services.services(plan, values):
        side = next(s for s in document["serving"] if s["name"] == planned.name)
        assert side["nodeHourlyUsd"] == pytest.approx(planned.node_hourly)
        steady = side["patterns"]["steady"]
        answered = steady["requests"] - steady["errors"]
        assert steady["costPerMillionUsd"] == pytest.approx(
            steady["billedNodeS"] * planned.node_hourly / 3600 / answered * 1e6, rel=1e-3)


def test_report_md_says_it_is_a_rehearsal_and_names_no_winner(served):
    _, document, out = served
    text = (out / "report.md").read_text()
    first = text.splitlines()[0]
    assert "rehearsal" in first and "says nothing about a TPU's or a GPU's serving speed or cost" in first
    assert "| serve-tpu | serve-gpu |" in text
    request = document["localRun"]["request"]  # what every request asked, the same on both sides
    assert f"- Every request sent {len(request['sequences'])} token sequences of 16 ids and asked for " \
           f"{request['generate']} greedy tokens after each." in text
    for word in ("faster", "cheaper", "winner", "better", "x)"):
        assert word not in text
