"""What a stack costs per hour and per month, from a table of public list prices and the stack's own rates.

Pure (no Pulumi import). `estimate(config)` prices every TPU slice entry (chip-hours), GPU node pool and CPU node pool
(VM-hours) of a validated `StackConfig`, and returns an `Estimate`: one `Item` per slice entry or pool with its hourly
and monthly cost at its configured size, a min-max range where it autoscales, the capacity no Ray worker group uses
(stranded), the totals, and every rate used with its date and source.

Rates come from `components/catalog/data/prices.yaml` (public list prices: on-demand, Spot and flex-start, each row with the
region, the date it was read and its source) and from the stack's `ray-tpu-gke:pricing.rates`, which win over the
table (a rate without a region applies in every region). Reservations and committed-use prices are never in the
table: they are what a contract says, so a stack supplies them. A rate found nowhere is never taken as zero nor
guessed: `estimate` raises `PricingError` naming every missing rate and the exact entry to add.

The arithmetic, one item at a time (all of it in `Decimal`, so each number is a table row or an override times a
count):

- TPU slice entry: chips per slice x slices x the chip-hour rate of (generation, capacity, region). Its configured
  size is every slice (`count`). Standard mode with autoscaling: min = each pool's `minNodes` hosts (0 when it scales
  from zero, as flex-start does), max = every slice. Autopilot: slices exist only while Ray pods run on them: min 0,
  max = `count` slices.
- GPU node pool: nodes x the VM-hour rate of (machine type, capacity, region); configured = `count` nodes, a range
  min-max nodes where it autoscales (Autopilot: 0 to its maximum).
- CPU node pool: the system pool (Standard mode only; its configured size is `minNodes`, the range `minNodes` to
  `maxNodes`) and the CPU worker pools.
- Monthly = hourly x 730 (Google Cloud's hours in a month).
- Stranded: capacity that is provisioned but that no Ray worker group uses: a slice entry that no group names, or
  slices that stay provisioned (a fixed-size pool, or an autoscaled one's minimum) beyond the replicas the groups
  ask for; a GPU or CPU worker pool no group names.

Not included: the GKE cluster management fee, Autopilot's charges for pods that are not on TPU or GPU nodes (Ray head
pods), boot disks, storage, network egress, and the premium Autopilot adds to accelerator nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Iterable, Optional

from ..catalog.prices import (
    CURRENCY,
    HOURS_PER_MONTH,
    UNITS,
    Rate,
    TableError,
    _date,
    _number,
    _plain,
    find_rate,
    load_table,
)
from ..spec.config import StackConfig
from ..spec.paths import PROJECT
from ..spec.problems import ConfigError, Problem

RATES_KEY = f"{PROJECT}:pricing.rates"


@dataclass(frozen=True)
class MissingRate:
    kind: str
    name: str
    capacity: str
    region: str
    needed_by: tuple[str, ...]  # "tpuSlices v6e-64", ...

    @property
    def message(self) -> str:
        return (f"no rate for {self.kind} {self.name} {self.capacity} in {self.region} ({', '.join(self.needed_by)}); "
                f"add {{kind: {self.kind}, name: {self.name}, capacity: {self.capacity}, region: {self.region}, "
                f"hourly: <USD per {UNITS[self.kind]}>}}")

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "capacity": self.capacity, "region": self.region,
                "neededBy": list(self.needed_by), "problem": f"{RATES_KEY}: {self.message}"}


class PricingError(ConfigError):
    """Rates that neither the stack nor the price table has; one problem per missing rate, each naming the entry of
    `ray-tpu-gke:pricing.rates` to add."""

    def __init__(self, missing: list[MissingRate]):
        self.missing = missing
        super().__init__([Problem(RATES_KEY, m.message) for m in missing])



def stack_rates(config: StackConfig) -> tuple[Rate, ...]:
    """The stack's own rates (`ray-tpu-gke:pricing.rates`), in file order."""
    out = []
    for r in config.pricing.rates:
        try:
            as_of = _date(r.as_of, RATES_KEY)
        except TableError:
            as_of = None  # estimate() warns
        out.append(Rate(r.kind, r.name, r.capacity, Decimal(str(r.hourly)), r.region, r.source, as_of, "stack"))
    return tuple(out)



# --- the estimate --------------------------------------------------------------------------------------------------


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
        out = {"kind": self.kind, "name": self.name, "capacity": self.capacity, "quantity": self.quantity,
               "unit": self.unit, "rate": {"kind": self.rate.kind, "name": self.rate.name,
                                           "capacity": self.rate.capacity, "region": self.rate.region,
                                           "hourly": _number(self.rate.hourly), "from": self.rate.origin},
               **self.cost.to_json()}
        if self.kind == "tpuSlice":
            out["slices"], out["chipsPerSlice"] = self.slices, self.per_slice
        if self.autoscaled:
            out["min"] = {"quantity": self.min_quantity, **self.min.to_json()}
            out["max"] = {"quantity": self.max_quantity, **self.max.to_json()}
        if self.stranded_quantity:
            out["stranded"] = {"quantity": self.stranded_quantity, "reason": self.stranded_reason,
                               **self.stranded.to_json()}
        return out


@dataclass(frozen=True)
class Estimate:
    region: str
    items: tuple[Item, ...]
    today: date
    monthly_budget: Optional[Decimal] = None
    warnings: tuple[str, ...] = ()
    currency: str = CURRENCY

    @property
    def rates(self) -> tuple[Rate, ...]:
        """Every rate used, once, in the order the items use them."""
        seen: dict[tuple, Rate] = {}
        for item in self.items:
            r = item.rate
            seen.setdefault((r.origin, r.kind, r.name, r.capacity, r.region), r)
        return tuple(seen.values())

    @property
    def total(self) -> Cost:
        return sum((i.cost for i in self.items), ZERO)

    @property
    def min(self) -> Cost:
        return sum((i.min for i in self.items), ZERO)

    @property
    def max(self) -> Cost:
        return sum((i.max for i in self.items), ZERO)

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
        return self.monthly_budget is not None and self.max.monthly > self.monthly_budget

    def item(self, kind: str, name: str) -> Item:
        return next(i for i in self.items if (i.kind, i.name) == (kind, name))

    def to_json(self) -> dict:
        """The plan's `cost` object: deterministic (no age: that depends on the day it is read)."""
        out = {"currency": self.currency, "region": self.region, "hoursPerMonth": HOURS_PER_MONTH,
               "rates": [r.to_json() for r in self.rates], "items": [i.to_json() for i in self.items],
               "total": {**self.total.to_json(), "min": self.min.to_json(), "max": self.max.to_json()},
               "stranded": self.stranded.to_json()}
        oldest = self.oldest_as_of
        if oldest:
            out["oldestAsOf"] = oldest.isoformat()
        if self.monthly_budget is not None:
            out["monthlyBudget"] = _number(self.monthly_budget)
        return out


def _groups(config: StackConfig):
    """(Ray object, worker group) of every Ray object."""
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            yield obj, group


def _who(obj, group) -> str:
    return f"{obj.namespace}/{obj.name}:{group.name}"


def _slice_item(config: StackConfig, s, rate: Rate) -> Item:
    shape = s.shape
    chips = shape.chips
    users = [(obj, g) for obj, g in _groups(config) if getattr(g, "slice", None) == s.name]
    demand = sum(g.replicas for _, g in users)
    surge = [f"{obj.namespace}/{obj.name}" for obj, _ in users
             if getattr(obj, "upgrade_strategy", None) == "NewCluster"]
    if not config.standard:
        low, floor = 0, 0  # Autopilot: a slice exists while Ray pods run on it
    elif s.autoscaled:
        # Each pool keeps `minNodes` hosts: 0, or (a multi-host pool scales atomically) all of them.
        min_hosts = min(s.min_nodes, shape.hosts)
        low = s.count * min_hosts * shape.chips_per_host
        floor = s.count if min_hosts == shape.hosts else 0
    else:
        low, floor = None, s.count
    stranded, reason = 0, ""
    if floor > demand:
        stranded = (floor - demand) * chips
        if not users:
            reason = "no Ray worker group uses it"
        else:
            reason = (f"the Ray worker groups ask for {demand} of {floor} always-provisioned slices "
                      f"({', '.join(_who(o, g) for o, g in users)})")
            if surge:
                reason += f"; the rest is headroom for NewCluster upgrades of {', '.join(surge)}"
    autoscaled = low is not None
    return Item("tpuSlice", s.name, s.capacity, rate, "chip", s.count * chips, per_slice=chips, slices=s.count,
                min_quantity=low if autoscaled else None, max_quantity=s.count * chips if autoscaled else None,
                stranded_quantity=stranded, stranded_reason=reason)


def _pool_item(config: StackConfig, kind: str, pool, rate: Rate, group_key: str) -> Item:
    """A GPU or CPU worker pool: `count` nodes, a range `minNodes` to `maxNodes` where it autoscales (Autopilot: 0 to
    its maximum). Its worker groups count pods, one per node."""
    count = getattr(pool, "count", None)
    low, high = getattr(pool, "min_nodes", None), getattr(pool, "max_nodes", None)
    autoscaled = getattr(pool, "autoscaled", None)
    if autoscaled is None:
        autoscaled = low is not None and high is not None and low != high
    configured = count if count is not None else (low if low is not None else (high or 0))
    if not config.standard:
        low, high, autoscaled = 0, max(x for x in (high, count, configured) if x is not None), True
    elif autoscaled:
        low = low if low is not None else 0
        high = high if high is not None else configured
    floor = low if autoscaled else configured
    users = [(obj, g) for obj, g in _groups(config) if getattr(g, group_key, None) == pool.name]
    demand = sum(g.replicas for _, g in users)
    stranded, reason = max(floor - demand, 0), ""
    if stranded:
        reason = "no Ray worker group uses it" if not users else (
            f"the Ray worker groups ask for {demand} of {floor} always-provisioned nodes "
            f"({', '.join(_who(o, g) for o, g in users)})")
    return Item(kind, pool.name, getattr(pool, "capacity", "onDemand") or "onDemand", rate, "node", configured,
                min_quantity=low if autoscaled else None, max_quantity=high if autoscaled else None,
                stranded_quantity=stranded, stranded_reason=reason)


SYSTEM_POOL = "system"


def _needs(config: StackConfig):
    """(item kind, name, rate kind, rate name, capacity, config object) of everything the stack pays for."""
    for s in config.tpu_slices:
        yield "tpuSlice", s.name, "tpu", s.generation, s.capacity, s
    for pool in getattr(config, "gpu_pools", None) or ():
        yield "gpuPool", pool.name, "gpu", str(pool.machine_type), getattr(pool, "capacity", "onDemand"), pool
    if config.standard:
        system = config.cluster.system_pool
        yield "cpuPool", SYSTEM_POOL, "cpu", system.machine_type, "onDemand", system
    for pool in getattr(config, "cpu_pools", None) or ():
        yield "cpuPool", pool.name, "cpu", str(pool.machine_type), getattr(pool, "capacity", "onDemand"), pool


_SECTION = {"tpuSlice": "tpuSlices", "gpuPool": "gpuPools", "cpuPool": "cpuPools"}


def estimate(config: StackConfig, table: Optional[Iterable[Rate]] = None, today: Optional[date] = None) -> Estimate:
    """The cost of a stack; `PricingError` naming every rate that neither the stack nor the table has."""
    table = load_table() if table is None else tuple(table)
    overrides = stack_rates(config)
    region = config.region
    items: list[Item] = []
    missing: dict[tuple, list[str]] = {}
    for item_kind, name, kind, rate_name, capacity, source in _needs(config):
        system = source is config.cluster.system_pool
        rate = find_rate(kind, rate_name, capacity, region, overrides, table)
        if rate is None:
            who = "cluster.systemPool" if system else f"{_SECTION[item_kind]} {name}"
            missing.setdefault((kind, rate_name, capacity, region), []).append(who)
            continue
        if item_kind == "tpuSlice":
            items.append(_slice_item(config, source, rate))
        elif system:
            scales = source.min_nodes != source.max_nodes
            items.append(Item("cpuPool", SYSTEM_POOL, "onDemand", rate, "node", source.min_nodes,
                              min_quantity=source.min_nodes if scales else None,
                              max_quantity=source.max_nodes if scales else None))
        else:
            items.append(_pool_item(config, item_kind, source, rate,
                                    "gpu_pool" if item_kind == "gpuPool" else "cpu_pool"))
    if missing:
        raise PricingError([MissingRate(*key, tuple(who)) for key, who in missing.items()])
    used = {(i.rate.origin, i.rate.kind, i.rate.name, i.rate.capacity, i.rate.region) for i in items}
    warnings = [f"{RATES_KEY}[{i}].asOf: {r.as_of!r} is not a date (YYYY-MM-DD); the rate counts as undated"
                for i, r in enumerate(config.pricing.rates) if r.as_of is not None and overrides[i].as_of is None]
    for i, r in enumerate(overrides):
        if r.region not in (None, region):
            continue  # a rate of another region: kept for when the stack moves, not a mistake
        if ("stack", r.kind, r.name, r.capacity, r.region) not in used:
            warnings.append(f"{RATES_KEY}[{i}]: {r.kind} {r.name} {r.capacity} is priced but nothing of the stack "
                            "uses it (a misspelt name or capacity?)")
    budget = config.pricing.monthly_budget
    return Estimate(region=region, items=tuple(items), today=today or date.today(),
                    monthly_budget=Decimal(str(budget)) if budget is not None else None, warnings=tuple(warnings))


def incomplete_json(error: PricingError, config: StackConfig) -> dict:
    """The plan's `cost` object when rates are missing: no amounts (never a zero or a guess), what to add instead."""
    out: dict = {"currency": CURRENCY, "region": config.region, "missing": [m.to_json() for m in error.missing]}
    if config.pricing.monthly_budget is not None:
        out["monthlyBudget"] = _number(Decimal(str(config.pricing.monthly_budget)))
    return out


def format_usd(value: Decimal, places: int = 2, sign: bool = False) -> str:
    """`$1,234.56`; with `sign`, `+$1,234.56` / `-$1,234.56`."""
    amount = _money(abs(Decimal(value)), places)
    text = f"${amount:,.{places}f}"
    if value < 0:
        return "-" + text
    return ("+" + text) if sign else text
