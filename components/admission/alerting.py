"""Alert policies: what the Cloud Monitoring API accepts in the conditions of an `projects.alertPolicies` body
(`conditionThreshold`, `conditionAbsent` and `conditionPrometheusQueryLanguage`, the three kinds the package writes)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..catalog.metrics import limit
from .rules import rule

__all__ = [
    "ALERT_CONDITION_MISSING_DATA",
    "ALERT_CONDITION_DURATION",
    "ALERT_ABSENCE_DURATION",
    "ALERT_ABSENCE_MAXIMUM",
    "ALERT_DOCUMENTATION_SIZE",
    "MAX_ABSENCE_SECONDS",
    "MAX_DOCUMENTATION_CHARACTERS",
    "MAX_DOCUMENTATION_BYTES",
    "ALERT_ALIGNMENT_PERIOD",
    "ALERT_PROMQL_QUERY",
    "ALERT_PROMQL_DURATION",
    "ALERT_PROMQL_EVALUATION",
    "ALERT_PROMQL_LABELS",
    "ALERT_PROMQL_RULE_GROUP",
    "ALERT_PROMQL_ALERT_RULE",
    "ALERT_PROMQL_ALONE",
    "MAX_ALERT_ALIGNMENT_SECONDS",
    "MIN_ABSENCE_SECONDS",
    "PROMQL_EVALUATION_STEP_SECONDS",
    "alert_condition_problems",
    "alert_policy_problems",
    "promql_condition_problems",
    "seconds_of",
    "slice_check_windows",
    "max_slice_check_alert_minutes",
]

_POLICIES_API = "https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies"

ALERT_CONDITION_MISSING_DATA = rule(
    "monitoring-missing-data-duration",
    "A condition that sets evaluationMissingData has a non-zero duration (the API "
    'answers 400 "Conditions setting evaluation_missing_data must have a non-zero duration").',
    f"{_POLICIES_API} (Condition.MetricThreshold.evaluationMissingData); the 400 error quoted in "
    "GoogleCloudPlatform/monitoring-dashboard-samples pull request #280",
)
ALERT_CONDITION_DURATION = rule(
    "monitoring-threshold-duration",
    "A threshold condition's duration is a multiple of a minute (0, 60, 120, 300 s ...); any other value is refused.",
    f'{_POLICIES_API} (Condition.MetricThreshold.duration: "only values that are a multiple of a minute")',
)
ALERT_ABSENCE_DURATION = rule(
    "monitoring-absence-duration",
    "A metric-absence condition's duration is at least 120 s and a multiple of a minute.",
    f'{_POLICIES_API} (Condition.MetricAbsence.duration: "The minimum value of this field is 120 seconds")',
)
ALERT_ABSENCE_MAXIMUM = rule(
    "monitoring-absence-maximum",
    "A metric-absence condition's duration (its trigger absence time) is at most 23.5 hours (84,600 s).",
    'https://cloud.google.com/monitoring/alerts/metric-absence ("You can configure this time period, called the '
    'trigger absence time, up to a maximum of 23.5 hours")',
)
ALERT_DOCUMENTATION_SIZE = rule(
    "monitoring-documentation-size",
    "An alert policy's documentation content is at most 8,192 Unicode characters and at most 10,240 bytes in UTF-8.",
    f'{_POLICIES_API}#Documentation (content: "may not exceed 8,192 Unicode characters and may not exceed more than '
    '10,240 bytes when encoded in UTF-8 format, whichever is smaller")',
)
ALERT_ALIGNMENT_PERIOD = rule(
    "monitoring-alert-alignment",
    "An alert condition's aggregation aligns over at least 60 s and at most 90,000 s "
    "(25 hours; charts allow up to 104 weeks).",
    "https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies#Aggregation (alignmentPeriod)",
)
_PROMQL = f"{_POLICIES_API}#PrometheusQueryLanguageCondition"
ALERT_PROMQL_QUERY = rule(
    "monitoring-promql-query",
    "A PromQL condition's query is not empty.",
    f'{_PROMQL} (query: "This field must not be empty")',
)
ALERT_PROMQL_DURATION = rule(
    "monitoring-promql-duration",
    "A PromQL condition's duration, how long the query must be true before the alert "
    "fires, is zero or positive, or left out (zero).",
    f'{_PROMQL} (duration: "Must be a non-negative duration or missing")',
)
ALERT_PROMQL_EVALUATION = rule(
    "monitoring-promql-evaluation-interval",
    "A PromQL condition is evaluated at a positive multiple of 30 s (evaluationInterval; 30 s when left out).",
    f'{_PROMQL} (evaluationInterval: "Must be a positive multiple of 30 seconds or missing")',
)
ALERT_PROMQL_LABELS = rule(
    "monitoring-promql-labels",
    "The labels a PromQL condition adds to its result are valid Prometheus label names "
    "([a-zA-Z_][a-zA-Z0-9_]*), none starting with __ (reserved for internal use).",
    f'{_PROMQL} (labels: "Label names must be valid"); https://prometheus.io/docs/concepts/data_model/'
    "#metric-names-and-labels",
)
ALERT_PROMQL_RULE_GROUP = rule(
    "monitoring-promql-rule-group",
    "A PromQL condition's ruleGroup is at most 2,048 characters.",
    f'{_PROMQL} (ruleGroup: "This field may not exceed 2048 Unicode characters in length")',
)
ALERT_PROMQL_ALERT_RULE = rule(
    "monitoring-promql-alert-rule",
    "A PromQL condition's alertRule, where set, is a valid Prometheus label name of at most 2,048 characters.",
    f'{_PROMQL} (alertRule: "it must be a valid Prometheus label name. This field may not exceed 2048 Unicode '
    'characters")',
)
ALERT_PROMQL_ALONE = rule(
    "monitoring-promql-alone",
    "An alert policy with a PromQL condition has no other condition.",
    'https://cloud.google.com/monitoring/promql/create-promql-alerts ("An alerting policy that uses PromQL must have '
    'only one condition")',
)
PROMQL_EVALUATION_STEP_SECONDS = 30  # PrometheusQueryLanguageCondition.evaluationInterval (ALERT_PROMQL_EVALUATION)
MAX_PROMQL_NAME_CHARACTERS = 2048  # ruleGroup and alertRule (ALERT_PROMQL_RULE_GROUP, ALERT_PROMQL_ALERT_RULE)
_PROMETHEUS_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")  # the Prometheus data model's label names
MAX_ALERT_ALIGNMENT_SECONDS = 90_000  # Aggregation.alignmentPeriod, alerting policies (ALERT_ALIGNMENT_PERIOD)
MIN_ALIGNMENT_SECONDS = limit("min_alignment_seconds")  # Aggregation.alignmentPeriod "must be at least 60 seconds"
MIN_ABSENCE_SECONDS = 120  # Condition.MetricAbsence.duration (ALERT_ABSENCE_DURATION)
MAX_ABSENCE_SECONDS = 84_600  # 23.5 hours, the longest trigger absence time (ALERT_ABSENCE_MAXIMUM)
MAX_DOCUMENTATION_CHARACTERS, MAX_DOCUMENTATION_BYTES = 8192, 10_240  # Documentation.content (ALERT_DOCUMENTATION_SIZE)


def seconds_of(duration: Any) -> float | None:
    """A google.protobuf.Duration in JSON ("300s", "90.5s") in seconds; None when it is not one."""
    if isinstance(duration, str) and re.fullmatch(r"[0-9]+(\.[0-9]+)?s", duration):
        return float(duration[:-1])
    return None


def slice_check_windows(alert_after_minutes: int, check_interval_minutes: int) -> tuple[int, int]:
    """(alignment period, duration) in seconds of the slice check's conditions. The check writes one point per run, so
    every window holds at least two runs (twice the longest time between runs; with an aligner over 60 s, four windows
    in five would hold no point and count as not failing, resetting the duration); the duration, alertAfterMinutes,
    is rounded up to whole windows. The policy's silence condition (metric absence) waits twice the duration."""
    period = 2 * check_interval_minutes * 60
    return period, -(-alert_after_minutes * 60 // period) * period


def max_slice_check_alert_minutes(check_interval_minutes: int) -> int:
    """The largest alertAfterMinutes whose silence condition (twice the duration) stays within the longest absence
    duration (ALERT_ABSENCE_MAXIMUM)."""
    period = 2 * check_interval_minutes * 60
    return (MAX_ABSENCE_SECONDS // 2 // period) * period // 60


def promql_condition_problems(body: Mapping[str, Any]) -> list[str]:
    """What the Monitoring API would refuse in a conditionPrometheusQueryLanguage body, each naming its rule."""
    problems: list[str] = []
    if not isinstance(body.get("query"), str) or not body["query"].strip():
        problems.append(f"the query is empty ({ALERT_PROMQL_QUERY.id})")
    if "duration" in body and seconds_of(body["duration"]) is None:
        problems.append(
            f"duration {body['duration']!r} is not a non-negative number of seconds ('300s') "
            f"({ALERT_PROMQL_DURATION.id})"
        )
    if "evaluationInterval" in body:
        interval = seconds_of(body["evaluationInterval"])
        if interval is None or interval <= 0 or interval % PROMQL_EVALUATION_STEP_SECONDS:
            problems.append(
                f"evaluationInterval {body['evaluationInterval']!r} is not a positive multiple of "
                f"{PROMQL_EVALUATION_STEP_SECONDS} s ({ALERT_PROMQL_EVALUATION.id})"
            )
    bad = sorted(
        str(k)
        for k in body.get("labels") or {}
        if not isinstance(k, str) or not _PROMETHEUS_LABEL.fullmatch(k) or k.startswith("__")
    )
    if bad:
        problems.append(
            f"labels {', '.join(bad)} are not Prometheus label names of the user's own ({ALERT_PROMQL_LABELS.id})"
        )
    if len(str(body.get("ruleGroup", ""))) > MAX_PROMQL_NAME_CHARACTERS:
        problems.append(
            f"ruleGroup is longer than {MAX_PROMQL_NAME_CHARACTERS} characters ({ALERT_PROMQL_RULE_GROUP.id})"
        )
    alert_rule = body.get("alertRule")
    if alert_rule not in (None, "") and (
        not isinstance(alert_rule, str)
        or not _PROMETHEUS_LABEL.fullmatch(alert_rule)
        or len(alert_rule) > MAX_PROMQL_NAME_CHARACTERS
    ):
        problems.append(
            f"alertRule {alert_rule!r} is not a Prometheus label name of at most "
            f"{MAX_PROMQL_NAME_CHARACTERS} characters ({ALERT_PROMQL_ALERT_RULE.id})"
        )
    return problems


def alert_condition_problems(condition: Mapping[str, Any]) -> list[str]:
    """What the Monitoring API would refuse in one condition (empty: nothing), each naming its rule."""
    problems: list[str] = []
    promql = condition.get("conditionPrometheusQueryLanguage")
    if isinstance(promql, Mapping):
        return promql_condition_problems(promql)
    kind = "conditionThreshold" if "conditionThreshold" in condition else "conditionAbsent"
    body = condition.get(kind)
    if not isinstance(body, Mapping):
        return [
            f"a condition holds conditionThreshold, conditionAbsent or conditionPrometheusQueryLanguage (given "
            f"keys {sorted(condition)})"
        ]
    duration = seconds_of(body.get("duration", "0s"))
    if duration is None:
        problems.append(f"duration {body.get('duration')!r} is not a number of seconds ('300s')")
    elif kind == "conditionThreshold":
        if duration % 60:
            problems.append(f"duration {duration:g}s is not a multiple of 60 s ({ALERT_CONDITION_DURATION.id})")
        if body.get("evaluationMissingData") and duration == 0:
            problems.append(f"evaluationMissingData needs a non-zero duration ({ALERT_CONDITION_MISSING_DATA.id})")
    elif duration < MIN_ABSENCE_SECONDS or duration % 60:
        problems.append(
            f"an absence duration of {duration:g}s is not a multiple of 60 s of at least "
            f"{MIN_ABSENCE_SECONDS} s ({ALERT_ABSENCE_DURATION.id})"
        )
    elif duration > MAX_ABSENCE_SECONDS:
        problems.append(
            f"an absence duration of {duration:g}s is longer than {MAX_ABSENCE_SECONDS} s (23.5 hours) "
            f"({ALERT_ABSENCE_MAXIMUM.id})"
        )
    for aggregation in body.get("aggregations") or []:
        period = seconds_of(aggregation.get("alignmentPeriod"))
        if period is not None and not MIN_ALIGNMENT_SECONDS <= period <= MAX_ALERT_ALIGNMENT_SECONDS:
            problems.append(
                f"alignmentPeriod {period:g}s is outside {MIN_ALIGNMENT_SECONDS}-"
                f"{MAX_ALERT_ALIGNMENT_SECONDS} s ({ALERT_ALIGNMENT_PERIOD.id})"
            )
    return problems


def alert_policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """The problems of every condition of an AlertPolicy body, each prefixed with the condition's displayName, its
    documentation's size, and a PromQL condition that is not the policy's only one."""
    conditions = policy.get("conditions") or []
    problems = [
        f"condition {c.get('displayName', index)!r}: {problem}"
        for index, c in enumerate(conditions)
        for problem in alert_condition_problems(c)
    ]
    content = (policy.get("documentation") or {}).get("content") or ""
    if len(content) > MAX_DOCUMENTATION_CHARACTERS or len(content.encode()) > MAX_DOCUMENTATION_BYTES:
        problems.append(
            f"the documentation is {len(content)} characters, {len(content.encode())} bytes in UTF-8: more than "
            f"{MAX_DOCUMENTATION_CHARACTERS} characters or {MAX_DOCUMENTATION_BYTES} bytes "
            f"({ALERT_DOCUMENTATION_SIZE.id})"
        )
    if len(conditions) > 1 and any("conditionPrometheusQueryLanguage" in c for c in conditions):
        problems.append(
            f"a PromQL condition is the policy's only condition, not one of {len(conditions)} ({ALERT_PROMQL_ALONE.id})"
        )
    return problems
