"""`python -m plan.compare STACK --estimate`: before any hardware exists, what each side's job would take and cost
if it reached a stated share of its hardware's peak (an MFU range, 30-60 % by default).

Per side: step time = FLOPs per step / (MFU x devices x peak dense bf16 FLOP/s per device, components/catalog/
peaks.py); a job of N steps takes N step times (training steps only: no start-up, compilation or checkpoints) and
costs that time at the plan's price of the side's hardware; per million tokens where the job says how many tokens a
step takes. The FLOPs per step are the job's own: `--flops-per-step`, or the `flopsPerStep` a comparison report
(`make compare` writes compare-report/report.json) or a job's result document holds. Every number is an estimate and
says so; report.json has `"mode": "estimate"`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from ray_tpu_gke import inputfile

from .. import arguments
from . import limits
from .sides import SidePlan, flag_value

DEFAULT_MFU = "0.3,0.6"
DEFAULT_OUT = Path("compare-estimate")  # not compare-report/: that holds the rehearsal the FLOPs may come from
REPORT_SCHEMA = "ray-tpu-gke/compare-report/v1"
LABEL = "estimate"


class EstimateError(ValueError):
    pass


def parse_mfu(text: str) -> tuple[float, float]:
    """`LO,HI` as two fractions with 0 < LO <= HI <= 1."""
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise ValueError("allowed: two fractions LO,HI such as 0.3,0.6") from None
    if not 0 < low <= high <= 1:
        raise ValueError("allowed: 0 < LO <= HI <= 1 (fractions of the peak, such as 0.3,0.6)")
    return low, high


def measured(path: Path) -> dict[str, dict]:
    """FLOPs and tokens per step by side name (None: every side) from a comparison report or a job's result."""
    try:
        document = inputfile.read_json(path, "--measured", "a comparison report or a job's result document")
    except inputfile.InputError as error:
        raise EstimateError(str(error)) from None
    rows = document.get("sides") if isinstance(document, dict) and "sides" in document else [document]
    out: dict[str, dict] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and arguments.positive_number(row.get("flopsPerStep")):
            key = row.get("name") or row.get("side")
            out[key] = {
                "flopsPerStep": float(row["flopsPerStep"]),
                "tokensPerStep": row.get("tokensPerStep"),
                "simulated": row.get("simulated"),
                "from": str(path),
            }
    if not out:
        raise EstimateError(
            f"--measured {path}: no side or result there declares flopsPerStep (a job reports it "
            "in its result document); pass --flops-per-step"
        )
    return out


def steps_of(side: SidePlan, steps: Optional[int]) -> Optional[int]:
    """The job's length: --steps, else the side's own entrypoint's --steps."""
    if steps is not None:
        return steps
    value = flag_value(side.entrypoint, "--steps")
    return int(value) if value and value.isdigit() else None


def _span(low: Optional[float], high: Optional[float]) -> Optional[dict]:
    return None if low is None or high is None else {"low": min(low, high), "high": max(low, high)}


def side_estimate(
    side: SidePlan,
    flops: Optional[float],
    tokens: Optional[float],
    steps: Optional[int],
    mfu_range: tuple[float, float],
    source: Optional[str],
) -> tuple[dict, list[str]]:
    """One side of the estimate, and what it could not estimate."""
    peak = limits.peak_of(side)
    out: dict[str, Any] = {
        "name": side.name,
        "kind": side.kind,
        "accelerator": side.accelerator,
        "capacity": side.capacity,
        "runsOn": side.item,
        "devices": side.devices,
        "peakFlopsPerS": peak.bf16_flops_per_s if peak else None,
        "peakSource": peak.source if peak else None,
        "hbmGiBPerDevice": round(peak.hbm_gib, 1) if peak else None,
        "hourlyUsd": side.hourly,
        "flopsPerStep": flops,
        "flopsSource": source,
        "tokensPerStep": tokens,
        "steps": steps,
        "estimate": True,
        "simulated": False,
        "mfuRange": {"low": mfu_range[0], "high": mfu_range[1]},
    }
    problems = []
    if peak is None:
        problems.append(
            f"{side.name}: peakFlopsPerS: the catalogue has no peak for {side.generation or side.gpu_accelerator}"
        )
    if flops is None:
        problems.append(f"{side.name}: flopsPerStep: not declared (--flops-per-step, or --measured FILE)")
    if steps is None:
        problems.append(f"{side.name}: steps: the entrypoint has no --steps; pass --steps N")
    if peak is None or flops is None:
        return out, problems
    fast, slow = (limits.step_time_at(flops, m, side.devices, peak.bf16_flops_per_s) for m in reversed(mfu_range))
    out["stepTimeS"] = _span(fast, slow)
    if steps is not None:
        out["jobTimeS"] = _span(fast * steps, slow * steps)
        if side.hourly is None:
            problems.append(f"{side.name}: jobCostUsd: {side.price_problem or 'no price'}")
        else:
            out["jobCostUsd"] = _span(*(t * steps / 3600.0 * side.hourly for t in (fast, slow)))
    if tokens:
        out["tokensPerS"] = _span(tokens / slow, tokens / fast)
        if side.hourly is not None:
            out["costPer1MTokensUsd"] = _span(*(t / 3600.0 * side.hourly / tokens * 1e6 for t in (fast, slow)))
    return out, problems


def build(
    stack: str,
    found: list[SidePlan],
    *,
    flops: Optional[float],
    tokens: Optional[float],
    by_side: dict[str, dict],
    steps: Optional[int],
    mfu_range: tuple[float, float],
    prices: Optional[dict] = None,
) -> dict:
    """report.json of an estimate: every side at the MFU range, and what could not be estimated."""
    sides, problems = [], []
    for side in found:
        # The side's own declaration; else (a result document, or a report without this side) the first one: the
        # same program runs on every side unless the stack gives a side another entrypoint.
        key = side.name if side.name in by_side else next(iter(by_side), None)
        declared = by_side.get(key) or {}
        side_flops = flops if flops is not None else declared.get("flopsPerStep")
        side_tokens = tokens if tokens is not None else declared.get("tokensPerStep")
        source = "--flops-per-step" if flops is not None else declared.get("from")
        if flops is None and key not in (side.name, None):
            source = f"{source} (side {key}: this side declared none)"
        row, lacking = side_estimate(side, side_flops, side_tokens, steps_of(side, steps), mfu_range, source)
        if flops is None and declared.get("simulated"):
            row["flopsNote"] = (
                "declared by the job in a local rehearsal: the FLOPs of the model size it ran, which "
                "is the live job's only if both run the same size"
            )
        sides.append(row)
        problems += lacking
    report = {
        "schema": REPORT_SCHEMA,
        "stack": stack,
        "mode": LABEL,
        "estimate": True,
        "simulated": False,
        "mfuRange": {"low": mfu_range[0], "high": mfu_range[1]},
        "sides": sides,
        "problems": problems,
        "complete": not problems,
    }
    if prices is not None:
        report["prices"] = prices
    return report


def main(args, plan: dict, found: list[SidePlan], default_out: Path) -> int:
    """The --estimate command: report.json, report.md and a chart in --out; exit 0 when every side was estimated."""
    from . import output

    by_side: dict = {}
    if args.flops_per_step is None:
        path = args.measured or default_out / "report.json"
        if args.measured is None and not path.exists():
            print(
                f"error: --estimate needs the job's FLOPs per step: --flops-per-step F, or --measured FILE (a "
                f"comparison report or a job's result document; {path} does not exist: `make compare` writes it)",
                file=sys.stderr,
            )
            return 2
        try:
            by_side = measured(path)
        except EstimateError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    c = plan.get("cost") or {}
    document = build(
        args.stack,
        found,
        flops=args.flops_per_step,
        tokens=args.tokens_per_step,
        by_side=by_side,
        steps=args.steps,
        mfu_range=args.mfu_range,
        prices={"currency": c.get("currency"), "region": c.get("region"), "oldestAsOf": c.get("oldestAsOf")},
    )
    out = DEFAULT_OUT if args.out == default_out else args.out
    failed = output.write_or_say(document, out)
    if failed is not None:
        return failed
    from .estimate_render import lines

    for line in lines(document):
        print(line)
    return output.say(document, out)
