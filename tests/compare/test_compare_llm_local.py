"""The local LLM rehearsal end to end (`make compare-llm`'s command, shortened): the LLM pair of
tests/data/compare-llm.yaml (Ray Serve LLM's OpenAI app on the TPU slice and on a GPU pool) deployed on a real local
Ray cluster in the workloads interpreter with the stand-in engine streaming real tokens of the small JAX transformer,
simulated nodes added and removed as Ray's demand asks, under sparse, burst, Poisson and sweep load; the report
written. One run for the module, many assertions on what it produced; skipped, saying so, only when there is no
workloads interpreter. The burst's high step queues requests far beyond one replica (so Serve must add one) and the
run waits for that replica with a hang guard (llm/local.py settler), whatever the machine's load."""

from __future__ import annotations

import pytest
from compare_runs import compare_locally
from helpers import ROOT, workloads_python

from plan.compare.llm import markdown

pytestmark = pytest.mark.local_ray

CONFIG = ROOT / "tests" / "data" / "compare-llm.yaml"
SHAPES = ("sparse", "burst", "poisson", "sweep")
DISTRIBUTIONS = ("ttftMs", "tpotMs", "itlMs", "e2eMs")


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory):
    python = workloads_python()
    out = tmp_path_factory.mktemp("compare-llm") / "report"
    # make compare-llm's command, shortened: fewer seconds per shape and rate. An objective and a request timeout that
    # any machine holds, however loaded (the defaults are the user's to judge): with the local defaults, a run beside
    # a loaded machine saw requests of the GPU side's Poisson shape and sweep time out (60 s) and no goodput, so
    # `errors == 0` and `goodput > 0` would have measured the machine, not the rehearsal.
    shortest = [
        "--llm-seconds",
        "3",
        "--sweep-rates",
        "1,4",
        "--sweep-seconds",
        "3",
        "--llm-burst-s",
        "1,4,1",  # a high step past Serve's look-back (3 s); one replica answers about 2 requests a second
        "--prompts",
        "8",
        "--agree-prompts",
        "4",
        "--slo",
        "ttft=600s,tpot=60s",
        "--llm-timeout-s",
        "600",
    ]
    done, document = compare_locally(out, python, "--llm", "--config-file", str(CONFIG), *shortest, timeout=1500)
    return done, document, out


def test_the_rehearsal_writes_a_complete_llm_section_for_both_sides(rehearsed):
    done, document, out = rehearsed
    assert document["problems"] == [] and done.returncode == 0, done.stderr[-4000:]
    assert document["mode"] == "local" and document["simulated"] is True and document["complete"] is True
    assert sorted(s["kind"] for s in document["llm"]) == ["gpu", "tpu"]
    assert (out / "report.md").read_text().splitlines()[0] == f"# {markdown.REHEARSAL}"
    for name in ("llm-ttft-itl.png", "llm-throughput-latency.png", "llm-replicas.png"):
        assert (out / name).stat().st_size > 1000


def test_every_token_metric_is_measured_per_shape(rehearsed):
    _, document, _ = rehearsed
    for side in document["llm"]:
        assert side["simulated"] is True and "not vLLM" in side["engine"]
        assert sorted(side["shapes"]) == sorted(SHAPES)
        for name, shape in side["shapes"].items():
            assert shape["errors"] == 0 and shape["completed"] == shape["requests"] > 0, (side["name"], name)
            assert shape["outputTokens"] > 0 and shape["inputTokens"] > 0
            assert shape["outputTokensPerS"] > 0 and shape["inputTokensPerS"] > 0 and shape["requestsPerS"] > 0
            for key in DISTRIBUTIONS:
                d = shape[key]
                assert set(d) == {"mean", "p50", "p90", "p95", "p99", "count"}, (name, key)
                assert 0 < d["p50"] <= d["p90"] <= d["p95"] <= d["p99"]
            assert shape["ttftMs"]["p50"] < shape["e2eMs"]["p50"]
        assert side["samplesMs"]["ttft"] and side["samplesMs"]["itl"]


def test_the_sweep_curve_goodput_and_costs(rehearsed):
    _, document, _ = rehearsed
    for side in document["llm"]:
        points = side["sweep"]
        assert [p["offeredRps"] for p in points] == [1.0, 4.0] and all(p["outputTokensPerS"] > 0 for p in points)
        assert all(p["ttftMs"]["p50"] <= p["ttftMs"]["p99"] for p in points)
        goodput = side["goodput"]
        assert goodput["slo"] == {"ttft": 600000.0, "tpot": 60000.0}
        assert goodput["offeredRps"] in (1.0, 4.0) and goodput["rps"] > 0 and goodput["outputTokensPerS"] > 0
        costs = side["costs"]
        assert costs["perMillionTokens"]["outputUsd"] > 0 and costs["price"]["asOf"] and costs["price"]["pricingModel"]
        assert side["idleCostPerHourUsd"] == 0.0 and costs["minReplicas"] == 0  # the LLM pair scales to zero
        assert costs["formula"].startswith("GKE Inference Quickstart")
        assert all(shape["costPerMillionOutputTokensUsd"] > 0 for shape in side["shapes"].values())


def test_the_start_from_zero_is_one_timeline_cold_and_with_the_compile_cache_warm(rehearsed):
    _, document, _ = rehearsed
    for side in document["llm"]:
        for which in ("coldStartS", "coldStartCompileCacheWarmS"):
            timeline = side[which]
            for key in ("capacityAndNodeS", "rayStartS", "weightsS", "compileS", "firstTokenS", "totalS"):
                assert timeline[key] >= 0, (side["name"], which, key)
            assert set(timeline["notApplicable"]) == {"podAndImageS"}  # no pod locally: said, not made up
            parts = sum(timeline[k] for k in ("capacityAndNodeS", "rayStartS", "weightsS", "compileS", "firstTokenS"))
            assert parts >= timeline["totalS"] - 0.05  # each phase from the one before (a negative one counts 0)
        assert side["coldStartS"]["appToRunningS"] > 0


def test_serve_added_a_replica_in_the_burst_and_the_load_is_drawn_against_it(rehearsed):
    _, document, _ = rehearsed
    for side in document["llm"]:
        scale = side["autoscale"]
        assert scale["reaction"]["toReplicas"] > scale["reaction"]["fromReplicas"] and scale["peakTarget"] >= 2
        assert sum(o["rps"] for o in scale["offered"]) == sum(shape["requests"] for shape in side["shapes"].values())
        assert set(scale["windows"]) == set(SHAPES)


def test_both_sides_decode_the_same_prompts_alike(rehearsed):
    _, document, _ = rehearsed
    tpu, gpu = sorted(document["llm"], key=lambda s: s["kind"] != "tpu")
    assert tpu["agreement"]["with"] == [gpu["name"]] and gpu["agreement"]["with"] == [tpu["name"]]
    agreed = tpu["agreement"]
    assert agreed["prompts"] == 4 and agreed["tokens"] == 16 and agreed["failedRequests"] == 0
    assert agreed["matchingPrefixShare"] == 1.0  # the same seeded model on both: every first 16 tokens match
    assert set(agreed["firstDifference"].values()) == {None}
