"""The serving comparison's load generator: open-loop schedules (patterns) and the httpx client that keeps them
against a deliberately slow stub server on 127.0.0.1, with latency percentiles, errors and timeouts counted."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from plan.compare.serving import load, measures, patterns


SLOW_REQUESTS = 20  # what /slow holds its answers for
HELD_S = 0.5  # how long /slow still holds them once the last has arrived


class _Stub(http.server.BaseHTTPRequestHandler):
    """Answers every request after 0.3 s. /slow answers none before SLOW_REQUESTS have arrived (then HELD_S later; a
    500 if they never all arrive: a client that waits for an answer before it sends again gets no 200 within its
    timeout). On /mixed, by order of arrival: the 3rd and 6th get a 500, the 9th no answer for 5 s (past the client's
    timeout)."""

    arrivals = {"/mixed": 0}
    lock = threading.Lock()
    all_arrived = threading.Barrier(SLOW_REQUESTS)

    def do_POST(self):  # http.server's name
        json.loads(self.rfile.read(int(self.headers["content-length"])))
        with self.lock:
            self.arrivals[self.path] = n = self.arrivals.get(self.path, 0) + 1
        mixed = self.path == "/mixed"
        held = True
        if self.path == "/slow":
            try:
                self.all_arrived.wait(timeout=30)  # a hang guard: the load sends all of them within about 1 s
            except threading.BrokenBarrierError:
                held = False
        time.sleep(5 if mixed and n == 9 else HELD_S if self.path == "/slow" else 0.3)
        status = 500 if (mixed and n in (3, 6)) or not held else 200
        payload = b'{"ok": true}'
        self.send_response(status)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def slow_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_steady_schedule_is_fixed_in_advance_at_its_rate():
    pattern = patterns.steady(rps=4, seconds=2.5)
    due = [t for t, _ in pattern.schedule()]
    assert due == pytest.approx([0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25])
    assert pattern.requests == 10 and pattern.offered_rps == pytest.approx(4.0)


def test_burst_steps_from_low_to_high_and_back():
    pattern = patterns.burst(low_rps=2, high_rps=10, low_s=2, high_s=1, after_s=2)
    schedule = pattern.schedule()
    by_label = {label: [t for t, lab in schedule if lab == label] for label in ("low", "high", "after")}
    assert [len(v) for v in by_label.values()] == [4, 10, 4]
    assert max(by_label["low"]) < min(by_label["high"]) and max(by_label["high"]) < min(by_label["after"])
    assert by_label["high"][1] - by_label["high"][0] == pytest.approx(0.1)
    assert by_label["low"][1] - by_label["low"][0] == pytest.approx(0.5)
    with pytest.raises(patterns.PatternError, match="--burst-rps: the high rate 2 is not above the low one 2"):
        patterns.burst(2, 2, 1, 1, 1)


def test_sparse_sends_single_requests_each_after_a_gap_longer_than_the_downscale_delay():
    pattern = patterns.sparse(requests=3, gap_s=12, downscale_delay_s=10)
    assert [t for t, _ in pattern.schedule()] == [12, 24, 36] and pattern.duration_s == 36
    with pytest.raises(patterns.PatternError, match=r"--sparse-gap-s: 8 s is not longer than the Serve downscale "
                                                    r"delay \(10 s\)"):
        patterns.sparse(requests=3, gap_s=8, downscale_delay_s=10)


@pytest.mark.parametrize("build, message", [
    (lambda: patterns.steady(rps=0, seconds=5), "--steady-rps: 0 is not allowed"),
    (lambda: patterns.steady(rps=1500, seconds=20), "sends 30000 requests; allowed: at most 20000"),
    (lambda: patterns.sparse(requests=0, gap_s=5), "--sparse-requests: 0 is not allowed"),
    (lambda: patterns.parse_names("steady,ramp"), "--patterns: 'steady,ramp' is not allowed"),
])
def test_patterns_are_bounded_and_bad_flags_named(build, message):
    with pytest.raises(patterns.PatternError, match=message):
        build()


def test_only_loopback_is_a_target():
    assert load.target_allowed("http://127.0.0.1:8000/") and load.target_allowed("http://localhost:1/x")
    for url in ("http://10.0.0.5:8000/", "http://example.com/", "ftp://127.0.0.1/"):
        with pytest.raises(load.TargetError):
            load.target_allowed(url)


def test_arrivals_do_not_wait_for_answers(slow_server):
    """The server answers none of 20 requests before all 20 have arrived: sent at 20/s on their schedule, every one is
    answered (a closed loop, which sends the next request only after an answer, would get none)."""
    pattern = patterns.steady(rps=SLOW_REQUESTS, seconds=1)
    run = load.run(pattern, slow_server + "slow", {"inputs": []})
    assert len(run.outcomes) == SLOW_REQUESTS and all(o.ok for o in run.outcomes)
    assert all(o.sent >= o.due for o in run.outcomes)  # never early
    # Latency counts from the scheduled send time: every answer left HELD_S after the last arrival, or later.
    assert min(o.latency_s for o in run.outcomes) >= HELD_S


def test_latency_percentiles_errors_and_timeouts_are_counted(slow_server):
    pattern = patterns.steady(rps=10, seconds=1)
    run = load.run(pattern, slow_server + "mixed", {"inputs": []}, timeout_s=1.0)
    summary = measures.pattern_summary(run, pattern)
    assert (summary["requests"], summary["errors"], summary["timeouts"]) == (10, 3, 1)
    assert summary["errorKinds"] == {"http 500": 2, "timeout": 1}
    assert summary["offeredRps"] == pytest.approx(10.0)
    latency = summary["latencyMs"]  # of the seven answered requests only, each 0.3 s or more from its send time
    assert 300 <= latency["p50"] <= latency["p95"] <= latency["p99"] < 1000
    answered = sorted(o.latency_s * 1000 for o in run.outcomes if o.ok)
    assert latency["p50"] == pytest.approx(answered[3], abs=0.01)
