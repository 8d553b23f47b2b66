"""The plan's cost: the estimate of `ray_tpu_gke.render.pricing` attached to the plan JSON (`cost`), and its table for
people.

A rate that neither the stack nor the price table has does not stop the plan, nor drop the estimate: every item whose
rate is known is priced, `cost.missing` names the others (each with the `ray-tpu-gke:pricing.rates` entry to add),
`cost.complete` is false, and each missing rate is one `warning:` line. A missing amount is never zero or guessed;
what must not pass without it fails closed: the `--fail-on-cost-increase` gate and the policy pack's monthly budget
rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Optional

from pydantic import ValidationError
from ray_tpu_gke.catalog import prices
from ray_tpu_gke.render import pricing
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.models import PricingConfig, validate_as
from ray_tpu_gke.spec.problems import ConfigError, Problem
from rich.table import Table

from .harness import Plan


@dataclass
class CostResult:
    """The estimate of a stack, with the rates it could not find (`estimate.missing`)."""

    estimate: Optional[pricing.Estimate]
    error: Optional[pricing.PricingError] = None  # a strict estimate's error (kept for callers that raise)
    json: dict = field(default_factory=dict)
    rates_key: str = pricing.RATES_KEY  # where the project sets a rate: its stack's key, or LIBRARY_RATES

    @property
    def problems(self) -> list[str]:
        """One line per missing rate: `ray-tpu-gke:pricing.rates: no rate for ...; add {...}`."""
        if self.error:
            return [str(p) for p in self.error.problems]
        return [f"{self.rates_key}: {m.message}" for m in (self.estimate.missing if self.estimate else ())]

    @property
    def warnings(self) -> list[str]:
        """What the plan prints as `warning:` lines: missing rates, stack rates nothing uses, old prices."""
        out = list(self.problems)
        if self.estimate is not None:
            out += list(self.estimate.warnings)
            age = self.estimate.age_days
            if age is not None and age > prices.STALE_AFTER_DAYS:
                out.append(
                    f"the oldest price used is {age} days old ({self.estimate.oldest_as_of}); regenerate "
                    "components/catalog/data/prices.yaml from a newer snapshot (scripts/prices.py) or set "
                    + (f"the stack's {self.rates_key}" if self.rates_key == pricing.RATES_KEY else self.rates_key)
                )
        return out


# Where a program that configures the library itself sets a rate: a rates file given to `ray-tpu-gke plan`.
LIBRARY_RATES = "`rates:` of a rates file given with `--rates FILE`"


def read_rates(path: Path) -> PricingConfig:
    """A rates file: the `ray-tpu-gke:pricing` mapping of a stack file (`rates:` entries and `monthlyBudget`), for a
    program that configures the library itself. ConfigError names the file and the entry."""
    from . import yamlfile

    try:
        raw = yamlfile.read(path)
    except OSError as error:
        raise ConfigError([Problem(f"--rates {path}", f"cannot read: {error.strerror or error}")]) from None
    except ConfigError as error:
        raise ConfigError([Problem(f"--rates {path}", str(p)) for p in error.problems]) from None
    try:
        return validate_as(PricingConfig, raw if raw is not None else {}, "stack")
    except ValidationError as error:
        raise ConfigError(
            [
                Problem(
                    f"--rates {path}: "
                    + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip("."),
                    e["msg"],
                )
                for e in error.errors()
            ]
        ) from None


def estimate(config: StackConfig, today: Optional[date] = None, table=None) -> CostResult:
    result = pricing.estimate(config, table=table, today=today)
    return CostResult(result, None, result.to_json())


def attach(plan: Plan, config: StackConfig, today: Optional[date] = None) -> CostResult:
    """Put the stack's cost on the plan (`Plan.cost`, the plan JSON's top-level `cost`)."""
    result = estimate(config, today)
    plan.cost = result.json
    return result


# --- the table ------------------------------------------------------------------------------------------------------


def usd(value: Decimal, places: int = 2) -> str:
    return pricing.format_usd(Decimal(value), places)


def rate_text(rate: prices.Rate) -> str:
    """`$2.70/chip-hour`, `$0.26805/VM-hour`: every digit of the rate, at least cents."""
    amount = rate.hourly.normalize()
    if amount.as_tuple().exponent > -2:
        amount = amount.quantize(Decimal("0.01"))
    return f"${amount:,f}/{rate.unit}"


def _range(item: pricing.Item) -> str:
    if not item.autoscaled:
        return "fixed"
    return f"{usd(item.min.monthly, 0)} – {usd(item.max.monthly, 0)}"


def table(result: CostResult) -> Table:
    """$/hour and $/month per TPU slice entry, node pool and cluster fee, at the configured basis, the range where it
    scales, and the totals (of what is priced, where rates are missing)."""
    e = result.estimate
    age = f", {e.age_days} days old; a warning past {prices.STALE_AFTER_DAYS}" if e.age_days is not None else ""
    oldest = f"; rates as of {e.oldest_as_of}{age}" if e.oldest_as_of else ""
    t = Table(title=f"Cost estimate ({e.currency}, {e.region}{oldest})", title_justify="left")
    for column in ("item", "kind", "capacity", "size", "rate", "$/hour", "$/month", "$/month range"):
        t.add_column(column, justify="right" if column.startswith("$") else "left")
    for item in e.items:
        rate = rate_text(item.rate)
        if item.rate.origin == "stack":
            rate += " (stack)"
        t.add_row(
            item.name, item.kind, item.capacity, item.size(), rate, usd(item.hourly), usd(item.monthly), _range(item)
        )
    for fee in e.fees:
        t.add_row(
            fee.name,
            fee.kind,
            fee.mode,
            "1 cluster",
            f"${fee.hourly:.2f}/cluster-hour",
            usd(fee.hourly),
            usd(fee.monthly),
            "fixed",
        )
    for m in e.missing:
        t.add_row(", ".join(m.needed_by), m.kind, m.capacity, "", "no rate", "?", "?", "?")
    t.add_section()
    total_range = f"{usd(e.min.monthly, 0)} – {usd(e.max.monthly, 0)}" if e.min != e.max else "fixed"
    label = "total" if e.complete else "total (priced items)"
    t.add_row(label, "", "", "", "", usd(e.total.hourly), usd(e.total.monthly), total_range)
    return t


ACCELERATOR_ITEMS = ("tpuSlice", "gpuPool")


def scales_from_zero(e: pricing.Estimate) -> bool:
    """Whether every TPU slice entry and GPU pool of the stack has no node while no job asks for one."""
    accelerators = [i for i in e.items if i.kind in ACCELERATOR_ITEMS]
    return bool(accelerators) and all(i.autoscaled and i.min_quantity == 0 for i in accelerators)


def bases_line(e: pricing.Estimate) -> str:
    """The three bases side by side, each said for what it is. A stack whose accelerators all scale from zero is said
    per hour of a running job first: a month of always-on hardware is not what it costs."""
    partial = "" if e.complete else f" (without {len(e.missing)} unpriced rate{'s' if len(e.missing) != 1 else ''})"
    fee = (
        f"; each includes the GKE cluster fee ({'; '.join(f.credit_rule for f in e.fees)})"
        if e.fees
        else "; no GKE cluster fee (the program creates no cluster)"
    )
    if scales_from_zero(e):
        running = ", ".join(f"{i.name} {usd(i.hourly)}/hour" for i in e.items if i.kind in ACCELERATOR_ITEMS)
        return (
            f"Monthly{partial}: every TPU slice and GPU pool scales from zero, so the stack costs "
            f"{usd(e.min.monthly)}/month while no job runs, and each job adds its hardware's price per hour only "
            f"while it runs ({running}, at the size its Ray worker groups ask for). Had every pool run the whole "
            f"month: {usd(e.total.monthly)} as configured, {usd(e.max.monthly)} at maximum{fee}"
        )
    return (
        f"Monthly{partial}: {usd(e.total.monthly)} as configured (autoscaled pools at their Ray worker groups' "
        f"replicas), {usd(e.min.monthly)} at minimum, {usd(e.max.monthly)} at maximum{fee}"
    )


def stranded_line(e: pricing.Estimate) -> str:
    stranded = [i for i in e.items if i.stranded_quantity]
    if not stranded:
        return "Stranded: none (every provisioned slice and pool is used by a Ray worker group)"
    parts = [
        f"{i.name}: {i.size(i.stranded_quantity)}, {usd(i.stranded.hourly)}/hour — {i.stranded_reason}"
        for i in stranded
    ]
    return (
        f"Stranded: {usd(e.stranded.hourly)}/hour, {usd(e.stranded.monthly)}/month provisioned that no Ray "
        f"worker group uses ({'; '.join(parts)})"
    )


def budget_line(e: pricing.Estimate) -> Optional[str]:
    if e.monthly_budget is None:
        return None
    if not e.complete:
        return (
            f"Monthly budget {usd(e.monthly_budget)}: cannot be checked, rates are missing (policy rule "
            "cost-monthly-budget fails closed)"
        )
    verdict = "exceeds" if e.over_budget else "is within"
    return (
        f"Monthly budget {usd(e.monthly_budget)}: at most {usd(e.max.monthly)}/month (the maximum basis) "
        f"{verdict} it (policy rule cost-monthly-budget)"
    )


def print_cost(result: CostResult, console) -> None:
    from rich.markup import escape

    e = result.estimate
    console.print(table(result))
    console.print(escape(bases_line(e)))
    console.print(escape(stranded_line(e)))
    budget = budget_line(e)
    if budget:
        red = e.over_budget or not e.complete
        console.print(("[bold red]" if red else "") + escape(budget) + ("[/]" if red else ""))
    console.print("Rates used:")
    for r in e.rates:
        console.print(
            escape(
                f"  {r.kind} {r.name} {r.capacity} {r.region or 'all regions'}: {rate_text(r)} "
                f"({'stack' if r.origin == 'stack' else 'price table'}, as of {r.as_of or 'undated'}, "
                f"{r.source})"
            )
        )
    for f in e.fees:
        console.print(
            escape(
                f"  GKE cluster fee: ${f.hourly:.2f}/cluster-hour (as of {f.to_json()['asOf']}, "
                f"{f.to_json()['source']})"
            )
        )
    from .terminal import print_warnings

    print_warnings([f"warning: {' '.join(w.split())}" for w in result.warnings], console)
    console.print(
        "[dim]List prices; not included: Autopilot pod charges, disks, storage, network. Monthly = hourly "
        "x 730. See docs/cost.md.[/]"
    )
