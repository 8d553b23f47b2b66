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

import math
import sys
from pathlib import Path
from typing import Any, Optional

from ray_tpu_gke import bench, inputfile

from .. import arguments
from . import limits, memory
from .sides import SidePlan, flag_value

DEFAULT_MFU = "0.3,0.6"
DEFAULT_OUT = Path("compare-estimate")  # not compare-report/: that holds the rehearsal the FLOPs may come from
REPORT_SCHEMA = "ray-tpu-gke/compare-report/v1"
LABEL = "estimate"
EFLOP = 1e18
ANALYTIC_SOURCE = "analytic: 6 x parameters x tokens + causal attention (MaxText's count) of the declared model"


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


def parse_mfu_args(values: Optional[list[str]]) -> tuple[tuple[float, float], dict[str, tuple[float, float]]]:
    """Every `--mfu`: `LO,HI` (every side; the last one given wins) or `SIDE=LO,HI` (that side); the range for every
    side and the ranges by side."""
    default, by_side = parse_mfu(DEFAULT_MFU), {}
    for value in values or []:
        side, equals, span = value.rpartition("=")
        if equals and not side.strip():
            raise ValueError(f"{value!r} is not allowed; allowed: SIDE=LO,HI naming a side, or LO,HI")
        try:
            parsed = parse_mfu(span)
        except ValueError as error:
            raise ValueError(f"{value!r} is not allowed; {error}") from None
        if side.strip():
            by_side[side.strip()] = parsed
        else:
            default = parsed
    return default, by_side


MODEL_KEYS = {"parameters": float, "layers": int, "dModel": int, "heads": int, "seqLen": int, "batch": int}


def parse_model(text: str) -> dict:
    """`--model parameters=124e6,layers=12,dModel=768,heads=12,seqLen=1024,batch=256`: the model whose memory fit and
    analytic FLOPs the estimate judges (only `parameters` is required; `batch` is sequences per global batch)."""
    out: dict[str, Any] = {}
    for part in (p for p in text.split(",") if p.strip()):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in MODEL_KEYS:
            raise ValueError(f"{part!r}: allowed keys {', '.join(MODEL_KEYS)}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{part!r}: {value.strip()!r} is not a number") from None
        if not number > 0 or (MODEL_KEYS[key] is int and number != int(number)):
            raise ValueError(f"{part!r}: a positive {'whole number' if MODEL_KEYS[key] is int else 'number'}")
        out[key] = MODEL_KEYS[key](number)
    if "parameters" not in out:
        raise ValueError("parameters=N is required (the model's trainable parameters)")
    return out


def measured(path: Path) -> dict[str, dict]:
    """FLOPs and tokens per step by side name (None: every side) from a comparison report or a job's result."""
    try:
        document = inputfile.read_json(path, "--measured", "a comparison report or a job's result document")
    except inputfile.InputError as error:
        raise EstimateError(str(error)) from None
    report = isinstance(document, dict) and "sides" in document
    rows = document.get("sides") if report else [document]
    out: dict[str, dict] = {}
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        if isinstance(row, dict) and arguments.positive_number(row.get("flopsPerStep")):
            where = f"--measured {path}: " + (f"sides[{i}]." if report else "")
            key = row.get("name") or row.get("side")
            if key is not None and not isinstance(key, str):
                raise EstimateError(f"{where}{'name' if row.get('name') else 'side'}: {key!r} is not a side's name")
            if row["flopsPerStep"] < 1:
                raise EstimateError(f"{where}flopsPerStep: {row['flopsPerStep']!r} is below one FLOP")
            model = _declared_model(row, where)
            out[key] = {
                "flopsPerStep": float(row["flopsPerStep"]),
                "tokensPerStep": _positive(row, "tokensPerStep", where, int),
                "simulated": row.get("simulated") is True,
                "from": str(path),
                # The model the job declared (workloads.train: parameters, layers, dModel, heads, seqLen) and its
                # global batch, for the memory fit.
                "model": model,
            }
    if not out:
        raise EstimateError(
            f"--measured {path}: no side or result there declares flopsPerStep (a job reports it "
            "in its result document); pass --flops-per-step"
        )
    return out


def _positive(row: dict, key: str, where: str, kind: type) -> Any:
    """row[key] as `kind` where it is a positive number (a whole one for int), None where absent or null."""
    value = row.get(key)
    if value is None:
        return None
    if not arguments.positive_number(value) or (kind is int and value != int(value)):
        allowed = "a positive whole number" if kind is int else "a positive number"
        raise EstimateError(f"{where}{key}: {value!r} is not {allowed}")
    return kind(value)


def _declared_model(row: dict, where: str) -> Optional[dict]:
    """The model a result declared (MODEL_KEYS of its `model`, each checked) and its global batch (batchSize)."""
    model = row.get("model")
    if not isinstance(model, dict):
        return None
    declared = {
        key: _positive(model, key, f"{where}model.", kind) for key, kind in MODEL_KEYS.items() if key != "batch"
    }
    declared["batch"] = _positive(row, "batchSize", where, int)
    return {key: value for key, value in declared.items() if value is not None}


def non_finite(value: Any, path: str = "") -> Optional[str]:
    """The key path of the first number in `value` that is infinite or NaN (None: every one is finite)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} ({value})"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = non_finite(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key)
        if found:
            return found
    return None


def steps_of(side: SidePlan, steps: Optional[int]) -> Optional[int]:
    """The job's length: --steps, else the side's own entrypoint's --steps."""
    if steps is not None:
        return steps
    value = flag_value(side.entrypoint, "--steps")
    return int(value) if value and value.isdigit() else None


def _span(low: Optional[float], high: Optional[float]) -> Optional[dict]:
    return None if low is None or high is None else {"low": min(low, high), "high": max(low, high)}


def cost_per_peak_eflop(side: SidePlan) -> Optional[float]:
    """USD per 10^18 FLOPs at the side's peak: its hardware's price for the time all its devices take to do them at
    100 % MFU. A job's cost is its FLOPs x this / its MFU, so two sides' ratio of it is the break-even MFU ratio."""
    peak = limits.peak_of(side)
    if peak is None or side.hourly is None:
        return None
    return side.hourly / 3600.0 / (side.devices * peak.bf16_flops_per_s) * EFLOP


def side_estimate(
    side: SidePlan,
    flops: Optional[float],
    tokens: Optional[float],
    steps: Optional[int],
    mfu_range: tuple[float, float],
    source: Optional[str],
    model: Optional[dict] = None,
) -> tuple[dict, list[str]]:
    """One side of the estimate, and what it could not estimate. `model`: the declared model (memory fit, and the
    analytic FLOPs where the job declares none)."""
    peak = limits.peak_of(side)
    if tokens is None and model and model.get("batch") and model.get("seqLen"):
        tokens = model["batch"] * model["seqLen"]
    analytic = bench.from_model(model, tokens)
    if flops is None and analytic is not None:
        flops, source = analytic["total"], ANALYTIC_SOURCE
    out: dict[str, Any] = {
        "name": side.name,
        "kind": side.kind,
        "accelerator": side.accelerator,
        "capacity": side.capacity,
        "runsOn": side.item,
        "devices": side.devices,
        "peakFlopsPerS": peak.bf16_flops_per_s if peak else None,
        "peakPrecision": limits.PEAK_PRECISION,
        "peakSource": peak.source if peak else None,
        "hbmGiBPerDevice": round(peak.hbm_gib, 1) if peak else None,
        "hourlyUsd": side.hourly,
        "costPerPeakEflopUsd": cost_per_peak_eflop(side),
        "flopsPerStep": flops,
        "flopsSource": source,
        "tokensPerStep": tokens,
        "steps": steps,
        "estimate": True,
        "simulated": False,
        "mfuRange": {"low": mfu_range[0], "high": mfu_range[1]},
        "model": model,
        "memoryFit": memory.fit(model, (model or {}).get("batch"), side.devices, peak.hbm_bytes if peak else None),
    }
    if source != ANALYTIC_SOURCE:
        check = bench.cross_check(flops, analytic)
        if check is not None:
            out["flopsCheck"] = check
    problems = []
    if peak is None:
        problems.append(
            f"{side.name}: peakFlopsPerS: the catalogue has no peak for {side.generation or side.gpu_accelerator}"
        )
    if flops is None:
        problems.append(
            f"{side.name}: flopsPerStep: not declared (--flops-per-step, --measured FILE, or --model with "
            "parameters, layers, dModel, heads, seqLen and batch)"
        )
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


def break_even(rows: list[dict]) -> list[dict]:
    """Per TPU side against each GPU side (or, without both kinds, the first side against each other one): the MFU
    ratio at which both cost the same per job, from their costs per peak FLOP. The first costs less while its MFU is
    at least `mfuRatio` x the other's; `atRanges` says what the declared MFU ranges make of it."""
    tpus, gpus = [r for r in rows if r["kind"] == "tpu"], [r for r in rows if r["kind"] == "gpu"]
    pairs = [(t, g) for t in tpus for g in gpus] if tpus and gpus else [(rows[0], r) for r in rows[1:]]
    out = []
    for a, b in pairs:
        ca, cb = a.get("costPerPeakEflopUsd"), b.get("costPerPeakEflopUsd")
        if not ca or not cb:
            continue
        ratio = ca / cb
        low = a["mfuRange"]["low"] / b["mfuRange"]["high"]  # the least favourable pairing of the ranges for `a`
        high = a["mfuRange"]["high"] / b["mfuRange"]["low"]
        at = "cheaper" if low >= ratio else "dearer" if high < ratio else "either"
        out.append(
            {
                "side": a["name"],
                "against": b["name"],
                "mfuRatio": ratio,
                "costPerPeakEflopUsd": [ca, cb],
                "rangeRatio": {"low": low, "high": high},
                "atRanges": at,
            }
        )
    return out


def build(
    stack: str,
    found: list[SidePlan],
    *,
    flops: Optional[float],
    tokens: Optional[float],
    by_side: dict[str, dict],
    steps: Optional[int],
    mfu_range: tuple[float, float],
    mfu_by_side: Optional[dict[str, tuple[float, float]]] = None,
    model: Optional[dict] = None,
    prices: Optional[dict] = None,
) -> dict:
    """report.json of an estimate: every side at its MFU range (`mfu_by_side`, else `mfu_range`), its memory fit for
    the declared model (`model`, else the one the measured job declared), the break-even MFU ratios, and what could
    not be estimated."""
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
        row, lacking = side_estimate(
            side,
            side_flops,
            side_tokens,
            steps_of(side, steps),
            (mfu_by_side or {}).get(side.name, mfu_range),
            source,
            model or declared.get("model"),
        )
        if flops is None and declared.get("simulated") and row["flopsSource"] != ANALYTIC_SOURCE:
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
        "breakEven": break_even(sides),
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
    unknown = sorted(set(args.mfu_by_side) - {s.name for s in found})
    if unknown:
        print(
            f"error: --mfu names {', '.join(unknown)}, not a side of this estimate; its sides: "
            f"{', '.join(s.name for s in found)}",
            file=sys.stderr,
        )
        return 2
    if args.flops_per_step is None and not (args.model and args.measured is None):
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
        mfu_by_side=args.mfu_by_side,
        model=args.model,
        prices={"currency": c.get("currency"), "region": c.get("region"), "oldestAsOf": c.get("oldestAsOf")},
    )
    overflowed = non_finite(document)
    if overflowed:
        print(
            f"error: the estimate's {overflowed} is beyond 64-bit floating point: the numbers given (--model, "
            "--flops-per-step, --tokens-per-step, --steps, --mfu or --measured) are out of its range",
            file=sys.stderr,
        )
        return 2
    out = DEFAULT_OUT if args.out == default_out else args.out
    failed = output.write_or_say(document, out)
    if failed is not None:
        return failed
    from .estimate_render import lines

    for line in lines(document):
        print(line)
    return output.say(document, out)
