"""The price table (catalog/data/prices.yaml): public list prices of TPU chip-hours and GPU and CPU VM-hours, each
row with its region, the date it was read and its source. Reservations and committed-use prices are never in the
table: they are what a contract says, so a stack supplies them (`render.pricing`)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import yaml

HOURS_PER_MONTH = 730  # Google Cloud's pricing pages: "monthly" prices are 730 hours
CURRENCY = "USD"
TABLE_PATH = Path(__file__).resolve().parent / "data" / "prices.yaml"


KINDS = ("tpu", "gpu", "cpu")
UNITS = {"tpu": "chip-hour", "gpu": "VM-hour", "cpu": "VM-hour"}
TABLE_CAPACITIES = ("onDemand", "spot", "flexStart")  # list prices; reservation and committed use are user-supplied
CAPACITIES = (*TABLE_CAPACITIES, "reservation")
ITEM_KINDS = ("tpuSlice", "gpuPool", "cpuPool")
# The cost table states the rates' date on every plan; a warning is kept for a table older than a year, which has
# missed at least one of Google's yearly price revisions (list prices change a few times a year, Spot up to every 30
# days: Compute Engine "Spot VMs" pricing).
STALE_AFTER_DAYS = 365


# --- rates ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """One price: per chip-hour (TPU) or per VM-hour (GPU, CPU) of `name` with `capacity` in `region` (None: any)."""

    kind: str
    name: str
    capacity: str
    hourly: Decimal
    region: Optional[str]
    source: str
    as_of: Optional[date]
    origin: str  # "table" (components/catalog/data/prices.yaml) or "stack" (ray-tpu-gke:pricing.rates[i])

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    def matches(self, kind: str, name: str, capacity: str) -> bool:
        return (self.kind, self.name, self.capacity) == (kind, name, capacity)

    def describe(self) -> str:
        """`$2.70/chip-hour (tpu v6e onDemand, us-east5, 2025-11-01, table)`."""
        where = self.region or "all regions"
        when = self.as_of.isoformat() if self.as_of else "undated"
        return (
            f"${_plain(self.hourly)}/{self.unit} ({self.kind} {self.name} {self.capacity}, {where}, {when}, "
            f"{self.origin})"
        )

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "capacity": self.capacity,
            "region": self.region,
            "hourly": _number(self.hourly),
            "unit": self.unit,
            "asOf": self.as_of.isoformat() if self.as_of else None,
            "source": self.source,
            "from": self.origin,
        }


class TableError(ValueError):
    """The price table itself is malformed: each problem names its row."""


def _date(value: Any, where: str) -> Optional[date]:
    if value is None:
        return None
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise TableError(f"{where}: asOf {value!r} is not a date (YYYY-MM-DD)") from None


_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")
_ROW_FIELDS = {"kind", "name", "capacity", "region", "hourly", "asOf", "source", "note"}
_GROUP_FIELDS = {"kind", "name", "capacity", "regions", "note", "asOf", "source"}


def _snapshot(document: Mapping, where: str) -> tuple[Optional[str], Optional[date]]:
    """The `snapshot` a generated table was made from (scripts/prices.py): its source URL and date, which its rows
    without their own `source`/`asOf` carry."""
    snap = document.get("snapshot")
    if snap is None:
        return None, None
    if not isinstance(snap, Mapping) or not str(snap.get("source", "")).startswith("https://"):
        raise TableError(f"{where}: snapshot must name its source (an https URL) and asOf")
    as_of = _date(snap.get("asOf"), f"{where}: snapshot")
    if as_of is None:
        raise TableError(f"{where}: snapshot.asOf is required")
    return str(snap["source"]), as_of


def _rate(
    at: str, kind: Any, name: Any, capacity: Any, region: Any, hourly: Any, source: Any, as_of: Optional[date]
) -> Rate:
    if kind not in KINDS:
        raise TableError(f"{at}: kind {kind!r}; allowed: {', '.join(KINDS)}")
    if capacity not in TABLE_CAPACITIES:
        raise TableError(
            f"{at}: capacity {capacity!r}; the table holds list prices only: "
            f"{', '.join(TABLE_CAPACITIES)} (reservations and committed use come from the stack)"
        )
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise TableError(f"{at}: region {region!r} is not a region such as us-east5")
    if isinstance(hourly, bool) or not isinstance(hourly, (int, float)) or not 0 < hourly < 1_000_000:
        raise TableError(f"{at}: hourly {hourly!r} must be a positive number")
    if not isinstance(source, str) or not source.startswith("https://"):
        raise TableError(f"{at}: source {source!r} must be an https URL")
    if as_of is None:
        raise TableError(f"{at}: asOf is required")
    return Rate(kind, str(name), capacity, Decimal(str(hourly)), region, source, as_of, "table")


def parse_table(document: Any, where: str = "prices table") -> tuple[Rate, ...]:
    """The rows of a price table document, checked: list prices only, every row dated, placed and sourced, no two
    rows for the same rate.

    A row is one rate (`{kind, name, capacity, region, hourly, asOf, source, note?}`) or, as scripts/prices.py writes
    them, one rate per region (`{kind, name, capacity, regions: {region: hourly}, note?}`) that takes `source` and
    `asOf` from the document's `snapshot` unless it names its own."""
    if not isinstance(document, Mapping) or document.get("currency") != CURRENCY:
        raise TableError(f"{where}: must be a mapping with currency: {CURRENCY} and rates: [...]")
    rows = document.get("rates")
    if not isinstance(rows, list):
        raise TableError(f"{where}: rates must be a list")
    snap_source, snap_as_of = _snapshot(document, where)
    rates, seen = [], set()
    for i, row in enumerate(rows):
        at = f"{where}: rates[{i}]"
        if isinstance(row, Mapping) and "regions" in row:
            if (
                not _GROUP_FIELDS >= set(row)
                or not {"kind", "name", "capacity"} <= set(row)
                or not isinstance(row["regions"], Mapping)
            ):
                raise TableError(
                    f"{at}: a row per region has kind, name, capacity, regions (a mapping of region to "
                    f"hourly) and an optional note, asOf, source; given {sorted(row)}"
                )
            source = row.get("source", snap_source)
            as_of = _date(row["asOf"], at) if "asOf" in row else snap_as_of
            found = [
                _rate(
                    f"{at}.regions.{region}", row["kind"], row["name"], row["capacity"], region, hourly, source, as_of
                )
                for region, hourly in row["regions"].items()
            ]
        elif isinstance(row, Mapping) and _ROW_FIELDS >= set(row) and (_ROW_FIELDS - {"note"}) <= set(row):
            found = [
                _rate(
                    at,
                    row["kind"],
                    row["name"],
                    row["capacity"],
                    row["region"],
                    row["hourly"],
                    row["source"],
                    _date(row["asOf"], at),
                )
            ]
        else:
            raise TableError(
                f"{at}: must have exactly kind, name, capacity, region, hourly, asOf, source (and an "
                f"optional note), or kind, name, capacity and regions; given "
                f"{sorted(row) if isinstance(row, Mapping) else row!r}"
            )
        for rate in found:
            key = (rate.kind, rate.name, rate.capacity, rate.region)
            if key in seen:
                raise TableError(f"{at}: a second row for {' '.join(k for k in key if k is not None)}")
            seen.add(key)
            rates.append(rate)
    return tuple(_corrected(rates, document.get("corrections") or [], where))


def _corrected(rates: list[Rate], corrections: Any, where: str) -> list[Rate]:
    """The rows with the table's `corrections` in place of the snapshot's rows they name: one row each, with its own
    source and date (scripts/prices.py CORRECTIONS)."""
    if not isinstance(corrections, list):
        raise TableError(f"{where}: corrections must be a list")
    index = {(r.kind, r.name, r.capacity, r.region): i for i, r in enumerate(rates)}
    out = list(rates)
    for i, row in enumerate(corrections):
        at = f"{where}: corrections[{i}]"
        if not (isinstance(row, Mapping) and _ROW_FIELDS >= set(row) and (_ROW_FIELDS - {"note"}) <= set(row)):
            raise TableError(f"{at}: must have kind, name, capacity, region, hourly, asOf, source and a note")
        rate = _rate(
            at,
            row["kind"],
            row["name"],
            row["capacity"],
            row["region"],
            row["hourly"],
            row["source"],
            _date(row["asOf"], at),
        )
        key = (rate.kind, rate.name, rate.capacity, rate.region)
        if key not in index:
            raise TableError(f"{at}: corrects no row of the table ({' '.join(str(k) for k in key)})")
        out[index[key]] = rate
    return out


def table_snapshot(path: Path = TABLE_PATH) -> dict:
    """The `snapshot` of the shipped table (source, asOf, what the generator dropped), for the plan to name."""
    return dict(_load_document(path).get("snapshot") or {})


@functools.lru_cache(maxsize=4)
def _load_document(path: Path) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed: the table has ~10k prices
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


@functools.lru_cache(maxsize=4)
def load_table(path: Path = TABLE_PATH) -> tuple[Rate, ...]:
    """The price table shipped with the package (components/catalog/data/prices.yaml)."""
    return parse_table(_load_document(path), str(path.name))


@functools.lru_cache(maxsize=4)
def trusted_table(path: Path = TABLE_PATH) -> tuple[tuple[Rate, ...], tuple[Any, ...]]:
    """The shipped table's rows that pass the checks of `price_checks`, and the rows they doubt, each with why."""
    from .price_checks import trusted

    return trusted(load_table(path))


def find_rate(
    kind: str, name: str, capacity: str, region: str, overrides: Iterable[Rate], table: Iterable[Rate]
) -> Optional[Rate]:
    """The stack's rate for this region, else the stack's rate for every region, else the table's row."""
    overrides = list(overrides)
    for candidates in (
        [r for r in overrides if r.region == region],
        [r for r in overrides if r.region is None],
        [r for r in table if r.region == region],
    ):
        found = next((r for r in candidates if r.matches(kind, name, capacity)), None)
        if found is not None:
            return found
    return None


def _number(value: Decimal) -> int | float:
    """JSON: whole amounts as integers (as the plan's inputs are), others as floats."""
    value = value.normalize()
    return int(value) if value == value.to_integral_value() else float(value)


def _plain(value: Decimal) -> str:
    """`2.7`, `0.268`: a rate as the table writes it."""
    return format(value.normalize(), "f")
