"""The conditions of the alert policies, as `projects.alertPolicies` condition bodies: a threshold on a series
(`conditionThreshold`), its absence (`conditionAbsent`) and a PromQL query (`conditionPrometheusQueryLanguage`), with
the alignment the slice check's series need."""

from __future__ import annotations

from typing import Any

from ..catalog.metrics import POD_UNSCHEDULABLE
from .series import Environment


def threshold(title: str, series: dict, comparison: str, value: float, seconds: int) -> dict:
    """A threshold condition: the series compared with `value` for `seconds`, a lapse in it counting as no problem."""
    body: dict[str, Any] = {
        "displayName": title,
        "conditionThreshold": {
            "filter": series["filter"],
            "aggregations": [series["aggregation"]],
            "comparison": comparison,
            "thresholdValue": value,
            "duration": f"{seconds}s",
            "trigger": {"count": 1},
        },
    }
    if seconds >= 60:
        # No data is no problem: a pool scaled to zero has no nodes, and a quiet pool reports no interruptions. The
        # API refuses it on a condition of duration 0 (admission ALERT_CONDITION_MISSING_DATA), where a missing
        # point cannot hold a condition open anyway.
        body["conditionThreshold"]["evaluationMissingData"] = "EVALUATION_MISSING_DATA_INACTIVE"
    return body


def absence(title: str, series: dict, seconds: int) -> dict:
    """A metric-absence condition: the series silent for `seconds`."""
    # conditionAbsent: no point at all for `duration` (at least 120 s, AlertPolicy.Condition.MetricAbsence).
    return {
        "displayName": title,
        "conditionAbsent": {
            "filter": series["filter"],
            "aggregations": [series["aggregation"]],
            "duration": f"{max(120, seconds)}s",
            "trigger": {"count": 1},
        },
    }


def multiple(seconds: int, period: int) -> int:
    """`seconds` rounded up to a whole number of alignment periods (a duration the windows can fill)."""
    return -(-seconds // period) * period


def promql(title: str, query: str, seconds: int, evaluation_s: int) -> dict:
    """A PromQL condition: `query` returns a series for `seconds`, evaluated every `evaluation_s`. Its metric is not
    validated when the policy is written (disableMetricValidation: "allows alerting policies to be defined on metrics
    that do not yet exist", AlertPolicy.Condition.PrometheusQueryLanguageCondition), so a new cluster's first apply
    does not wait for a series that appears only once a pod is unschedulable."""
    return {
        "displayName": title,
        "conditionPrometheusQueryLanguage": {
            "query": query,
            "duration": f"{seconds}s",
            "evaluationInterval": f"{evaluation_s}s",
            "disableMetricValidation": True,
        },
    }


def prometheus_name(metric_type: str) -> str:
    """The PromQL name of a Managed Service for Prometheus metric: stored as prometheus.googleapis.com/<name>/<kind>,
    queried by its Prometheus name <name> (data/metrics.yaml source managed-prometheus,
    https://cloud.google.com/stackdriver/docs/managed-prometheus/query-cm)."""
    parts = metric_type.split("/")
    if len(parts) != 3 or parts[0] != "prometheus.googleapis.com":
        raise ValueError(f"{metric_type} is not a Managed Service for Prometheus metric")
    return parts[1]


def unschedulable_pods_query(env: Environment, period_s: int = 60) -> str:
    """PromQL: per namespace of the stack's Ray objects, the unschedulable pods (kube state metrics; the largest value
    of each pod's series over `period_s`, summed), where there are any. The labels are those of the series'
    prometheus_target resource (data/metrics.yaml), which series.series_filter selects the same series by."""
    namespaces = "|".join(env.ray_namespaces)  # Kubernetes namespace names: [a-z0-9-], nothing a regex reads
    selector = f'project_id="{env.project}",cluster="{env.cluster}",namespace=~"{namespaces}"'
    return f"sum by (namespace) (max_over_time({prometheus_name(POD_UNSCHEDULABLE)}{{{selector}}}[{period_s}s])) > 0"
