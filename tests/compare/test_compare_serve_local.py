"""The local serving comparison end to end (`make compare-serve`): the compare stack's two RayServices' Serve
application on a real local Ray cluster in the workloads interpreter, CPU standing in for the TPU host and the GPU
node, nodes added and removed as Ray's demand asks, under steady, sparse and burst open-loop traffic; the report
written. One run for the module, many assertions on its artifacts; skipped, saying so, only when there is no
workloads interpreter.

The run is shortened and arranged so that every event it asserts must happen, whatever the machine's speed: a light
steady pattern (one replica); one sparse request after a gap that outlasts Serve's scale to zero; then a burst whose
high step asks far more than one replica can answer (each request generates many tokens: one second of it keeps a
replica busy for several look-backs), so that Serve must raise its target; the 2-to-1 downscale delay is long
(`--local-autoscaling`), so that Serve cannot stop the replica it adds while that replica starts, and the run waits
for the added replica RUNNING (a hang guard, not a race) before it ends.
Each replica holds two requests before Serve adds one: a request that starts a replica from zero counts twice while
it waits (queued at the proxy's handle and then on the replica), which at one would already ask for a second replica
after the sparse request, before the burst's step.
No assertion compares one measured time with another."""

from __future__ import annotations

import pytest

from compare_runs import compare_locally
from helpers import workloads_python
from plan.compare import __main__ as compare_cli
from plan.compare.serving import local, services

pytestmark = pytest.mark.local_ray

ORDER = ("steady", "sparse", "burst")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    python = workloads_python()
    out = tmp_path_factory.mktemp("compare-serve") / "report"
    # An objective any machine holds at the steady rate, so that maxRpsUnderSlo finds a rate (the default 500 ms is
    # the user's to judge; a rehearsal's latencies move with the machine's load), and no request given up on.
    # The steady pattern holds one replica, so the sparse gap need only outlast Serve's way from one replica to zero
    # (the rehearsal's own rule without the 2-to-1 delay: 31 s; Serve had none RUNNING 9 to 12 s into it in the lane).
    gap = local.sparse_gap_s({**local.LOCAL_AUTOSCALING, "downscale_delay_s": 0.0})
    shortest = ["--patterns", ",".join(ORDER), "--steady-rps", "0.5", "--steady-s", "4", "--sparse-requests", "1",
                "--sparse-gap-s", f"{gap:g}", "--burst-rps", "0.5,30", "--burst-s", "2,1,1", "--tokens", "256",
                "--local-autoscaling", "downscale_delay_s=600,target_ongoing_requests=2", "--slo-ms", "600000", "--request-timeout-s", "600"]
    done, document = compare_locally(out, python, "--serve", *shortest, timeout=1200)
    return done, document, out


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
        # The sparse request met Serve at zero replicas RUNNING (its state, not a guess) and was answered all the same.
        cold = [v for v, zero in zip(sparse["coldLatenciesMs"], sparse["sentAtZeroReplicas"]) if zero]
        assert cold and all(v is not None and v > 0 for v in cold)
        assert side["maxRpsUnderSlo"]["sloMs"] == document["sloMs"] and side["maxRpsUnderSlo"]["rps"] > 0


def test_autoscaling_is_read_from_serves_state_and_nodes_follow_the_demand(served):
    _, document, _ = served
    for side in document["serving"]:
        react = side["autoscale"]
        assert "reactionS" in react, document["problems"]
        assert side["autoscaleReactionS"] == react["reactionS"] > 0
        assert react["toReplicas"] > react["fromReplicas"] and 0 <= react["decisionS"] <= react["reactionS"]
        # From zero, one replica, back to zero in the sparse gap, then at least two in the burst.
        running = [p["running"] for p in side["timeline"]["replicas"]]
        first, most = next(i for i, r in enumerate(running) if r), running.index(max(running))
        assert running[0] == 0 and max(running) >= 2 and 0 in running[first:most]
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
