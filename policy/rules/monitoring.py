"""Monitoring: a production stack's TPU slices are watched, and someone is told. Advisory: alerting is the team's call,
but a production slice that nobody is paged about is worth a reviewer's look.

The stack's alert policies are `gcp.monitoring.AlertPolicy` resources (components/resources/monitoring.py creates
them from `ray-tpu-gke:monitoring`); a pool counts as watched when a condition of some policy names it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from .. import slices
from ..view import UNKNOWN, Resource, StackView, is_known
from .base import ADVISORY, Findings, stack_rule

ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
# Where a condition of an alert policy names the series it watches (AlertPolicy.Condition in the Monitoring API).
CONDITION_TEXTS = (
    "conditionThreshold.filter",
    "conditionThreshold.denominatorFilter",
    "conditionAbsent.filter",
    "conditionMonitoringQueryLanguage.query",
    "conditionPrometheusQueryLanguage.query",
)


def _texts(policy: Resource) -> Iterable[str]:
    conditions = policy.get("conditions")
    if not isinstance(conditions, list):
        return
    for condition in conditions:
        for path in CONDITION_TEXTS:
            node: Any = condition
            for key in path.split("."):
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, str):
                yield node


def names(text: str, name: str) -> bool:
    """Whether a filter names `name` whole: as a quoted value or one alternative of a regular expression, never as a
    part of a longer name (train-1 does not name train-10)."""
    return re.search(rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_.-])", text) is not None


@stack_rule(
    "prod-slice-alerts",
    ADVISORY,
    "In production every TPU node pool is named by an alert policy, and every alert policy notifies a channel.",
    "A production slice that breaks, idles or keeps being interrupted should page someone: ray-tpu-gke:monitoring "
    "(on by default) creates a policy for every slice, and a policy without notification channels opens incidents "
    "that nobody is told about.",
)
def slice_alerts(view: StackView) -> Findings:
    if not view.production:
        return
    policies = view.of_type(ALERT_POLICY)
    texts = [text for policy in policies for text in _texts(policy)]
    for pool in slices.tpu_pools(view):
        name = pool.resource.get("name")
        name = name if isinstance(name, str) and is_known(name) else pool.name
        if not any(names(text, name) for text in texts):
            yield (
                pool.resource,
                (
                    f"TPU node pool {name} ({pool.describe}) is named by no alert policy in production "
                    f"({view.production}); keep ray-tpu-gke:monitoring enabled, or add a policy that "
                    "watches the pool"
                ),
            )
    silent = []
    for policy in policies:
        channels = policy.get("notificationChannels")
        if channels == UNKNOWN or (isinstance(channels, list) and any(not is_known(c) for c in channels)):
            continue
        if not channels:
            silent.append(policy.get("displayName") if is_known(policy.get("displayName")) else policy.name)
    if silent:
        shown = "; ".join(str(s) for s in silent[:3]) + (f"; and {len(silent) - 3} more" if len(silent) > 3 else "")
        yield (
            None,
            (
                f"{len(silent)} alert polic{'y notifies' if len(silent) == 1 else 'ies notify'} no channel in "
                f"production ({view.production}): {shown}. Set ray-tpu-gke:monitoring.notificationChannels to "
                "the IDs of existing channels (projects/<project>/notificationChannels/<id>)"
            ),
        )
