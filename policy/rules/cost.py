"""Cost: TPU capacity that idles or that nothing uses. Advisory: a reviewer decides."""

from __future__ import annotations

from .. import slices
from ..view import NODE_POOL, Resource, StackView
from .base import ADVISORY, Findings, Messages, resource_rule, stack_rule


@resource_rule(
    "cost-tpu-autoscaling", ADVISORY,
    "Outside production TPU node pools autoscale, so idle slices scale to zero.",
    "A TPU slice is billed per host-hour whether or not a Ray worker runs on it.",
    types=(NODE_POOL,),
)
def tpu_autoscaling(r: Resource) -> Messages:
    if r.production or not slices.is_tpu_pool(r):
        return
    autoscaling = r.get("autoscaling")
    if not autoscaling:
        yield (f"TPU node pool {r.name} has a fixed size outside production; enable autoscaling (minimum 0) so it "
               "costs nothing while idle")


@stack_rule(
    "cost-unused-slice", ADVISORY,
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
            yield pool.resource, (f"TPU node pool {pool.name}{slice_name}, {pool.describe}, is provisioned but no "
                                  "Ray worker group selects it")
