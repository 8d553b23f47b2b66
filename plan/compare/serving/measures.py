"""What one pattern's requests say, computed the same way for local and live runs: client-side latency percentiles
(from each request's scheduled send time), errors and timeouts, the rate actually offered, and the highest constant
rate held under a latency objective. Pure: outcomes in, report fields out."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from ..report import percentile
from .load import LoadRun
from .patterns import Pattern

PERCENTILES = (50, 95, 99)


def latency_ms(latencies_s: list[float]) -> Optional[dict]:
    if not latencies_s:
        return None
    return {f"p{q}": round(percentile(latencies_s, q) * 1000, 3) for q in PERCENTILES}


def _summary(outcomes: list, seconds: float) -> dict:
    answered = [o.latency_s for o in outcomes if o.ok]
    failed = [o.error or f"http {o.status}" for o in outcomes if not o.ok]
    lags = [o.sent - o.due for o in outcomes if o.sent is not None]
    return {
        "requests": len(outcomes),
        "errors": len(failed),
        "timeouts": failed.count("timeout"),
        "errorKinds": dict(sorted(Counter(failed).items())),
        "offeredRps": round(len(outcomes) / seconds, 3) if seconds else None,
        "latencyMs": latency_ms(answered),
        # how late this client sent, at worst: a large value means the client, not the service, was the bottleneck
        "maxSendLagMs": round(max(lags) * 1000, 3) if lags else None,
    }


def pattern_summary(run: LoadRun, pattern: Pattern) -> dict:
    """The pattern's fields of the report (CONTRACTS section 7: offeredRps, requests, errors, latencyMs), and per
    constant-rate phase the same, so that the burst's high step can be read apart from its low ones."""
    summary = _summary(run.outcomes, pattern.duration_s)
    summary["durationS"] = pattern.duration_s
    summary["params"] = pattern.params
    if pattern.gap_s is None:  # sparse's phases are single requests: their latencies are the pattern's
        summary["phases"] = [
            {
                "label": phase.label,
                "rps": phase.rps,
                **_summary([o for o in run.outcomes if o.label == phase.label], phase.seconds),
            }
            for phase in pattern.phases
        ]
    else:
        summary["coldLatenciesMs"] = [
            round(o.latency_s * 1000, 3) if o.ok and o.latency_s is not None else None for o in run.outcomes
        ]
    return summary


def max_rps_under_slo(summaries: dict[str, dict], slo_ms: float, quantile: str = "p95") -> dict:
    """The highest offered rate among the constant-rate phases measured (steady, and burst's low and high steps)
    whose `quantile` latency stayed within the objective with no error: `rps` 0 when none held."""
    held = [
        phase["rps"]
        for summary in summaries.values()
        for phase in summary.get("phases", [])
        if phase["requests"] and not phase["errors"] and phase["latencyMs"] and phase["latencyMs"][quantile] <= slo_ms
    ]
    tried = sorted({phase["rps"] for summary in summaries.values() for phase in summary.get("phases", [])})
    return {"sloMs": slo_ms, "quantile": quantile, "rps": max(held, default=0.0), "ratesTried": tried}
