"""Token metrics of one load shape, with the definitions of vLLM's serving benchmark (vllm/benchmarks/serve.py,
`calculate_metrics`; the per-request times from vllm/benchmarks/lib/endpoint_request_func.py):

- TTFT: the send to the first chunk with text;
- TPOT: per request with more than one output token, (end-to-end latency - TTFT) / (output tokens - 1): the first
  token excluded;
- ITL: every gap between consecutive chunks with text, all requests pooled (one per chunk, whatever it carries);
- E2EL: the send to the last chunk;
- throughputs: completed requests, output tokens, and input tokens per second of the shape's duration;
- goodput: requests per second that met every objective given (TTFT, TPOT, E2EL at most the objective; a request
  of one output token counts TPOT 0, as there).

Each distribution: mean and the p50, p90, p95, p99 percentiles (nearest-rank interpolation of report.percentile), in
milliseconds. Latencies here are from the send, as vLLM's; serving/measures.py keeps the schedule-based lag
(`maxSendLagMs`) that says whether the client kept to the schedule. Pure: outcomes in, report fields out.
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

from ..report import percentile
from ..serving.patterns import PatternError
from .stream import StreamRun, TokenOutcome

PERCENTILES = (50, 90, 95, 99)
SLO_KEYS = {"ttft": "ttftMs", "tpot": "tpotMs", "e2el": "e2eMs"}  # vllm bench serve --goodput's keys


def distribution_ms(values_s: list[float]) -> Optional[dict]:
    if not values_s:
        return None
    out = {"mean": round(sum(values_s) / len(values_s) * 1000, 3)}
    out.update({f"p{q}": round(percentile(values_s, q) * 1000, 3) for q in PERCENTILES})
    out["count"] = len(values_s)
    return out


def ttft_s(o: TokenOutcome) -> Optional[float]:
    return None if o.first_at is None or o.sent is None else o.first_at - o.sent


def e2el_s(o: TokenOutcome) -> Optional[float]:
    return None if o.done is None or o.sent is None else o.done - o.sent


def tpot_s(o: TokenOutcome) -> Optional[float]:
    """None for a request of one output token (vLLM leaves it out of the TPOT distribution)."""
    ttft, e2el = ttft_s(o), e2el_s(o)
    if ttft is None or e2el is None or o.tokens_out <= 1:
        return None
    return (e2el - ttft) / (o.tokens_out - 1)


def itls_s(o: TokenOutcome) -> list[float]:
    return [b - a for a, b in zip(o.chunk_at, o.chunk_at[1:])]


def parse_slo(text: str) -> dict[str, float]:
    """`ttft=500ms,tpot=50ms` (also `e2el=`, and seconds as `2s`) -> {"ttft": 500.0, "tpot": 50.0} in ms."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, _, value = part.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        scale = 1000.0 if value.endswith("s") and not value.endswith("ms") else 1.0
        number = value[:-2] if value.endswith("ms") else value[:-1] if value.endswith("s") else value
        try:
            amount = float(number) * scale
        except ValueError:
            amount = -1.0
        if key not in SLO_KEYS or amount <= 0 or key in out:
            raise PatternError(
                f"--slo: {part!r} is not allowed; allowed: KEY=VALUE pairs joined by commas, each key once from "
                f"{', '.join(SLO_KEYS)}, each value above 0 in ms (500ms) or s (2s)"
            )
        out[key] = amount
    if not out:
        raise PatternError("--slo: empty; allowed: e.g. ttft=500ms,tpot=50ms")
    return out


def good(o: TokenOutcome, slo_ms: dict[str, float]) -> bool:
    if not o.ok:
        return False
    measured = {"ttft": ttft_s(o), "tpot": tpot_s(o) or 0.0, "e2el": e2el_s(o)}
    return all((value := measured[k]) is not None and value * 1000 <= v for k, v in slo_ms.items())


def summary(outcomes: list[TokenOutcome], seconds: float, slo_ms: dict[str, float]) -> dict:
    """The token metrics of `outcomes`, their rates over `seconds` (the shape's or phase's duration)."""
    answered = [o for o in outcomes if o.ok]
    failed = [o.error or f"http {o.status}" for o in outcomes if not o.ok]
    out_tokens = sum(o.tokens_out for o in answered)
    in_tokens = [o.prompt_tokens for o in answered if o.prompt_tokens is not None]
    lags = [o.sent - o.due for o in outcomes if o.sent is not None]
    per_s = (lambda n: round(n / seconds, 4)) if seconds else (lambda n: None)
    return {
        "requests": len(outcomes),
        "completed": len(answered),
        "errors": len(failed),
        "timeouts": failed.count("timeout"),
        "errorKinds": dict(sorted(Counter(failed).items())),
        "offeredRps": per_s(len(outcomes)),
        "requestsPerS": per_s(len(answered)),
        "outputTokens": out_tokens,
        "inputTokens": sum(in_tokens) if in_tokens else None,
        "outputTokensPerS": per_s(out_tokens),
        # None when the server reported no usage: the prompt's words are not its tokens
        "inputTokensPerS": per_s(sum(in_tokens)) if in_tokens else None,
        "ttftMs": distribution_ms([t for o in answered if (t := ttft_s(o)) is not None]),
        "tpotMs": distribution_ms([t for o in answered if (t := tpot_s(o)) is not None]),
        "itlMs": distribution_ms([gap for o in answered for gap in itls_s(o)]),
        "e2eMs": distribution_ms([t for o in answered if (t := e2el_s(o)) is not None]),
        "goodputRps": per_s(sum(1 for o in outcomes if good(o, slo_ms))),
        "maxSendLagMs": round(max(lags) * 1000, 3) if lags else None,
    }


def shape_summary(run: StreamRun, phases, duration_s: float, slo_ms: dict[str, float], per_phase: bool) -> dict:
    """The shape's metrics, and per phase the same (the sweep's rates, the burst's steps)."""
    out = summary(run.outcomes, duration_s, slo_ms)
    if per_phase:
        out["phases"] = [
            {
                "label": p.label,
                "rate": p.rps,
                **summary([o for o in run.outcomes if o.label == p.label], p.seconds, slo_ms),
            }
            for p in phases
        ]
    return out


def sweep_curve(sweep: dict) -> list[dict]:
    """The throughput-latency curve of a sweep: per offered rate, output tokens/s against TTFT and TPOT (p50, p99),
    requests/s, goodput and errors."""
    return [
        {
            "offeredRps": p["rate"],
            "outputTokensPerS": p["outputTokensPerS"],
            "requestsPerS": p["requestsPerS"],
            "goodputRps": p["goodputRps"],
            "ttftMs": {q: (p["ttftMs"] or {}).get(q) for q in ("p50", "p99")},
            "tpotMs": {q: (p["tpotMs"] or {}).get(q) for q in ("p50", "p99")},
            "errors": p["errors"],
        }
        for p in sweep.get("phases", [])
    ]


def best_goodput(shapes_seen: dict) -> dict:
    """The highest goodput measured at one offered rate (the sweep's rates, or a whole shape where there is no sweep),
    with the rate and the output tokens/s there."""
    candidates = [
        (p["goodputRps"] or 0.0, p["rate"], p["outputTokensPerS"], f"sweep at {p['rate']:g}")
        for p in (shapes_seen.get("sweep") or {}).get("phases", [])
    ] or [
        (s["goodputRps"] or 0.0, s["offeredRps"], s["outputTokensPerS"], name)
        for name, s in shapes_seen.items()
        if name != "sparse"
    ]
    if not candidates:
        return {"rps": None, "offeredRps": None, "outputTokensPerS": None, "at": None}
    rps, rate, tokens, at = max(candidates, key=lambda c: (c[0], -(c[1] or 0.0)))
    return {"rps": rps, "offeredRps": rate, "outputTokensPerS": tokens, "at": at}
