"""What a change does to a stack's cost: the `cost` of its plan at REF against the working tree's, per slice and pool.

Each revision's plan carries its own estimate (`python -m plan STACK --json`, top-level `cost`, from that revision's
price table and stack rates), so a change of rates shows as well as a change of capacity. Items are the slices and
pools and the GKE cluster fee (`cost.fees`); every amount is on the bases the plan states: configured (`hourly`,
`monthly`), `min` and `max`. An item whose node pool the change replaces says `replace`, not `update`: its capacity
is torn down and obtained again. A stack that does not exist on one side costs nothing there. Where a side has no
complete amounts (rates missing, or a revision older than the estimate) the delta is unknown, never taken as zero:
`unknown` says why, and the `--fail-on-cost-increase` gate fails on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterable, Optional

if TYPE_CHECKING:
    from .change import Change
    from .revisions import Side

HOURS_PER_MONTH = 730
_ZERO = {"hourly": 0, "monthly": 0}


def _dec(value: Any) -> Decimal:
    return Decimal(str(value)) if value is not None else Decimal(0)


def _num(value: Decimal) -> int | float:
    value = value.quantize(Decimal("0.000001")).normalize()
    return int(value) if value == value.to_integral_value() else float(value)


def _amounts(entry: Optional[dict], which: str = "") -> dict:
    """`{"hourly", "monthly"}` of an item or total (`which`: "" for its configured size, "min" or "max")."""
    if entry is None:
        return _ZERO
    if which and isinstance(entry.get(which), dict):
        entry = entry[which]
    return {"hourly": entry.get("hourly", 0), "monthly": entry.get("monthly", 0)}


def _minus(after: dict, before: dict) -> dict:
    return {key: _num(_dec(after.get(key)) - _dec(before.get(key))) for key in ("hourly", "monthly")}


class _Delta:
    """What an item's and a stack's cost change share: amounts `before` (at REF) and `after` (the working tree)."""

    before: Optional[dict]
    after: Optional[dict]

    def change(self, which: str = "") -> dict:
        return _minus(_amounts(self.after, which), _amounts(self.before, which))

    @property
    def monthly(self) -> Decimal:
        """The change of the monthly cost at the configured size."""
        return _dec(self.change()["monthly"])

    @property
    def max_monthly(self) -> Decimal:
        """The change of the most it can cost in a month (every autoscaled pool at its maximum)."""
        return _dec(self.change("max")["monthly"])


@dataclass
class ItemDelta(_Delta):
    """One TPU slice entry or node pool whose cost changes: its amounts at REF and in the working tree."""

    kind: str
    name: str
    before: Optional[dict]  # the item of the plan's `cost` at REF, None where it did not exist
    after: Optional[dict]
    replaced: bool = False  # the change replaces a node pool of this item

    @property
    def op(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "replace" if self.replaced else "update"

    def to_json(self) -> dict:
        out = {
            "kind": self.kind,
            "name": self.name,
            "op": self.op,
            **self.change(),
            "before": _summary(self.before),
            "after": _summary(self.after),
        }
        if any(isinstance(side, dict) and "min" in side for side in (self.before, self.after)):
            out["min"], out["max"] = self.change("min"), self.change("max")
        return out


def _summary(item: Optional[dict]) -> Optional[dict]:
    if item is None:
        return None
    out = {
        "hourly": item.get("hourly"),
        "monthly": item.get("monthly"),
        "capacity": item.get("capacity"),
        "quantity": item.get("quantity"),
        "unit": item.get("unit"),
    }
    for key in ("min", "max"):
        if key in item:
            out[key] = {"hourly": item[key].get("hourly"), "monthly": item[key].get("monthly")}
    return out


@dataclass
class CostDelta(_Delta):
    """A stack's cost at REF, in the working tree, and the change per item; `unknown` where it cannot be told."""

    currency: str = "USD"
    before: Optional[dict] = None  # the total of the plan's `cost` at REF (zero for a new stack)
    after: Optional[dict] = None
    items: list[ItemDelta] = field(default_factory=list)
    unknown: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.unknown is None

    @property
    def changed(self) -> bool:
        return bool(self.items) or not self.known or self.monthly != 0 or self.max_monthly != 0

    def to_json(self) -> dict:
        if not self.known:
            return {"currency": self.currency, "unknown": self.unknown}
        return {
            "currency": self.currency,
            "items": [i.to_json() for i in self.items],
            "total": {
                **self.change(),
                "min": self.change("min"),
                "max": self.change("max"),
                "before": _totals(self.before),
                "after": _totals(self.after),
            },
        }


def _totals(total: Optional[dict]) -> dict:
    return {**_amounts(total), "min": _amounts(total, "min"), "max": _amounts(total, "max")}


def _cost_of(side: Side, where: str) -> tuple[Optional[dict], Optional[str]]:
    """A side's `cost` (None for a stack that does not exist there), or why it has no amounts."""
    if side.status == "absent":
        return {"currency": "USD", "items": [], "total": dict(_ZERO)}, None
    cost = (side.plan or {}).get("cost")
    if not isinstance(cost, dict):
        return None, f"the plan {where} has no cost estimate (a revision older than it)"
    if cost.get("missing") or cost.get("complete") is False or "total" not in cost:
        missing = "; ".join(m.get("problem", "") for m in cost.get("missing", [])) or "no amounts"
        return None, f"the estimate {where} is incomplete: {missing}"
    return cost, None


def replaced_items(changes: Iterable[Change]) -> set[str]:
    """Names of the cost items whose node pools a change replaces: a TPU pool's slice entry (its PoolSize), a GPU or
    CPU pool by its node pool's name, the system pool (`<cluster>-system`) as `system`."""
    names: set[str] = set()
    for change in changes:
        if change.op != "replace" or not change.type.startswith("gcp:container/nodePool:"):
            continue
        names.add(change.name)
        names.update(size.slice for size in (change.before, change.after) if size is not None)
        if change.name.endswith("-system"):
            names.add("system")
    return names


def _items(cost: dict) -> dict[tuple[str, str], dict]:
    """The priced items and the cluster fees of a `cost`, by (kind, name)."""
    return {(i["kind"], i["name"]): i for i in list(cost.get("items", [])) + list(cost.get("fees", []))}


def delta(old: Side, new: Side, ref: str, changes: Iterable[Change] = ()) -> Optional[CostDelta]:
    """The cost change of one stack, None where a side could not be planned (the diff reports that itself).
    `changes`: the stack's resource changes, so an item whose pool is replaced says so."""
    if not (old.ok and new.ok):
        return None
    before, why_before = _cost_of(old, f"at {ref}")
    after, why_after = _cost_of(new, "in the working tree")
    if why_before or why_after:
        return CostDelta(unknown="; ".join(w for w in (why_before, why_after) if w))
    olds, news = _items(before), _items(after)
    replaced = replaced_items(changes)
    items = []
    for key in list(olds) + [k for k in news if k not in olds]:
        b, a = olds.get(key), news.get(key)
        again = key[1] in replaced and key[0] != "gkeClusterFee"
        if (
            b is not None
            and a is not None
            and _summary(b) == _summary(a)
            and b.get("rate") == a.get("rate")
            and not again
        ):
            continue
        items.append(ItemDelta(key[0], key[1], b, a, replaced=again))
    return CostDelta(
        currency=after.get("currency") or before.get("currency") or "USD",
        before=before.get("total"),
        after=after.get("total"),
        items=items,
    )


def usd(value: Any, sign: bool = False, places: int = 2) -> str:
    from ray_tpu_gke.render.pricing import format_usd

    return format_usd(_dec(value), places, sign=sign)


def describe(d: CostDelta) -> str:
    """`+$1,971.00/month (+$2.70/hour): $3,645.63 -> $5,616.63; at most +$1,971.00/month`."""
    if not d.known:
        return f"unknown: {d.unknown}"
    if not d.changed:
        return "no cost change"
    change = d.change()
    text = (
        f"{usd(change['monthly'], True)}/month ({usd(change['hourly'], True)}/hour): "
        f"{usd(_amounts(d.before)['monthly'])} -> {usd(_amounts(d.after)['monthly'])} per month"
    )
    if d.max_monthly != d.monthly:
        text += f"; at most {usd(d.max_monthly, True)}/month"
    return text


def describe_item(i: ItemDelta) -> str:
    change = i.change()
    text = (
        f"{usd(change['monthly'], True)}/month ({usd(change['hourly'], True)}/hour): "
        f"{usd(_amounts(i.before)['monthly'])} -> {usd(_amounts(i.after)['monthly'])}"
    )
    if i.max_monthly != i.monthly:
        text += f"; at most {usd(i.max_monthly, True)}/month"
    return text
