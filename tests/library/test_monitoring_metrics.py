"""Every metric type, filter and grouping of the dashboards and alert policies is one data/metrics.yaml lists, with its
source; every aligner and reducer suits the series it reads (the Monitoring API's Aggregation rules).

The filters are parsed here by a reader of their own (not the builder's code): `selector=value` terms joined by AND,
as Cloud Monitoring's filter syntax writes them.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from helpers import ALERT_POLICY, DASHBOARD, ROOT, STACKS, plan_of, steps_of_type

from ray_tpu_gke import catalog
from ray_tpu_gke.catalog import metrics
from ray_tpu_gke.catalog.metrics import ObservabilityError
from ray_tpu_gke.render import alerts, dashboards, series
from ray_tpu_gke.render.series import Environment, GpuPoolTarget, SliceTarget

DATA = yaml.safe_load(metrics.METRICS_FILE.read_text())
METRICS = {m["type"]: m for m in DATA["metrics"]}
RESOURCES = DATA["resources"]

TERM = re.compile(r'^(?P<selector>metric\.type|resource\.type|resource\.labels\.\w+|metric\.labels\.\w+|'
                  r'metadata\.user_labels\."[^"]+")=(?P<value>"[^"\\]+"|monitoring\.regex\.full_match\("[^"\\]+"\))$')
GROUP = re.compile(r'^(?P<scope>resource\.label|metric\.label|metadata\.user_labels)\."(?P<key>[^"]+)"$')


def parse(filter_text: str) -> dict[str, str]:
    """{selector: value} of a filter of AND-ed terms; fails on anything else."""
    terms = {}
    for term in filter_text.split(" AND "):
        match = TERM.match(term)
        assert match, f"not a selector=value term: {term!r} in {filter_text!r}"
        assert match["selector"] not in terms, f"{match['selector']} twice in {filter_text!r}"
        terms[match["selector"]] = match["value"]
    return terms


def check_series(filter_text: str, aggregations: list[dict]) -> str:
    """The metric type of a filter, after checking every term and grouping against data/metrics.yaml."""
    terms = parse(filter_text)
    metric_type = terms.pop("metric.type").strip('"')
    assert metric_type in METRICS, f"{metric_type} is not in data/metrics.yaml"
    metric = METRICS[metric_type]
    assert terms.pop("resource.type") == f'"{metric["resource"]}"'
    resource = RESOURCES[metric["resource"]]
    for selector in terms:
        separator = ".labels." if ".labels." in selector else ".user_labels."
        scope, _, key = selector.partition(separator)
        if scope == "resource":
            assert key in resource["labels"], f"{metric['resource']} has no label {key}"
        elif scope == "metric":
            assert key in metric["labels"], f"{metric_type} has no label {key}"
        else:
            assert key.strip('"') in resource["user_labels"], f"node label {key} is not listed for {metric['resource']}"
    assert len(filter_text) <= DATA["limits"]["filter_chars"]["value"]
    for aggregation in aggregations:
        for group in aggregation.get("groupByFields", []):
            match = GROUP.match(group)
            assert match, group
            allowed = {"resource.label": resource["labels"], "metric.label": metric["labels"],
                       "metadata.user_labels": resource["user_labels"]}[match["scope"]]
            assert match["key"] in allowed, f"{metric_type} cannot be grouped by {group}"
        assert series.aggregation_problems(metrics.metric_list().metric(metric_type), aggregation) == []
    return metric_type


def dashboard_series(dashboard: dict):
    for tile in dashboard["mosaicLayout"]["tiles"]:
        for data_set in tile["widget"].get("xyChart", {}).get("dataSets", []):
            series = data_set["timeSeriesQuery"]["timeSeriesFilter"]
            yield series["filter"], [series["aggregation"]]


def policy_series(policy: dict):
    for condition in policy["conditions"]:  # a PromQL condition has no filter: test_promql_queries_name_...
        threshold = condition.get("conditionThreshold") or condition.get("conditionAbsent")
        if threshold is not None:
            yield threshold["filter"], threshold["aggregations"]


def stack_series(stack: str):
    plan = plan_of(stack)
    for step in steps_of_type(plan, DASHBOARD):
        yield from dashboard_series(json.loads(step["newState"]["inputs"]["dashboardJson"]))
    for step in steps_of_type(plan, ALERT_POLICY):
        yield from policy_series(step["newState"]["inputs"])


# A GPU pool, and both modes with Ray metrics, beside what the stacks hold: every builder's series are checked.
ENV = Environment("acme-ml-test", "ray-tpu", "test", ray_metrics=True)
GPU = GpuPoolTarget("l4", "nvidia-l4", "g2-standard-8", count=2, pools=("l4",), worker_groups=("gpu",))
GPU_AUTOPILOT = GpuPoolTarget("l4", "nvidia-l4", "g2-standard-8", node_labels=(("cloud.google.com/gke-accelerator",
                                                                                 "nvidia-l4"),))
MULTI = SliceTarget("v5p-16", catalog.resolve("v5p", "2x2x4"), "spot", 2, ("v5p-16-0", "v5p-16-1"),
                    worker_groups=("a", "b"))


def extra_series():
    autopilot = Environment("acme-ml-test", "ray-tpu", "test", autopilot=True, ray_metrics=True)
    spot = SliceTarget("v6e-8", catalog.resolve("v6e", "2x4"), "spot",
                       node_labels=(("cloud.google.com/gke-spot", "true"),
                                    ("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice"),
                                    ("cloud.google.com/gke-tpu-topology", "2x4")), worker_groups=("g",))
    for env, slices, gpus in ((ENV, [MULTI], [GPU]), (autopilot, [spot], [GPU_AUTOPILOT])):
        for dashboard in dashboards.dashboards(env, slices, gpus):
            yield from dashboard_series(dashboard)
        for spec in alerts.alert_policies(env, slices, gpus):
            yield from policy_series(spec.policy)


# --- the data file --------------------------------------------------------------------------------------------------


def test_every_entry_names_a_source_that_has_a_url():
    sources = DATA["sources"]
    for name, source in sources.items():
        assert source["url"].startswith("https://"), name
    for metric in DATA["metrics"]:
        assert metric["source"] in sources and metric.get("collected_by", metric["source"]) in sources
        assert metric["resource"] in RESOURCES
        assert metric["kind"] in ("GAUGE", "DELTA", "CUMULATIVE") and metric["value_type"] in ("BOOL", "INT64",
                                                                                               "DOUBLE", "DISTRIBUTION")
        assert isinstance(metric["labels"], list) and metric["description"]
    for name, resource in RESOURCES.items():
        assert resource["source"] in sources, name
        assert all(source in sources for source in resource["user_labels"].values())
    for name, limit in DATA["limits"].items():
        assert limit["source"] in sources and isinstance(limit["value"], int), name


def test_metric_types_are_spelled_as_their_sources_spell_them():
    for metric_type, metric in METRICS.items():
        if metric["source"] == "gke-system-metrics":
            assert metric_type.startswith("kubernetes.io/")
        elif metric["source"] == "custom-metrics":  # "custom.googleapis.com/" followed by a simple name or a path
            assert re.fullmatch(r"custom\.googleapis\.com/ray_tpu_gke/[a-z_]+", metric_type)
            assert metric["resource"] == "generic_task"
        elif metric["source"] == "kube-state-metrics":
            assert re.fullmatch(r"prometheus\.googleapis\.com/kube_[a-z_]+/gauge", metric_type)
            assert metric["resource"] == "prometheus_target"
        else:  # Managed Service for Prometheus: prometheus.googleapis.com/<Prometheus name>/<kind>
            assert re.fullmatch(r"prometheus\.googleapis\.com/ray_[a-z_]+/gauge", metric_type)
            assert metric["resource"] == "prometheus_target"


def test_launch_stages_are_the_ones_googles_list_gives():
    """Google's GKE system metric list (metrics_kubernetes) marks the node status condition BETA, the accelerator and
    node pool metrics the alerts read GA; a stage is one of the list's own words."""
    from ray_tpu_gke.catalog.metrics import NODE_CONDITION, metric_list

    assert metric_list().metric(NODE_CONDITION).launch_stage == "BETA"
    assert METRICS["kubernetes.io/node_pool/multi_host/available"]["launch_stage"] == "GA"
    assert {m.get("launch_stage") for m in METRICS.values()} <= {"GA", "BETA", "ALPHA", "EARLY_ACCESS", None}


def test_node_labels_listed_are_the_ones_slices_select():
    """Autopilot filters select a slice's nodes by the labels its pods select: all of them must be listed."""
    from ray_tpu_gke.render import manifests
    from ray_tpu_gke.spec.models import TpuSliceConfig

    listed = set(RESOURCES["k8s_node"]["user_labels"])
    for capacity, extra in (("spot", {}), ("flexStart", {}), ("onDemand", {}),
                            ("reservation", {"reservation": "projects/other-prj/reservations/r"})):
        for generation, topology in (("v6e", "4x4"), ("tpu7x", "4x4x4")):
            tpu = TpuSliceConfig(name="s", generation=generation, topology=topology, capacity=capacity,
                                 zone="us-central1-b", **extra)
            assert set(manifests.slice_node_selector(tpu, standard=False, cluster_name="c")) <= listed
    assert metrics.NODEPOOL_LABEL in listed and metrics.GPU_ACCELERATOR_LABEL in listed


# --- every filter of every stack, and of every builder ---------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_every_filter_of_the_stack_reads_listed_series(stack):
    used = {check_series(f, aggregations) for f, aggregations in stack_series(stack)}
    assert used, f"{stack} has no dashboard or alert series"


def test_every_builder_reads_listed_series_and_every_listed_metric_is_used():
    used = {check_series(f, a) for stack in STACKS for f, a in stack_series(stack)}
    used |= {check_series(f, a) for f, a in extra_series()}
    assert used == set(METRICS), f"listed but unused: {set(METRICS) - used}"


def test_filters_name_the_stack_project_and_cluster():
    for stack in STACKS:
        plan = plan_of(stack)
        cluster = next(s for s in plan["steps"] if s["newState"]["type"] == "gcp:container/cluster:Cluster")
        project, name = cluster["newState"]["inputs"]["project"], cluster["newState"]["inputs"]["name"]
        for f, _ in stack_series(stack):
            terms = parse(f)
            assert terms["resource.labels.project_id"] == f'"{project}"'
            # generic_task (the slice check's series): the cluster's name is its namespace label.
            assert f'"{name}"' in (terms.get("resource.labels.cluster_name"), terms.get("resource.labels.cluster"),
                                   terms.get("resource.labels.namespace"))


def test_promql_queries_name_the_stack_project_and_cluster_and_a_listed_metric():
    queries = 0
    for stack in STACKS:
        plan = plan_of(stack)
        cluster = next(s for s in plan["steps"] if s["newState"]["type"] == "gcp:container/cluster:Cluster")
        project, name = cluster["newState"]["inputs"]["project"], cluster["newState"]["inputs"]["name"]
        for step in steps_of_type(plan, ALERT_POLICY):
            for condition in step["newState"]["inputs"]["conditions"]:
                body = condition.get("conditionPrometheusQueryLanguage")
                if body is None:
                    continue
                assert f'project_id="{project}"' in body["query"] and f'cluster="{name}"' in body["query"]
                metric = re.search(r"\(([a-z_]+)\{", body["query"]).group(1)
                assert f"prometheus.googleapis.com/{metric}/gauge" in METRICS, metric
                queries += 1
    assert queries  # the unschedulable-pods policy of the stacks with Ray objects


# --- the builders refuse what the list does not hold -------------------------------------------------------------


def test_unknown_metric_type_is_refused_with_the_listed_ones():
    with pytest.raises(ObservabilityError, match="kubernetes.io/container/accelerator/duty_cycle.*not in "
                                                 "data/metrics.yaml; listed: kubernetes.io/node/accelerator"):
        series.series_filter(ENV, "kubernetes.io/container/accelerator/duty_cycle")


@pytest.mark.parametrize("selection, message", [
    ({"resource": {"pod_name": "x"}}, "k8s_node has no resource label 'pod_name'"),
    ({"metric": {"tpu_topology": "2x2"}}, "duty_cycle has no metric label 'tpu_topology'"),
    ({"user": {"ray-tpu-gke/slice": "x"}}, "node label 'ray-tpu-gke/slice' is not listed for k8s_node"),
    ({"user": {metrics.NODEPOOL_LABEL: 'a"b'}}, "cannot be matched in a Monitoring filter"),
])
def test_unlisted_labels_and_unquotable_values_are_refused(selection, message):
    with pytest.raises(ObservabilityError, match=re.escape(message)):
        series.series_filter(ENV, metrics.DUTY_CYCLE, **selection)


def test_groupings_and_aggregations_are_checked():
    with pytest.raises(ObservabilityError, match="cannot be grouped by metric label 'node_type'"):
        series.group_field(metrics.DUTY_CYCLE, "metric", "node_type")
    with pytest.raises(ObservabilityError, match="below 60s"):
        series.query(ENV, metrics.DUTY_CYCLE, "ALIGN_MEAN", 30)
    metric = metrics.metric_list().metric
    assert series.aggregation_problems(metric(metrics.DUTY_CYCLE), {
        "alignmentPeriod": "60s", "perSeriesAligner": "ALIGN_FRACTION_TRUE"}) == [
        "ALIGN_FRACTION_TRUE needs Boolean values; kubernetes.io/node/accelerator/duty_cycle is DOUBLE"]
    assert series.aggregation_problems(metric(metrics.MULTI_HOST_AVAILABLE), {
        "alignmentPeriod": "60s", "perSeriesAligner": "ALIGN_MEAN", "crossSeriesReducer": "REDUCE_MEAN"}) == [
        "ALIGN_MEAN needs numeric values; kubernetes.io/node_pool/multi_host/available is BOOL"]
    assert series.aggregation_problems(metric(metrics.INTERRUPTIONS), {
        "perSeriesAligner": "ALIGN_RATE", "crossSeriesReducer": "REDUCE_SUM"}) == [
        "ALIGN_RATE needs an alignmentPeriod in seconds (given None)",
        "ALIGN_RATE needs a CUMULATIVE or DELTA metric; kubernetes.io/node_pool/interruption_count is GAUGE"]


def test_several_values_are_one_full_match_and_a_long_filter_is_refused():
    f = series.series_filter(ENV, metrics.DUTY_CYCLE,
                                    user={metrics.NODEPOOL_LABEL: ["a-0", "a-1", "a.b"]})
    assert f.endswith('metadata.user_labels."cloud.google.com/gke-nodepool"='
                      'monitoring.regex.full_match("a-0|a-1|a[.]b")')
    pools = [f"slice-with-a-long-name-{i}" for i in range(100)]
    with pytest.raises(ObservabilityError, match=r"more than the 2048 Cloud Monitoring accepts"):
        series.series_filter(ENV, metrics.DUTY_CYCLE, user={metrics.NODEPOOL_LABEL: pools})


def test_runbook_has_a_section_for_every_alert():
    text = (ROOT / "docs" / "operations.md").read_text()
    headings = set(re.findall(r"^###? (.+)$", text, re.M))
    for kind, (title, _, _) in alerts.ALERTS.items():
        assert title in headings, f"docs/operations.md has no section {title!r} ({kind})"
