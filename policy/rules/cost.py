"""Cost: TPU capacity that idles or that nothing uses (advisory: a reviewer decides), and the environment's monthly
budget (mandatory where the stack sets one).

The amounts come from the plan's `cost` object (`python -m plan STACK --json`: the estimate of
`ray_tpu_gke.render.pricing`, per slice entry and pool). Where a plan has none (what the Pulumi CLI hands a policy
pack, or an older saved plan) the advisory rules still fire without amounts, and the budget rule cannot run.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, Optional

from ray_tpu_gke.render.pricing import format_usd

from .. import slices
from ..view import StackView
from .base import ADVISORY, MANDATORY, Findings, stack_rule


def _items(view: StackView) -> dict[str, Mapping[str, Any]]:
    """The TPU slice entries of the plan's estimate, by name (empty where the plan has no amounts)."""
    cost = view.cost or {}
    return {i.get("name"): i for i in cost.get("items", []) if isinstance(i, Mapping) and i.get("kind") == "tpuSlice"}


def _usd(value: Any) -> str:
    return format_usd(Decimal(str(value)))


def slice_cost(view: StackView, slice_name: Optional[str]) -> str:
    """`, which costs $21.60/hour ($15,768.00/month) at its onDemand rate`: one slice of the entry, or "" unknown."""
    item = _items(view).get(slice_name)
    per_slice = (item or {}).get("perSlice")
    if not isinstance(per_slice, Mapping) or per_slice.get("hourly") is None:
        return ""
    hourly = Decimal(str(per_slice["hourly"]))  # one slice, whether or not the configured basis runs it
    return (
        f", which costs {_usd(hourly)}/hour ({_usd(hourly * 730)}/month) at its {item.get('capacity')} rate "
        f"(docs/cost.md)"
    )


@stack_rule(
    "cost-tpu-autoscaling",
    ADVISORY,
    "Outside production TPU node pools autoscale, so idle slices scale to zero.",
    "A TPU slice is billed per host-hour whether or not a Ray worker runs on it.",
)
def tpu_autoscaling(view: StackView) -> Findings:
    for pool in slices.tpu_pools(view):
        r = pool.resource
        if r.production or r.get("autoscaling"):
            continue
        yield (
            r,
            (
                f"TPU node pool {pool.name} has a fixed size outside production{slice_cost(view, pool.slice_name)}, "
                "busy or idle; enable autoscaling (minimum 0) so it costs nothing while idle"
            ),
        )


@stack_rule(
    "cost-unused-slice",
    ADVISORY,
    "Every TPU node pool is used by a worker group of a RayCluster, RayService or RayJob.",
    "A provisioned slice that no Ray object selects is paid for and idle.",
)
def unused_slice(view: StackView) -> Findings:
    if not all(slices.groups_known(r) for r in view.ray_objects):
        return  # a preview of Ray objects whose spec is not known yet: nothing to conclude
    groups = [g for r in view.ray_objects for g in slices.tpu_worker_groups(r)]
    for pool in slices.tpu_pools(view):
        if not any(pool.selected_by(g.node_selector) for g in groups):
            slice_name = f" (slice {pool.slice_name})" if pool.slice_name else ""
            yield (
                pool.resource,
                (
                    f"TPU node pool {pool.name}{slice_name}, {pool.describe}, is provisioned but no "
                    f"Ray worker group selects it{slice_cost(view, pool.slice_name)} while its nodes run"
                ),
            )


@stack_rule(
    "cost-monthly-budget",
    MANDATORY,
    "Where the stack sets ray-tpu-gke:pricing.monthlyBudget, the most it can cost in a month stays within it.",
    "The budget is the environment's spending limit; a change that can exceed it needs a new budget, decided openly.",
)
def monthly_budget(view: StackView) -> Findings:
    cost = view.cost
    if not cost or cost.get("monthlyBudget") is None:
        return  # no budget, or no estimate in this plan (the Pulumi CLI's view): nothing to check
    budget = Decimal(str(cost["monthlyBudget"]))
    if cost.get("missing") or not isinstance(cost.get("total"), Mapping):
        missing = "; ".join(str(m.get("problem", "")) for m in cost.get("missing", []) if isinstance(m, Mapping))
        yield (
            None,
            (
                f"monthly budget {_usd(budget)} cannot be checked: the estimate is incomplete "
                f"({missing or 'no amounts'})"
            ),
        )
        return
    total = cost["total"]
    most = Decimal(str((total.get("max") or total).get("monthly", 0)))
    if most <= budget:
        return
    items = sorted(
        (i for i in cost.get("items", []) if isinstance(i, Mapping)),
        key=lambda i: Decimal(str((i.get("max") or i).get("monthly", 0))),
        reverse=True,
    )
    largest = ", ".join(
        f"{i.get('kind')} {i.get('name')} {_usd((i.get('max') or i).get('monthly', 0))}" for i in items[:3]
    )
    yield (
        None,
        (
            f"the stack can cost {_usd(most)}/month (configured size {_usd(total.get('monthly', 0))}), "
            f"{_usd(most - budget)} over its monthly budget {_usd(budget)}; largest: {largest}; reduce "
            "capacity or raise ray-tpu-gke:pricing.monthlyBudget"
        ),
    )
