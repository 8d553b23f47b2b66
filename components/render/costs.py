"""The cost estimate's values, pure: `Cost` (an hourly amount and its month), `Item` (one slice entry or pool on
its three bases), `Estimate` (the items, fees, totals and every rate used), the bases' wording, and the rates a
stack lacks (`MissingRate`, `PricingError`). `pricing.estimate` builds them from a stack (module `pricing` says
how)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Optional

from ..catalog.prices import (
    CURRENCY,
    HOURS_PER_MONTH,
    UNITS,
    Rate,
    _number,
    _plain,
)
from ..spec.paths import PROJECT
from ..spec.problems import ConfigError, Problem
from . import fees as gke_fees

RATES_KEY = f"{PROJECT}:pricing.rates"


@dataclass(frozen=True)
class MissingRate:
    kind: str
    name: str
    capacity: str
    region: str
    needed_by: tuple[str, ...]  # "tpuSlices v6e-64", ...
    doubted: str = ""  # why the price table's row for it is not used (catalog/price_checks.py), if it has one

    @property
    def message(self) -> str:
        why = f"; the price table's row is not trusted: {self.doubted}" if self.doubted else ""
        return (
            f"no rate for {self.kind} {self.name} {self.capacity} in {self.region} ({', '.join(self.needed_by)})"
            f"{why}; add {{kind: {self.kind}, name: {self.name}, capacity: {self.capacity}, region: {self.region}, "
            f"hourly: <USD per {UNITS[self.kind]}>}}"
        )

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "capacity": self.capacity,
            "region": self.region,
            "neededBy": list(self.needed_by),
            **({"doubted": self.doubted} if self.doubted else {}),
            "problem": f"{RATES_KEY}: {self.message}",
        }


class PricingError(ConfigError):
    """Rates that neither the stack nor the price table has; one problem per missing rate, each naming the entry of
    `ray-tpu-gke:pricing.rates` to add."""

    def __init__(self, missing: list[MissingRate]):
        self.missing = missing
        super().__init__([Problem(RATES_KEY, m.message) for m in missing])


def _money(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class Cost:
    """An hourly amount and its month (x 730)."""

    hourly: Decimal

    @property
    def monthly(self) -> Decimal:
        return self.hourly * HOURS_PER_MONTH

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.hourly + other.hourly)

    def to_json(self) -> dict:
        # Exact: a rate (at most a few decimals) times whole units; rounded only to keep binary-float noise out.
        return {"hourly": _number(_money(self.hourly, 6)), "monthly": _number(_money(self.monthly, 6))}


ZERO = Cost(Decimal(0))


@dataclass(frozen=True)
class Item:
    """One slice entry or node pool: its rate, how many units (chips or nodes) it runs, and what that costs."""

    kind: str  # tpuSlice | gpuPool | cpuPool
    name: str  # as in the config (the system pool: "system")
    capacity: str
    rate: Rate
    unit: str  # "chip" or "node"
    quantity: int  # units at the configured size
    per_slice: int = 0  # TPU: chips per slice
    slices: int = 0  # TPU: slices at the configured size
    min_quantity: Optional[int] = None  # None: a fixed size
    max_quantity: Optional[int] = None
    stranded_quantity: int = 0
    stranded_reason: str = ""

    def _cost(self, quantity: int) -> Cost:
        return Cost(self.rate.hourly * quantity)

    @property
    def cost(self) -> Cost:
        return self._cost(self.quantity)

    @property
    def hourly(self) -> Decimal:
        return self.cost.hourly

    @property
    def monthly(self) -> Decimal:
        return self.cost.monthly

    @property
    def autoscaled(self) -> bool:
        return self.min_quantity is not None

    @property
    def min(self) -> Cost:
        return self._cost(self.quantity if self.min_quantity is None else self.min_quantity)

    @property
    def max(self) -> Cost:
        return self._cost(self.quantity if self.max_quantity is None else self.max_quantity)

    @property
    def stranded(self) -> Cost:
        return self._cost(self.stranded_quantity)

    def size(self, quantity: Optional[int] = None) -> str:
        """`2 slices x 64 chips`, `3 nodes`."""
        quantity = self.quantity if quantity is None else quantity
        if self.kind == "tpuSlice":
            slices = quantity // self.per_slice if self.per_slice else 0
            return f"{slices} slice{'s' if slices != 1 else ''} x {self.per_slice} chips"
        return f"{quantity} node{'s' if quantity != 1 else ''}"

    @property
    def basis(self) -> str:
        """How the hourly amount is computed: `2 slices x 64 chips x $2.70/chip-hour`."""
        return f"{self.size()} x ${_plain(self.rate.hourly)}/{self.rate.unit}"

    def to_json(self) -> dict:
        out = {
            "kind": self.kind,
            "name": self.name,
            "capacity": self.capacity,
            "quantity": self.quantity,
            "unit": self.unit,
            "rate": {
                "kind": self.rate.kind,
                "name": self.rate.name,
                "capacity": self.rate.capacity,
                "region": self.rate.region,
                "hourly": _number(self.rate.hourly),
                "from": self.rate.origin,
            },
            **self.cost.to_json(),
        }
        if self.kind == "tpuSlice":
            out["slices"], out["chipsPerSlice"] = self.slices, self.per_slice
            out["perSlice"] = self._cost(self.per_slice).to_json()  # what one slice costs, whatever the basis
        if self.autoscaled:
            out["min"] = {"quantity": self.min_quantity, **self.min.to_json()}
            out["max"] = {"quantity": self.max_quantity, **self.max.to_json()}
        if self.stranded_quantity:
            out["stranded"] = {
                "quantity": self.stranded_quantity,
                "reason": self.stranded_reason,
                **self.stranded.to_json(),
            }
        return out


BASES = {
    "configured": "what the config runs at: fixed-size pools at their size, autoscaled slices and pools at the "
    "replicas their Ray worker groups ask for (within their minimum and maximum), the system pool at "
    "minNodes",
    "min": "every autoscaled slice and pool at its minimum (Autopilot: none)",
    "max": "every autoscaled slice and pool at its maximum",
    "fees": "the GKE cluster management fee counts in full on every basis; the free tier's credit is stated, not "
    "subtracted",
}


@dataclass(frozen=True)
class Estimate:
    region: str
    items: tuple[Item, ...]
    today: date
    monthly_budget: Optional[Decimal] = None
    warnings: tuple[str, ...] = ()
    currency: str = CURRENCY
    missing: tuple[MissingRate, ...] = ()  # rates found nowhere: their items are not in the amounts
    fees: tuple[gke_fees.ClusterFee, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def rates(self) -> tuple[Rate, ...]:
        """Every rate used, once, in the order the items use them."""
        seen: dict[tuple, Rate] = {}
        for item in self.items:
            r = item.rate
            seen.setdefault((r.origin, r.kind, r.name, r.capacity, r.region), r)
        return tuple(seen.values())

    @property
    def fee(self) -> Cost:
        return sum((Cost(f.hourly) for f in self.fees), ZERO)

    @property
    def total(self) -> Cost:
        return sum((i.cost for i in self.items), self.fee)

    @property
    def min(self) -> Cost:
        return sum((i.min for i in self.items), self.fee)

    @property
    def max(self) -> Cost:
        return sum((i.max for i in self.items), self.fee)

    @property
    def stranded(self) -> Cost:
        return sum((i.stranded for i in self.items), ZERO)

    @property
    def oldest_as_of(self) -> Optional[date]:
        dates = [r.as_of for r in self.rates if r.as_of is not None]
        return min(dates) if dates else None

    @property
    def age_days(self) -> Optional[int]:
        """How old the oldest dated rate used is, in days, on `today`."""
        oldest = self.oldest_as_of
        return (self.today - oldest).days if oldest else None

    @property
    def over_budget(self) -> bool:
        """The maximum basis over the budget (an incomplete estimate is judged by the policy rule: it fails)."""
        return self.monthly_budget is not None and self.max.monthly > self.monthly_budget

    def item(self, kind: str, name: str) -> Item:
        return next(i for i in self.items if (i.kind, i.name) == (kind, name))

    def to_json(self) -> dict:
        """The plan's `cost` object: deterministic (no age: that depends on the day it is read). Where rates are
        missing, `missing` names them and `total` sums only what is priced (`complete: false`)."""
        out = {
            "currency": self.currency,
            "region": self.region,
            "hoursPerMonth": HOURS_PER_MONTH,
            "bases": dict(BASES),
            "budgetBasis": "max",
            "complete": self.complete,
            "rates": [r.to_json() for r in self.rates],
            "items": [i.to_json() for i in self.items],
            "fees": [f.to_json() for f in self.fees],
            "total": {**self.total.to_json(), "min": self.min.to_json(), "max": self.max.to_json()},
            "stranded": self.stranded.to_json(),
        }
        if self.missing:
            out["missing"] = [m.to_json() for m in self.missing]
        oldest = self.oldest_as_of
        if oldest:
            out["oldestAsOf"] = oldest.isoformat()
        if self.monthly_budget is not None:
            out["monthlyBudget"] = _number(self.monthly_budget)
        return out
