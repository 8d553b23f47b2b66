"""TPU capacity a change adds and removes, per slice: the chips and hosts of the TPU node pools it touches.

A created pool adds its chips and hosts, a deleted one removes them, and a replaced one does both: its slice is torn
down and must be obtained again, whatever the new size. An update that resizes a pool in place (its node count or
autoscaling maximum) adds or removes the difference. Pools are grouped by the `tpuSlices` entry they provision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from .change import Change

_FIELDS = ("chipsAdded", "chipsRemoved", "hostsAdded", "hostsRemoved")


@dataclass
class SliceCapacity:
    """What a change does to the capacity of one `tpuSlices` entry: its pools touched, chips and hosts."""

    slice: str
    pools: list[tuple[str, str]] = field(default_factory=list)  # (node pool, op)
    chips_added: int = 0
    chips_removed: int = 0
    hosts_added: int = 0
    hosts_removed: int = 0

    def counts(self) -> dict[str, int]:
        return dict(zip(_FIELDS, (self.chips_added, self.chips_removed, self.hosts_added, self.hosts_removed)))

    def pools_text(self) -> str:
        """`replace v6e-16-0; create v6e-8-0, v6e-8-1`."""
        ops: dict[str, list[str]] = {}
        for pool, op in self.pools:
            ops.setdefault(op, []).append(pool)
        return "; ".join(f"{op} {', '.join(pools)}" for op, pools in ops.items())

    def to_json(self) -> dict:
        return {"slice": self.slice, "pools": [{"pool": p, "op": op} for p, op in self.pools], **self.counts()}


@dataclass
class Capacity:
    """Every slice whose capacity a stack's change adds to or removes from, and the totals."""

    slices: list[SliceCapacity] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.slices)

    def total(self) -> dict[str, int]:
        return {key: sum(s.counts()[key] for s in self.slices) for key in _FIELDS}

    def to_json(self) -> dict:
        return {"slices": [s.to_json() for s in self.slices], "total": self.total()}


def of_changes(changes: Iterable[Change]) -> Capacity:
    """The capacity of the TPU pools among these changes (from their `before` and `after` sizes), slices in the
    order the changes name them."""
    by_slice: dict[str, SliceCapacity] = {}
    for change in changes:
        before, after = change.before, change.after
        if change.op == "update":
            if not (before and after):
                continue
            chips, hosts = after.chips - before.chips, after.hosts - before.hosts
            added, removed = (max(chips, 0), max(hosts, 0)), (max(-chips, 0), max(-hosts, 0))
        else:
            added = (after.chips, after.hosts) if after else (0, 0)
            removed = (before.chips, before.hosts) if before else (0, 0)
        if added == removed == (0, 0):
            continue
        side = after or before
        if side is None:
            continue
        name = side.slice
        entry = by_slice.setdefault(name, SliceCapacity(name))
        entry.pools.append((change.name, change.op))
        entry.chips_added += added[0]
        entry.hosts_added += added[1]
        entry.chips_removed += removed[0]
        entry.hosts_removed += removed[1]
    return Capacity(list(by_slice.values()))


def describe(counts: dict[str, int]) -> str:
    """`32 chips (8 hosts) added, 16 chips (4 hosts) removed`; `no TPU capacity change` where both are zero."""
    parts = []
    for verb in ("Added", "Removed"):
        chips, hosts = counts[f"chips{verb}"], counts[f"hosts{verb}"]
        if chips or hosts:
            parts.append(
                f"{chips} chip{'s' if chips != 1 else ''} ({hosts} host{'s' if hosts != 1 else ''}) {verb.lower()}"
            )
    return ", ".join(parts) or "no TPU capacity change"
