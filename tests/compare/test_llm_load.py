"""The LLM load generator against a stand-in OpenAI-compatible streaming server (tests/compare/openai_standin.py) whose
time to first token and inter-token delay are known: the measured TTFT, TPOT and ITL come back no lower than the known
delays (less a 10 % allowance for the clock and chunk delivery) and below a generous guard; arrivals keep to the
schedule while the server holds every answer; the metrics' definitions (vLLM's) on outcomes built by hand; the shapes,
prompts and objectives parsed."""

from __future__ import annotations

import pytest
from openai_standin import StandIn

from plan.compare.llm import metrics, prompts, shapes, stream
from plan.compare.llm.stream import TokenOutcome
from plan.compare.serving.patterns import PatternError

TTFT_S, ITL_S = 0.2, 0.04
ALLOWANCE = 0.9  # measured >= 90 % of a known delay: timer granularity and a chunk delivered late then one early
GUARD_S = 5.0  # a generous upper guard (a loaded two-core machine), never a tight wall-clock bound


@pytest.fixture(scope="module", params=["completions", "chat"])
def measured(request):
    prompt_set = prompts.prompt_set(16, 8, 0.0, seed=3, count=4)
    shape = shapes.poisson(4.0, 2.0, seed=1)
    with StandIn(TTFT_S, ITL_S) as server:
        run = stream.run(shape, server.url, "stand-in-model", prompt_set.prompts(), api=request.param, timeout_s=60)
        bodies = list(server.bodies)
    return request.param, shape, run, bodies, metrics.summary(run.outcomes, shape.duration_s, {"ttft": 10_000.0})


def test_every_request_streams_every_token_and_is_counted(measured):
    api, shape, run, bodies, summary = measured
    assert summary["requests"] == shape.requests == summary["completed"] and summary["errors"] == 0
    assert [len(o.chunk_at) for o in run.outcomes] == [o.output_tokens for o in run.outcomes] == [8] * shape.requests
    assert summary["outputTokens"] == 8 * shape.requests and summary["inputTokens"] == 16 * shape.requests
    assert summary["outputTokensPerS"] == pytest.approx(8 * shape.requests / shape.duration_s, abs=1e-3)
    assert all(b["stream"] and b["temperature"] == 0.0 and b["max_tokens"] == 8 for b in bodies)
    assert all(("messages" in b) == (api == "chat") for b in bodies)


def test_ttft_tpot_itl_come_back_within_the_tolerance_of_the_known_delays(measured):
    *_, summary = measured
    for key, known in (("ttftMs", TTFT_S), ("tpotMs", ITL_S), ("itlMs", ITL_S)):
        for q in ("mean", "p50", "p90", "p95", "p99"):
            assert ALLOWANCE * known * 1000 <= summary[key][q] < GUARD_S * 1000, (key, q, summary[key])
    expected_e2el = TTFT_S + 7 * ITL_S
    assert ALLOWANCE * expected_e2el * 1000 <= summary["e2eMs"]["p50"] < GUARD_S * 1000
    assert summary["itlMs"]["count"] == 7 * summary["completed"] and summary["tpotMs"]["count"] == summary["completed"]
    assert summary["goodputRps"] == summary["requestsPerS"]  # a TTFT objective of 10 s that every request met


def test_arrivals_do_not_wait_on_answers():
    """The server answers nothing until all requests have arrived: a client that waited on an answer before its next
    send would never send them all (the server's hold times out and every request fails)."""
    shape = shapes.poisson(20.0, 1.0, seed=2)
    prompt_list = prompts.prompt_set(4, 2, 0.0, seed=0, count=2).prompts()
    with StandIn(0.0, 0.0, hold_until=shape.requests) as server:
        run = stream.run(shape, server.url, "m", prompt_list, timeout_s=90)
    assert all(o.ok for o in run.outcomes), [o.error for o in run.outcomes]
    assert all(o.sent >= o.due for o in run.outcomes)
    first_answer = min(o.first_at for o in run.outcomes)
    assert all(o.sent <= first_answer for o in run.outcomes)  # every send before any answer
    assert [o.prompt for o in run.outcomes] == [i % 2 for i in range(shape.requests)]


def test_first_model_reads_the_server_list():
    with StandIn(0.0, 0.0) as server:
        assert stream.first_model(server.url) == "stand-in-model"


def outcome(sent, chunks, tokens=None, error=None):
    o = TokenOutcome("x", sent, sent, chunks[-1] if chunks else sent + 1, 200, error, chunk_at=list(chunks))
    o.first_at, o.output_tokens, o.prompt_tokens = (chunks[0] if chunks else None), tokens, 5
    return o


def test_metrics_follow_vllms_definitions():
    a = outcome(0.0, [0.1, 0.2, 0.4])  # TTFT 100 ms, E2EL 400, TPOT (400-100)/2 = 150, ITLs 100 and 200
    b = outcome(1.0, [1.3], tokens=1)  # one token: no TPOT, no ITL
    c = outcome(2.0, [2.05, 2.15], tokens=4)  # usage says 4 tokens in 2 chunks: TPOT (150-50)/3, one ITL of 100
    failed = outcome(3.0, [], error="timeout")
    s = metrics.summary([a, b, c, failed], 10.0, {"ttft": 150.0, "tpot": 120.0})
    assert s["ttftMs"]["count"] == 3 and s["ttftMs"]["mean"] == pytest.approx((100 + 300 + 50) / 3, abs=1e-3)
    assert s["tpotMs"]["count"] == 2 and s["tpotMs"]["mean"] == pytest.approx((150 + 100 / 3) / 2, abs=1e-3)
    assert s["itlMs"]["count"] == 3 and s["itlMs"]["p50"] == pytest.approx(100.0, abs=1e-3)
    assert s["e2eMs"]["p99"] == pytest.approx(300 + (400 - 300) * 0.98, abs=1e-3)  # linear interpolation
    assert (s["outputTokens"], s["errors"], s["timeouts"]) == (3 + 1 + 4, 1, 1)
    assert s["goodputRps"] == pytest.approx(0.1)  # c only: a's TPOT 150 > 120, b's TTFT 300 > 150
    assert s["requestsPerS"] == pytest.approx(0.3) and s["inputTokensPerS"] == pytest.approx(1.5)


def test_the_sweep_curve_and_the_rate_of_the_highest_goodput():
    phases = [
        {
            "rate": r,
            "outputTokensPerS": r * 10,
            "requestsPerS": r,
            "goodputRps": g,
            "ttftMs": None,
            "tpotMs": None,
            "errors": 0,
        }
        for r, g in ((1, 1.0), (2, 1.8), (4, 0.5))
    ]
    curve = metrics.sweep_curve({"phases": phases})
    assert [p["offeredRps"] for p in curve] == [1, 2, 4] and curve[1]["outputTokensPerS"] == 20
    best = metrics.best_goodput({"sweep": {"phases": phases}, "poisson": {"goodputRps": 9.0}})
    assert (best["rps"], best["offeredRps"], best["outputTokensPerS"]) == (1.8, 2, 20)  # the sweep's, when there is one


def test_slo_parsing():
    assert metrics.parse_slo("ttft=500ms,tpot=50ms") == {"ttft": 500.0, "tpot": 50.0}
    assert metrics.parse_slo("e2el=2s") == {"e2el": 2000.0}
    for bad in ("ttft", "ttft=-1ms", "itl=5ms", "ttft=1ms,ttft=2ms", ""):
        with pytest.raises(PatternError, match="--slo"):
            metrics.parse_slo(bad)


def test_shapes_are_seeded_bounded_and_open_loop():
    one, two = shapes.poisson(5.0, 20.0, seed=7), shapes.poisson(5.0, 20.0, seed=7)
    assert one.sends == two.sends and one.sends != shapes.poisson(5.0, 20.0, seed=8).sends
    assert 50 <= one.requests <= 150 and all(0 <= t < 20 for t, _ in one.sends)
    swept = shapes.sweep([1.0, 4.0], 10.0, seed=0)
    assert [p.label for p in swept.phases] == ["rate-1", "rate-4"] and swept.duration_s == 20.0
    assert all(t >= 10 for t, label in swept.sends if label == "rate-4")
    burst = shapes.burst(1.0, 8.0, 2, 4, 2, seed=0)
    assert [p.label for p in burst.phases] == ["low", "high", "after"]
    sparse = shapes.sparse(2, 30.0, 10.0)
    assert sparse.sends == ((30.0, "single-0"), (60.0, "single-1"))
    with pytest.raises(PatternError, match="--sparse-gap-s"):
        shapes.sparse(1, 5.0, 10.0)
    with pytest.raises(PatternError, match="--sweep-rates"):
        shapes.sweep([4.0, 1.0], 5.0, seed=0)
    with pytest.raises(PatternError, match="--llm-shapes"):
        shapes.parse_names("poisson,steady")


def test_prompts_are_the_same_for_the_same_seed_and_within_the_range():
    a = prompts.prompt_set(100, 50, 0.5, seed=1, count=20).prompts()
    assert a == prompts.prompt_set(100, 50, 0.5, seed=1, count=20).prompts()
    assert all(50 <= p.words <= 150 and 25 <= p.max_tokens <= 75 for p in a)
    assert len({p.words for p in a}) > 1
    with pytest.raises(PatternError, match="--len-range"):
        prompts.prompt_set(10, 10, 1.0, seed=0, count=1)
