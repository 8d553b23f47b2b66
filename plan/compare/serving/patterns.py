"""Open-loop traffic patterns: each a schedule of send times fixed before the first request leaves, so a slow answer
cannot delay the next arrival (a closed loop that waits for each answer hides the queue it causes: "coordinated
omission", Gil Tene, "How NOT to Measure Latency"; wrk2 and Locust's constant-throughput timers fix the rate the
same way).

- steady: one rate for a duration;
- burst: a low rate, a step up to a high one, and back down (each for its own duration);
- sparse: single requests, each after an idle gap longer than Serve's downscale delay, so that a service that scales
  to zero is hit on its cold path each time (the first one too, whatever ran before it).

Pure: no clock, no network. Every schedule is bounded in requests and in time (MAX_REQUESTS, MAX_DURATION_S).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

NAMES = ("steady", "burst", "sparse")
# Bounds of one pattern: the generator targets loopback or a port-forward, and a run must end.
MAX_REQUESTS = 20_000
MAX_DURATION_S = 3600.0
MAX_RPS = 2_000.0


class PatternError(ValueError):
    pass


@dataclass(frozen=True)
class Phase:
    """A stretch of constant offered rate: its label, rate (requests per second) and duration."""

    label: str
    rps: float
    seconds: float


@dataclass(frozen=True)
class Pattern:
    name: str
    phases: tuple[Phase, ...]
    # sparse: the idle gap between its single requests (the schedule then has one request per phase)
    gap_s: float | None = None
    params: dict = field(default_factory=dict, compare=False)

    @property
    def duration_s(self) -> float:
        return sum(p.seconds for p in self.phases)

    def schedule(self) -> list[tuple[float, str]]:
        """(offset in seconds from the pattern's start, phase label) of every request, in order."""
        sends, start = [], 0.0
        for phase in self.phases:
            if self.gap_s is not None:  # sparse: one request at the end of each idle gap
                sends.append((start + phase.seconds, phase.label))
            else:
                count = int(math.floor(phase.rps * phase.seconds + 1e-9))
                sends += [(start + i / phase.rps, phase.label) for i in range(count)]
            start += phase.seconds
        return sends

    @property
    def requests(self) -> int:
        return len(self.schedule())

    @property
    def offered_rps(self) -> float:
        """Requests scheduled per second of the pattern's duration."""
        return self.requests / self.duration_s if self.duration_s else 0.0


def _positive(flag: str, value: float, most: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= most):
        raise PatternError(f"{flag}: {value!r} is not allowed; allowed: a number above 0 and at most {most:g}")
    return float(value)


def _bounded(pattern: Pattern, flag: str) -> Pattern:
    if pattern.duration_s > MAX_DURATION_S:
        raise PatternError(
            f"{flag}: the {pattern.name} pattern lasts {pattern.duration_s:g} s; allowed: at most {MAX_DURATION_S:g} s"
        )
    if pattern.requests > MAX_REQUESTS:
        raise PatternError(
            f"{flag}: the {pattern.name} pattern sends {pattern.requests} requests; allowed: at most {MAX_REQUESTS}"
        )
    if pattern.requests < 1:
        raise PatternError(
            f"{flag}: the {pattern.name} pattern sends no request; allowed: a rate x duration of at least 1"
        )
    return pattern


def steady(rps: float, seconds: float) -> Pattern:
    rps, seconds = _positive("--steady-rps", rps, MAX_RPS), _positive("--steady-s", seconds, MAX_DURATION_S)
    return _bounded(
        Pattern("steady", (Phase("steady", rps, seconds),), params={"rps": rps, "seconds": seconds}),
        "--steady-rps/--steady-s",
    )


def burst(low_rps: float, high_rps: float, low_s: float, high_s: float, after_s: float) -> Pattern:
    low_rps, high_rps = (
        _positive("--burst-rps (low)", low_rps, MAX_RPS),
        _positive("--burst-rps (high)", high_rps, MAX_RPS),
    )
    if high_rps <= low_rps:
        raise PatternError(
            f"--burst-rps: the high rate {high_rps:g} is not above the low one {low_rps:g}; allowed: "
            "LOW,HIGH with HIGH > LOW"
        )
    low_s, high_s, after_s = (_positive("--burst-s", s, MAX_DURATION_S) for s in (low_s, high_s, after_s))
    phases = (Phase("low", low_rps, low_s), Phase("high", high_rps, high_s), Phase("after", low_rps, after_s))
    return _bounded(
        Pattern("burst", phases, params={"lowRps": low_rps, "highRps": high_rps, "seconds": [low_s, high_s, after_s]}),
        "--burst-rps/--burst-s",
    )


def sparse(requests: int, gap_s: float, downscale_delay_s: float | None = None) -> Pattern:
    if not isinstance(requests, int) or requests < 1:
        raise PatternError(f"--sparse-requests: {requests!r} is not allowed; allowed: a whole number of at least 1")
    gap_s = _positive("--sparse-gap-s", gap_s, MAX_DURATION_S)
    if downscale_delay_s is not None and gap_s <= downscale_delay_s:
        raise PatternError(
            f"--sparse-gap-s: {gap_s:g} s is not longer than the Serve downscale delay "
            f"({downscale_delay_s:g} s), so no gap reaches the cold path; allowed: more than "
            f"{downscale_delay_s:g}"
        )
    phases = tuple(Phase(f"single-{i}", 1.0 / gap_s, gap_s) for i in range(requests))
    return _bounded(
        Pattern("sparse", phases, gap_s=gap_s, params={"requests": requests, "gapS": gap_s}),
        "--sparse-requests/--sparse-gap-s",
    )


def parse_names(text: str) -> tuple[str, ...]:
    """`--patterns steady,burst,sparse`: known names, each once, in the order given."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names or len(set(names)) != len(names):
        raise PatternError(
            f"--patterns: {text!r} is not allowed; allowed: a comma-separated list of distinct names "
            f"from {', '.join(NAMES)}"
        )
    return names
