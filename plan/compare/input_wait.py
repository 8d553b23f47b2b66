"""Is a side's job input-bound? The share of its training loop's time spent waiting for the next batch, as Ray Data
measured it in the job (the result document's `input`, written by workloads.token_files for the default training
job), beside the step time on real data and on synthetic data already on the devices, and one verdict sentence.

report.json carries it per side as `input` (docs/compare.md "Input wait"); report.md as two table rows and the
verdict. Pure: documents in, fields and text out.
"""

from __future__ import annotations

from typing import Optional

# At or above this share of the loop's time spent waiting for batches a side counts as input-bound: a tenth of every
# step is what a faster input pipeline (more read parallelism, prefetching, a nearer copy of the data) would win back.
INPUT_BOUND_SHARE = 0.10
FIELDS = ("waitShare", "blockedS", "iterS", "firstBatchS", "pausedS", "syntheticStepTimeS", "source")


def _ms(value: float) -> str:
    return f"{value * 1000:.3g} ms"


def verdict(share: Optional[float], step_s: Optional[float], synthetic_s: Optional[float]) -> str:
    """'input-bound: 38 % of step time waiting on data' or 'not input-bound: ...', with the step times beside it."""
    if share is None:
        return "not measured: the job reports no input statistics (Ray Data's iterator statistics)"
    bound = "input-bound" if share >= INPUT_BOUND_SHARE else "not input-bound"
    text = f"{bound}: {share * 100:.0f} % of step time waiting on data"
    if step_s is not None and synthetic_s is not None:
        text += f" (a step takes {_ms(step_s)} on the job's data, {_ms(synthetic_s)} on synthetic data)"
    return text


def side_input(result: dict, step_time: Optional[dict]) -> dict:
    """The side's `input` object: Ray Data's figures as the job reported them, the side's median step time, and the
    verdict."""
    measured = result.get("input") or {}
    out = {key: measured.get(key) for key in FIELDS}
    out["stepTimeS"] = (step_time or {}).get("p50")
    out["verdict"] = verdict(out["waitShare"], out["stepTimeS"], out["syntheticStepTimeS"])
    return out


def rows(sides: list[dict]) -> list[tuple[str, list[str]]]:
    """report.md's rows: the wait share and the synthetic step time, per side."""

    def share(side: dict) -> str:
        value = (side.get("input") or {}).get("waitShare")
        return "not measured" if value is None else f"{value * 100:.1f} %"

    def synthetic(side: dict) -> str:
        value = (side.get("input") or {}).get("syntheticStepTimeS")
        return "not measured" if value is None else _ms(value)

    return [
        ("input wait (Ray Data: blocked / iterator time)", [share(s) for s in sides]),
        ("step time on synthetic data (p50)", [synthetic(s) for s in sides]),
    ]


def sentences(sides: list[dict], simulated: bool) -> list[str]:
    """One verdict per side that reported one; a simulated side's is what this machine's rehearsal measured."""
    out = []
    for side in sides:
        found = side.get("input")
        if not found or found.get("waitShare") is None:
            continue
        where = " in this rehearsal (the CPU standing in, data on this machine's disk)" if simulated else ""
        out.append(f"{side['name']}{where}: {found['verdict']}.")
    return out
