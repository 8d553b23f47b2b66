"""Alert policies: what the Cloud Monitoring API accepts in the conditions of an `projects.alertPolicies` body
(`conditionThreshold` and `conditionAbsent`, the two kinds the package writes)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..catalog.metrics import limit
from .rules import rule

__all__ = ["ALERT_CONDITION_MISSING_DATA", "ALERT_CONDITION_DURATION", "ALERT_ABSENCE_DURATION",
           "ALERT_ALIGNMENT_PERIOD", "MAX_ALERT_ALIGNMENT_SECONDS", "MIN_ABSENCE_SECONDS", "alert_condition_problems",
           "alert_policy_problems", "seconds_of"]

_POLICIES_API = "https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies"

ALERT_CONDITION_MISSING_DATA = rule(
    "monitoring-missing-data-duration", "A condition that sets evaluationMissingData has a non-zero duration (the API "
    "answers 400 \"Conditions setting evaluation_missing_data must have a non-zero duration\").",
    f"{_POLICIES_API} (Condition.MetricThreshold.evaluationMissingData); the 400 error quoted in "
    "GoogleCloudPlatform/monitoring-dashboard-samples pull request #280")
ALERT_CONDITION_DURATION = rule(
    "monitoring-threshold-duration", "A threshold condition's duration is a multiple of a minute (0, 60, 120, 300 "
    "s ...); any other value is refused.",
    f"{_POLICIES_API} (Condition.MetricThreshold.duration: \"only values that are a multiple of a minute\")")
ALERT_ABSENCE_DURATION = rule(
    "monitoring-absence-duration", "A metric-absence condition's duration is at least 120 s and a multiple of a "
    "minute.",
    f"{_POLICIES_API} (Condition.MetricAbsence.duration: \"The minimum value of this field is 120 seconds\")")
ALERT_ALIGNMENT_PERIOD = rule(
    "monitoring-alert-alignment", "An alert condition's aggregation aligns over at least 60 s and at most 90,000 s "
    "(25 hours; charts allow up to 104 weeks).",
    "https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies#Aggregation (alignmentPeriod)")
MAX_ALERT_ALIGNMENT_SECONDS = 90_000  # Aggregation.alignmentPeriod, alerting policies (ALERT_ALIGNMENT_PERIOD)
MIN_ALIGNMENT_SECONDS = limit("min_alignment_seconds")  # Aggregation.alignmentPeriod "must be at least 60 seconds"
MIN_ABSENCE_SECONDS = 120  # Condition.MetricAbsence.duration (ALERT_ABSENCE_DURATION)


def seconds_of(duration: Any) -> float | None:
    """A google.protobuf.Duration in JSON ("300s", "90.5s") in seconds; None when it is not one."""
    if isinstance(duration, str) and re.fullmatch(r"[0-9]+(\.[0-9]+)?s", duration):
        return float(duration[:-1])
    return None


def alert_condition_problems(condition: Mapping[str, Any]) -> list[str]:
    """What the Monitoring API would refuse in one condition (empty: nothing), each naming its rule."""
    problems: list[str] = []
    kind = "conditionThreshold" if "conditionThreshold" in condition else "conditionAbsent"
    body = condition.get(kind)
    if not isinstance(body, Mapping):
        return [f"a condition holds conditionThreshold or conditionAbsent (given keys {sorted(condition)})"]
    duration = seconds_of(body.get("duration", "0s"))
    if duration is None:
        problems.append(f"duration {body.get('duration')!r} is not a number of seconds ('300s')")
    elif kind == "conditionThreshold":
        if duration % 60:
            problems.append(f"duration {duration:g}s is not a multiple of 60 s ({ALERT_CONDITION_DURATION.id})")
        if body.get("evaluationMissingData") and duration == 0:
            problems.append(f"evaluationMissingData needs a non-zero duration ({ALERT_CONDITION_MISSING_DATA.id})")
    elif duration < MIN_ABSENCE_SECONDS or duration % 60:
        problems.append(f"an absence duration of {duration:g}s is not a multiple of 60 s of at least "
                        f"{MIN_ABSENCE_SECONDS} s ({ALERT_ABSENCE_DURATION.id})")
    for aggregation in body.get("aggregations") or []:
        period = seconds_of(aggregation.get("alignmentPeriod"))
        if period is not None and not MIN_ALIGNMENT_SECONDS <= period <= MAX_ALERT_ALIGNMENT_SECONDS:
            problems.append(f"alignmentPeriod {period:g}s is outside {MIN_ALIGNMENT_SECONDS}-"
                            f"{MAX_ALERT_ALIGNMENT_SECONDS} s ({ALERT_ALIGNMENT_PERIOD.id})")
    return problems


def alert_policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """The problems of every condition of an AlertPolicy body, each prefixed with the condition's displayName."""
    return [f"condition {c.get('displayName', index)!r}: {problem}"
            for index, c in enumerate(policy.get("conditions") or [])
            for problem in alert_condition_problems(c)]
