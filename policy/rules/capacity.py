"""Stranded capacity: what the stack always provisions beyond what its Ray worker groups ask for (advisory).

The plan's estimate names it per slice entry and pool (`cost.items[].stranded`: the always-provisioned slices or nodes
no worker group's replicas use, `ray_tpu_gke.render.pricing`), which is also what the plan prints as "Stranded" and
the diff flags. A slice entry no worker group uses at all is `cost-unused-slice`'s finding, per node pool, and is not
repeated here. Where the plan has no estimate (what the Pulumi CLI hands a policy pack) there is nothing to read.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

from ray_tpu_gke.render.pricing import format_usd

from ..view import StackView
from .base import ADVISORY, Findings, stack_rule

UNUSED = "no Ray worker group uses it"  # the estimate's reason for an entry no group names (render/pricing.py)


def _amount(stranded: Mapping[str, Any]) -> str:
    if stranded.get("monthly") is None:
        return ""
    return (
        f", {format_usd(Decimal(str(stranded.get('hourly', 0))))}/hour "
        f"({format_usd(Decimal(str(stranded['monthly'])))}/month)"
    )


@stack_rule(
    "stranded-capacity",
    ADVISORY,
    "Every always-provisioned TPU slice, GPU and CPU node is used by a Ray worker group's replicas.",
    "Capacity that is always up and that no worker group asks for is billed and idle; scale it from zero, lower its "
    "count, or give a worker group the replicas to use it.",
)
def stranded_capacity(view: StackView) -> Findings:
    cost = view.cost or {}
    for item in cost.get("items", []):
        if not isinstance(item, Mapping) or not isinstance(item.get("stranded"), Mapping):
            continue
        stranded = item["stranded"]
        if item.get("kind") == "tpuSlice" and stranded.get("reason") == UNUSED:
            continue  # cost-unused-slice names each of its node pools
        quantity = stranded.get("quantity", 0)
        unit = f"{item.get('unit', '')}{'s' if quantity != 1 else ''}"
        yield (
            None,
            (
                f"{item.get('kind')} {item.get('name')}: {quantity} {unit} stranded{_amount(stranded)}: "
                f"{stranded.get('reason', '')}"
            ),
        )
