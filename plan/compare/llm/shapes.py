"""The LLM comparison's load shapes: open-loop schedules fixed before the first request leaves (as the serving
comparison's patterns.py), with Poisson arrivals: exponential gaps of mean 1/rate, what `vllm bench serve` sends at a
request rate with its default burstiness 1.0 (vllm/benchmarks/serve.py `get_request`: gamma-distributed intervals
whose shape is the burstiness, a Poisson process at 1.0), drawn from a seeded generator so that every side and every
run meets the same arrivals.

- poisson: one rate for a duration;
- sweep: several rates one after the other, each for its own stretch (the throughput-latency curve, and the rate of
  the highest goodput);
- burst: a low rate, a step to a high one, and back down;
- sparse: single requests, each after an idle gap longer than Serve's downscale delay (patterns.sparse).

Pure: no clock, no network. Bounded as patterns.py bounds its patterns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..serving import patterns
from ..serving.patterns import PatternError, Phase

NAMES = ("poisson", "sweep", "burst", "sparse")


@dataclass(frozen=True)
class Shape:
    """A load shape: its phases (label, mean rate, seconds) and the send times drawn for them."""

    name: str
    phases: tuple[Phase, ...]
    sends: tuple[tuple[float, str], ...]  # (seconds from the shape's start, phase label), in order
    gap_s: float | None = None  # sparse: the idle gap before each request
    params: dict = field(default_factory=dict, compare=False)

    @property
    def duration_s(self) -> float:
        return sum(p.seconds for p in self.phases)

    def schedule(self) -> list[tuple[float, str]]:
        return list(self.sends)

    @property
    def requests(self) -> int:
        return len(self.sends)


def poisson_sends(rate: float, seconds: float, start: float, label: str, rng: random.Random) -> list:
    """Arrivals of a Poisson process at `rate` within [start, start + seconds)."""
    out: list[tuple[float, str]] = []
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= seconds:
            return out
        out.append((round(start + t, 6), label))


def _bounded(shape: Shape, flag: str) -> Shape:
    if shape.duration_s > patterns.MAX_DURATION_S:
        raise PatternError(
            f"{flag}: the {shape.name} shape lasts {shape.duration_s:g} s; allowed: at most "
            f"{patterns.MAX_DURATION_S:g} s"
        )
    if not 1 <= shape.requests <= patterns.MAX_REQUESTS:
        raise PatternError(
            f"{flag}: the {shape.name} shape sends {shape.requests} requests; allowed: 1 to {patterns.MAX_REQUESTS} "
            "(raise the rate or the seconds)"
        )
    return shape


def _phased(name: str, phases: list[Phase], seed: int, params: dict, flag: str) -> Shape:
    rng = random.Random(f"{name}:{seed}")  # a stream per shape: adding a shape leaves the others' arrivals alone
    sends, start = [], 0.0
    for phase in phases:
        sends += poisson_sends(phase.rps, phase.seconds, start, phase.label, rng)
        start += phase.seconds
    return _bounded(Shape(name, tuple(phases), tuple(sends), params={**params, "seed": seed}), flag)


def _rate(flag: str, value: float) -> float:
    return patterns._positive(flag, value, patterns.MAX_RPS)


def _seconds(flag: str, value: float) -> float:
    return patterns._positive(flag, value, patterns.MAX_DURATION_S)


def poisson(rate: float, seconds: float, seed: int) -> Shape:
    rate, seconds = _rate("--llm-rate", rate), _seconds("--llm-seconds", seconds)
    return _phased(
        "poisson",
        [Phase("poisson", rate, seconds)],
        seed,
        {"rate": rate, "seconds": seconds},
        "--llm-rate/--llm-seconds",
    )


def sweep(rates: list[float], seconds: float, seed: int) -> Shape:
    rates = [_rate("--sweep-rates", r) for r in rates]
    if not rates or sorted(set(rates)) != rates:
        raise PatternError(f"--sweep-rates: {rates!r} is not allowed; allowed: distinct rates in increasing order")
    seconds = _seconds("--sweep-seconds", seconds)
    phases = [Phase(f"rate-{r:g}", r, seconds) for r in rates]
    return _phased("sweep", phases, seed, {"rates": rates, "seconds": seconds}, "--sweep-rates/--sweep-seconds")


def burst(low: float, high: float, low_s: float, high_s: float, after_s: float, seed: int) -> Shape:
    low, high = _rate("--llm-burst-rates (low)", low), _rate("--llm-burst-rates (high)", high)
    if high <= low:
        raise PatternError(f"--llm-burst-rates: the high rate {high:g} is not above the low one {low:g}")
    low_s, high_s, after_s = (_seconds("--llm-burst-s", s) for s in (low_s, high_s, after_s))
    phases = [Phase("low", low, low_s), Phase("high", high, high_s), Phase("after", low, after_s)]
    return _phased(
        "burst",
        phases,
        seed,
        {"lowRps": low, "highRps": high, "seconds": [low_s, high_s, after_s]},
        "--llm-burst-rates/--llm-burst-s",
    )


def sparse(requests: int, gap_s: float, downscale_delay_s: float | None) -> Shape:
    """patterns.sparse's schedule (one request at the end of each idle gap) as a shape."""
    made = patterns.sparse(requests, gap_s, downscale_delay_s)
    return Shape("sparse", made.phases, tuple(made.schedule()), gap_s=made.gap_s, params=dict(made.params))


def parse_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names or len(set(names)) != len(names) or any(n not in NAMES for n in names):
        raise PatternError(
            f"--llm-shapes: {text!r} is not allowed; allowed: a comma-separated list of distinct names from "
            f"{', '.join(NAMES)}"
        )
    return names
