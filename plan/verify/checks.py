"""The live checks, one `Check` each: TPU node pools, KubeRay objects, the worker pods of each TPU worker group, and
the version set (plan/verify/live_versions.py). The slice checks are one implementation shared with the in-cluster
CronJob (ray_tpu_gke.workload.slice_checks); this module adapts the plan's objects to them."""

from __future__ import annotations

from typing import Optional

from ray_tpu_gke.workload.slice_checks import (  # noqa: F401  (re-exported for plan.verify's modules)
    FAIL,
    PASS,
    SKIP,
    Check,
    group_checks,
    labels_of,
    listing,
    name_of,
    pool_checks,
)
from ray_tpu_gke.workload.slice_checks import object_checks as _object_checks

from .expected import ObjectPlan


def object_checks(plan: ObjectPlan, live: Optional[dict]) -> tuple[list[Check], Optional[str]]:
    """Whether the object exists and is ready, and the name of the Ray cluster its pods belong to."""
    return _object_checks(plan.subject, plan.kind, plan.name, live, plan.cluster_selector)
