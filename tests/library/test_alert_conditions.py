"""What the Cloud Monitoring API accepts in an alert policy's conditions (admission/alerting.py), held by every policy
of every stack and enforced when SliceMonitoring builds its policies; the order in which a first `pulumi up`
creates descriptors, waits and policies (resources/metric_waits.py); and the unschedulable-pods policy's PromQL."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from helpers import ALERT_POLICY, METRIC_DESCRIPTOR, STACKS, plan_of, steps_of_type

from ray_tpu_gke import admission, catalog
from ray_tpu_gke.catalog import metrics
from ray_tpu_gke.render import alert_conditions, alerts, series

SLEEP = "time:index/sleep:Sleep"


def threshold(duration: str, **extra) -> dict:
    return {"displayName": "c", "conditionThreshold": {
        "filter": "metric.type=\"x\"", "duration": duration, "comparison": "COMPARISON_GT", "thresholdValue": 0,
        "aggregations": [{"alignmentPeriod": extra.pop("period", "60s"), "perSeriesAligner": "ALIGN_MAX"}], **extra}}


@pytest.mark.parametrize("condition, rule", [
    (threshold("0s", evaluationMissingData="EVALUATION_MISSING_DATA_INACTIVE"), admission.ALERT_CONDITION_MISSING_DATA),
    (threshold("90s"), admission.ALERT_CONDITION_DURATION),
    (threshold("300s", period="172800s"), admission.ALERT_ALIGNMENT_PERIOD),
    (threshold("300s", period="30s"), admission.ALERT_ALIGNMENT_PERIOD),
    ({"displayName": "a", "conditionAbsent": {"filter": "f", "duration": "60s"}}, admission.ALERT_ABSENCE_DURATION),
    ({"displayName": "a", "conditionAbsent": {"filter": "f", "duration": "150s"}}, admission.ALERT_ABSENCE_DURATION),
])
def test_each_condition_rule_refuses_what_the_api_refuses(condition, rule):
    (problem,) = admission.alert_condition_problems(condition)
    assert f"({rule.id})" in problem
    assert rule.id in admission.RULES and rule.source.startswith("https://cloud.google.com/monitoring/api/ref_v3")


def promql(**fields) -> dict:
    return {"displayName": "p", "conditionPrometheusQueryLanguage": {"query": "up > 0", **fields}}


@pytest.mark.parametrize("condition, rule", [
    (promql(query=" "), admission.ALERT_PROMQL_QUERY),
    (promql(duration="-60s"), admission.ALERT_PROMQL_DURATION),
    (promql(evaluationInterval="45s"), admission.ALERT_PROMQL_EVALUATION),
    (promql(evaluationInterval="0s"), admission.ALERT_PROMQL_EVALUATION),
    (promql(labels={"team": "ml", "__name__": "x"}), admission.ALERT_PROMQL_LABELS),
    (promql(labels={"cost-center": "ml"}), admission.ALERT_PROMQL_LABELS),
    (promql(ruleGroup="g" * 2049), admission.ALERT_PROMQL_RULE_GROUP),
    (promql(alertRule="pods-unschedulable"), admission.ALERT_PROMQL_ALERT_RULE),
])
def test_each_promql_rule_refuses_what_the_api_refuses(condition, rule):
    (problem,) = admission.alert_condition_problems(condition)
    assert f"({rule.id})" in problem
    assert rule.id in admission.RULES and rule.source.startswith("https://cloud.google.com/monitoring/api/ref_v3")


def test_a_promql_condition_is_its_policys_only_one():
    alone = {"conditions": [promql()]}
    assert admission.alert_policy_problems(alone) == []
    (problem,) = admission.alert_policy_problems({"conditions": [promql(), threshold("60s")]})
    assert f"({admission.ALERT_PROMQL_ALONE.id})" in problem
    assert admission.ALERT_PROMQL_ALONE.source.startswith("https://cloud.google.com/monitoring/promql/")


@pytest.mark.parametrize("condition", [
    promql(), promql(duration="1800s", evaluationInterval="60s", labels={"severity": "warning"}, ruleGroup="ray",
                     alertRule="PodsUnschedulable", disableMetricValidation=True),
    threshold("0s"), threshold("60s", evaluationMissingData="EVALUATION_MISSING_DATA_INACTIVE"),
    threshold("900s", period="90000s"), {"displayName": "a", "conditionAbsent": {"filter": "f", "duration": "120s"}},
])
def test_conditions_the_api_takes_pass(condition):
    assert admission.alert_condition_problems(condition) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_alert_policy_of_every_stack_satisfies_the_condition_rules(stack):
    found = steps_of_type(plan_of(stack), ALERT_POLICY)
    assert found
    for step in found:
        policy = step["newState"]["inputs"]
        assert admission.alert_policy_problems(policy) == [], step["newState"]["name"]
        for condition in policy["conditions"]:  # missing data is set exactly where the API allows it
            body = condition.get("conditionThreshold")
            if body is not None:
                assert ("evaluationMissingData" in body) == (admission.seconds_of(body["duration"]) >= 60)


def test_the_library_refuses_a_policy_the_api_would_refuse():
    shape = catalog.slice_shape("v6e", "2x2")
    env = series.Environment("acme-ml-test", "ray-tpu", "test", thresholds=replace(series.Thresholds.of(), idle_minutes=1.5))
    with pytest.raises(metrics.ObservabilityError, match=r"alert policy v6e-4-idle: .*90s is not a multiple of 60 s "
                                                          r"\(monitoring-threshold-duration\)"):
        alerts.alert_policies(env, [series.SliceTarget("v6e-4", shape, pools=("v6e-4-0",))])


# --- the order of a first `pulumi up` --------------------------------------------------------------------------------

def _by_name(plan: dict) -> dict[str, dict]:
    return {s["urn"]: s["newState"] for s in plan["steps"]}


@pytest.mark.parametrize("stack", STACKS)
def test_policies_on_new_metrics_wait_for_them(stack):
    plan = plan_of(stack)
    states = _by_name(plan)
    names = {urn: state["name"] if "name" in state else urn.rsplit("::", 1)[-1] for urn, state in states.items()}
    sleeps = {urn: s for urn, s in states.items() if s["type"] == SLEEP}
    for urn, sleep in sleeps.items():
        assert sleep["inputs"]["createDuration"] == "10m"
    for step in steps_of_type(plan, ALERT_POLICY):
        policy = step["newState"]
        watched = {t for c in policy["inputs"]["conditions"] for body in c.values() if isinstance(body, dict)
                   and "filter" in body for t in [body["filter"].split('metric.type="', 1)[1].split('"', 1)[0]]}
        waits = [d for d in policy["dependencies"] if d in sleeps]
        if watched & {metrics.SLICE_HEALTHY, metrics.RAY_OBJECT_READY}:
            (wait,) = waits
            # descriptor -> wait -> policy
            assert {states[d]["type"] for d in states[wait]["dependencies"]} == {METRIC_DESCRIPTOR}
            assert {states[d]["inputs"]["type"] for d in states[wait]["dependencies"]} == {
                metrics.SLICE_HEALTHY, metrics.RAY_OBJECT_READY}
        else:  # the unschedulable-pods policy among them: PromQL, its metric not validated, so nothing to wait for
            assert waits == [], names[step["urn"]]
            assert metrics.POD_UNSCHEDULABLE not in watched


# --- the slice check's conditions at the CronJob's cadence ------------------------------------------------------------

def opens(condition: dict, wrong_points: int, every_s: int, offset_s: int = 17) -> bool:
    """Whether Cloud Monitoring opens an incident on a condition over a series with one point per run of the check,
    `every_s` apart: the first `wrong_points` points say wrong (0), every later one right (1). Evaluated once a minute
    (at `offset_s` past it): the aligner (ALIGN_FRACTION_TRUE) over the alignment period ending there; a window
    without a point is missing data, which EVALUATION_MISSING_DATA_INACTIVE counts as not met; the incident opens once
    the threshold is met at every evaluation of the duration ("Behavior of metric-based alerting policies", alignment
    periods and retest windows)."""
    body = condition["conditionThreshold"]
    period = admission.seconds_of(body["aggregations"][0]["alignmentPeriod"])
    duration = admission.seconds_of(body["duration"])
    assert body["comparison"] == "COMPARISON_LT" and body["aggregations"][0]["perSeriesAligner"] == \
        "ALIGN_FRACTION_TRUE"
    points = [(n * every_s, 0.0 if n < wrong_points else 1.0) for n in range(0, 7200 // every_s)]
    met = []
    for t in range(offset_s, 7200, 60):
        window = [v for at, v in points if t - period < at <= t]
        met.append(bool(window) and sum(window) / len(window) < body["thresholdValue"])
    needed = max(1, int(duration // 60))
    return any(all(met[i - needed + 1:i + 1]) for i in range(needed - 1, len(met)))


@pytest.mark.parametrize("title", ["slice-health", "ray-not-ready"])
def test_a_slice_wrong_for_15_minutes_opens_the_incident_and_one_wrong_for_5_does_not(title):
    # staging: the check every 5 minutes, sliceHealth.alertAfterMinutes and unavailableMinutes 15.
    (step,) = [s for s in steps_of_type(plan_of("staging"), ALERT_POLICY) if s["newState"]["name"].endswith(title)]
    condition = step["newState"]["inputs"]["conditions"][0]
    for offset in (0, 17, 59):
        assert opens(condition, wrong_points=3, every_s=300, offset_s=offset)  # wrong at 0, 5, 10; right at 15
        assert not opens(condition, wrong_points=1, every_s=300, offset_s=offset)  # wrong at 0; right at 5
        assert not opens(condition, wrong_points=2, every_s=300, offset_s=offset)  # wrong at 0 and 5: 10 minutes
    body = condition["conditionThreshold"]
    period = admission.seconds_of(body["aggregations"][0]["alignmentPeriod"])
    assert period >= 2 * 300 and admission.seconds_of(body["duration"]) % period == 0


def test_the_alignment_follows_the_schedule():
    env = series.Environment("acme-ml-test", "ray-tpu", "test", slice_health=True, ray_kinds=("RayCluster",),
                             thresholds=replace(series.Thresholds.of(), slice_health_minutes=30, slice_check_minutes=10))
    shape = catalog.slice_shape("v6e", "2x2")
    specs = {s.key: s.policy for s in alerts.alert_policies(env, [series.SliceTarget("v6e-4", shape,
                                                                                      pools=("v6e-4-0",))])}
    wrong, silent = specs["slice-health"]["conditions"]
    assert wrong["conditionThreshold"]["aggregations"][0]["alignmentPeriod"] == "1200s"
    assert wrong["conditionThreshold"]["duration"] == "2400s"  # 30 min rounded up to whole 20-minute windows
    assert silent["conditionAbsent"]["aggregations"][0]["alignmentPeriod"] == "1200s"
    assert "For 40 minutes" in specs["slice-health"]["documentation"]["content"]
    assert opens(wrong, wrong_points=4, every_s=600) and not opens(wrong, wrong_points=2, every_s=600)


# --- unschedulable Ray pods in PromQL ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_the_unschedulable_pods_policy_is_one_promql_condition(stack):
    plan = plan_of(stack)
    found = [s["newState"]["inputs"] for s in steps_of_type(plan, ALERT_POLICY)
             if s["newState"]["inputs"]["userLabels"]["alert"] == "pending-pods"]
    for policy in found:
        (condition,) = policy["conditions"]
        body = condition["conditionPrometheusQueryLanguage"]
        assert body["disableMetricValidation"] is True  # accepted before any pod has been unschedulable
        minutes = int(re.fullmatch(r"pods unschedulable for (\d+) min", condition["displayName"]).group(1))
        assert admission.seconds_of(body["duration"]) == minutes * 60 and body["evaluationInterval"] == "60s"
        assert alert_conditions.prometheus_name(metrics.POD_UNSCHEDULABLE) in body["query"]
    assert not any(s["newState"]["name"].endswith("kube-state-metrics-known") for s in steps_of_type(plan, SLEEP))


def test_the_promql_query_selects_what_the_threshold_filter_selected():
    env = series.Environment("acme-ml-test", "ray-tpu", "test", ray_namespaces=("ray", "serve"))
    query = alert_conditions.unschedulable_pods_query(env, period_s=120)
    selector = re.search(r"kube_pod_status_unschedulable\{(.*)\}\[120s\]", query).group(1)
    labels = dict(re.findall(r'(\w+)=~?"([^"]*)"', selector))
    assert labels == {"project_id": env.project, "cluster": env.cluster, "namespace": "|".join(env.ray_namespaces)}
    # the dashboard charts the same series by the same resource labels
    chart = series.unschedulable_pods(env)["filter"]
    assert all(f'resource.labels.{key}="{env.project if key == "project_id" else env.cluster}"' in chart
               for key in ("project_id", "cluster"))
    assert query.startswith("sum by (namespace) (max_over_time(") and query.endswith(")) > 0")
    assert alert_conditions.prometheus_name(metrics.POD_UNSCHEDULABLE) == "kube_pod_status_unschedulable"
    with pytest.raises(ValueError, match="not a Managed Service for Prometheus metric"):
        alert_conditions.prometheus_name(metrics.DUTY_CYCLE)
