"""Stranded capacity of a change's new revision: slices and pools that are always provisioned and that no Ray worker
group uses, read from each revision's plan (`cost.items[].stranded`, `ray_tpu_gke.render.pricing`), so the diff, the
pull-request comment and the policy pack say what the plan says. `new` marks what the change strands (not stranded,
or less, at REF)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping

from ray_tpu_gke.render.pricing import format_usd

from .revisions import Side


@dataclass(frozen=True)
class Stranded:
    kind: str  # tpuSlice, gpuPool, cpuPool
    name: str
    quantity: int
    unit: str  # chip, node
    reason: str
    monthly: Decimal | None  # None: the plan has no amounts (a missing rate)
    new: bool

    def line(self) -> str:
        amount = f", {format_usd(self.monthly)}/month" if self.monthly is not None else ""
        what = "newly stranded" if self.new else "still stranded"
        unit = self.unit + ("s" if self.quantity != 1 else "")
        return f"{self.kind} {self.name}: {self.quantity} {unit}{amount} {what}: {self.reason}"

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "quantity": self.quantity,
            "unit": self.unit,
            "reason": self.reason,
            "new": self.new,
        }
        if self.monthly is not None:
            out["monthly"] = float(self.monthly)
        return out


def _of(side: Side) -> dict[tuple[str, str], Mapping[str, Any]]:
    cost = (side.plan or {}).get("cost") or {}
    return {
        (i.get("kind"), i.get("name")): i
        for i in cost.get("items", [])
        if isinstance(i, Mapping) and isinstance(i.get("stranded"), Mapping)
    }


def of_sides(old: Side, new: Side) -> list[Stranded]:
    """What the working tree's plan strands, each marked new unless REF's plan stranded as much of it."""
    before = _of(old)
    out = []
    for key, item in _of(new).items():
        stranded = item["stranded"]
        quantity = int(stranded.get("quantity", 0))
        was = before.get(key)
        earlier = int(was["stranded"].get("quantity", 0)) if was else 0
        monthly = stranded.get("monthly")
        out.append(
            Stranded(
                kind=str(key[0]),
                name=str(key[1]),
                quantity=quantity,
                unit=str(item.get("unit", "")),
                reason=str(stranded.get("reason", "")),
                monthly=Decimal(str(monthly)) if monthly is not None else None,
                new=quantity > earlier,
            )
        )
    return out
