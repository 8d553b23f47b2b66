"""Rows of the price table that contradict the table itself, so that no estimate prices hardware at a fraction of
its cost: a catalogue snapshot priced `a3-highgpu-8g` at $43.07/h in us-central1 and $87.83 in us-east4, and 8 x
A100 80GB below 8 x A100 40GB in the same region.

Three rules, each about rows of the same table (never about an outside figure):

- `regional-outlier`: an on-demand or flex-start rate under 60 % of the median of the same machine type's (or TPU
  generation's) rate, at the same capacity, in its other regions (at least two of them). List prices of a machine
  type differ between regions by tens of percent, not by half. Spot rates are left out of this rule: Google sets
  them per region and moves them up to once every 30 days, anywhere from 60 % to 91 % below on-demand (Compute
  Engine "Spot VMs" pricing), so a region at half another's Spot rate is no contradiction.
- `larger-machine-cheaper`: a GPU machine type with at least as many GPUs, each at least as large (peak and memory,
  catalog/peaks.py), on at least as large a host (vCPUs and memory, catalog/gpu.py), and more of one of them,
  priced below the smaller machine type at the same capacity in the same region: one of the two is wrong, and the
  cheaper larger one is the row dropped.
- `spot-above-on-demand`: a Spot rate above the on-demand rate of the same thing in the same region; Spot prices are
  a discount on on-demand ones (Compute Engine "Spot VMs" pricing: "60-91% discount").

A dropped row is not guessed at: the estimate names the `ray-tpu-gke:pricing.rates` entry to set, and why the table's
row was not used.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Optional

from .gpu import GPUS
from .peaks import GPU_PEAKS

OUTLIER_SHARE = Decimal("0.6")  # under 60 % of the other regions' median
OUTLIER_MIN_REGIONS = 2  # other regions needed for a median worth comparing with


@dataclass(frozen=True)
class Doubt:
    """A row of the table the estimate does not use, and why."""

    kind: str
    name: str
    capacity: str
    region: str
    hourly: Decimal
    rule: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.name, self.capacity, self.region)

    def describe(self) -> str:
        return f"{self.kind} {self.name} {self.capacity} {self.region} ${_plain(self.hourly)}: {self.reason}"

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "capacity": self.capacity,
            "region": self.region,
            "hourly": float(self.hourly),
            "rule": self.rule,
            "reason": self.reason,
        }


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _regional_outliers(rates) -> list[Doubt]:
    by_thing: dict[tuple[str, str, str], dict[str, Decimal]] = defaultdict(dict)
    for r in rates:
        if r.capacity != "spot":
            by_thing[(r.kind, r.name, r.capacity)][r.region] = r.hourly
    out = []
    for (kind, name, capacity), regions in by_thing.items():
        for region, hourly in regions.items():
            others = [v for k, v in regions.items() if k != region]
            if len(others) < OUTLIER_MIN_REGIONS:
                continue
            median = Decimal(str(statistics.median(others)))
            if hourly < OUTLIER_SHARE * median:
                out.append(
                    Doubt(
                        kind,
                        name,
                        capacity,
                        region,
                        hourly,
                        "regional-outlier",
                        f"under {OUTLIER_SHARE:.0%} of the median of its {len(others)} other regions "
                        f"(${_plain(median.quantize(Decimal('0.01')))})",
                    )
                )
    return out


def _gpu_sizes() -> dict[str, tuple[int, float, int, int, int]]:
    """Machine type -> (GPUs, peak per GPU, memory per GPU, vCPUs, host memory)."""
    return {
        m.name: (
            m.gpus,
            GPU_PEAKS[g.accelerator].bf16_flops_per_s,
            GPU_PEAKS[g.accelerator].hbm_bytes,
            m.vcpus,
            m.memory_gib,
        )
        for g in GPUS.values()
        for m in g.machines
        if g.accelerator in GPU_PEAKS
    }


def _at_least_as_large(big: tuple, small: tuple) -> bool:
    """Every dimension at least as large, the GPUs more or larger."""
    return all(b >= s for b, s in zip(big, small)) and big[:3] != small[:3]


def _larger_machines_cheaper(rates) -> list[Doubt]:
    sizes = _gpu_sizes()
    by_place: dict[tuple[str, str], list] = defaultdict(list)
    for r in rates:
        if r.kind == "gpu" and r.name in sizes:
            by_place[(r.capacity, r.region)].append(r)
    out = []
    for (capacity, region), rows in by_place.items():
        for big in rows:
            cheaper_than = [
                small
                for small in rows
                if small is not big
                and _at_least_as_large(sizes[big.name], sizes[small.name])
                and big.hourly < small.hourly
            ]
            if cheaper_than:
                small = max(cheaper_than, key=lambda s: s.hourly)
                out.append(
                    Doubt(
                        "gpu",
                        big.name,
                        capacity,
                        region,
                        big.hourly,
                        "larger-machine-cheaper",
                        f"below {small.name} (${_plain(small.hourly)}), which has fewer or smaller GPUs, in the "
                        "same region",
                    )
                )
    return out


def _spot_above_on_demand(rates) -> list[Doubt]:
    on_demand = {(r.kind, r.name, r.region): r.hourly for r in rates if r.capacity == "onDemand"}
    out = []
    for r in rates:
        base: Optional[Decimal] = on_demand.get((r.kind, r.name, r.region))
        if r.capacity == "spot" and base is not None and r.hourly > base:
            out.append(
                Doubt(
                    r.kind,
                    r.name,
                    "spot",
                    r.region,
                    r.hourly,
                    "spot-above-on-demand",
                    f"above the on-demand rate (${_plain(base)}) in the same region",
                )
            )
    return out


def doubts(rates: Iterable) -> tuple[Doubt, ...]:
    """Every row of the table that one of the rules doubts (a row once, the first rule that doubts it)."""
    rates = [r for r in rates if r.region is not None]
    found: dict[tuple, Doubt] = {}
    for doubt in _regional_outliers(rates) + _larger_machines_cheaper(rates) + _spot_above_on_demand(rates):
        found.setdefault(doubt.key, doubt)
    return tuple(sorted(found.values(), key=lambda d: d.key))


def trusted(rates: Iterable) -> tuple[tuple, tuple[Doubt, ...]]:
    """The rows no rule doubts, and the doubted ones with their reasons."""
    rates = tuple(rates)
    doubted = doubts(rates)
    drop = {d.key for d in doubted}
    return tuple(r for r in rates if (r.kind, r.name, r.capacity, r.region) not in drop), doubted
