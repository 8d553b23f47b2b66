"""The dashboards are what the Dashboards API accepts, and show one row per slice entry.

DASHBOARD_SCHEMA is written from the API reference: https://cloud.google.com/monitoring/api/ref_v3/rest/v1/projects.dashboards
(Dashboard, MosaicLayout, Tile, Widget, XyChart, DataSet, TimeSeriesQuery, TimeSeriesFilter, Aggregation, Threshold,
Axis, ChartOptions, Text, CollapsibleGroup) and the protos it is generated from (googleapis/googleapis
google/monitoring/dashboard/v1: dashboard.proto, layouts.proto, widget.proto, xychart.proto, metrics.proto,
common.proto, text.proto, collapsible_group.proto). Closed objects: a key the API does not define is an error, so a
misspelt field fails here rather than being dropped by the API. What a JSON schema cannot say (tiles inside the grid,
charts inside their row's group, no overlaps) is checked after it.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from helpers import DASHBOARD, STACKS, config_of, plan_of, run, steps_of_type

from ray_tpu_gke import catalog
from ray_tpu_gke.catalog import metrics
from ray_tpu_gke.render import dashboards
from ray_tpu_gke.render.series import Environment, GpuPoolTarget, SliceTarget


DURATION = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]{1,9})?s$"}  # google.protobuf.Duration in JSON
ALIGNERS = ["ALIGN_NONE", "ALIGN_DELTA", "ALIGN_RATE", "ALIGN_INTERPOLATE", "ALIGN_NEXT_OLDER", "ALIGN_MIN",
            "ALIGN_MAX", "ALIGN_MEAN", "ALIGN_COUNT", "ALIGN_SUM", "ALIGN_STDDEV", "ALIGN_COUNT_TRUE",
            "ALIGN_COUNT_FALSE", "ALIGN_FRACTION_TRUE", "ALIGN_PERCENTILE_99", "ALIGN_PERCENTILE_95",
            "ALIGN_PERCENTILE_50", "ALIGN_PERCENTILE_05", "ALIGN_PERCENT_CHANGE"]
REDUCERS = ["REDUCE_NONE", "REDUCE_MEAN", "REDUCE_MIN", "REDUCE_MAX", "REDUCE_SUM", "REDUCE_STDDEV", "REDUCE_COUNT",
            "REDUCE_COUNT_TRUE", "REDUCE_COUNT_FALSE", "REDUCE_FRACTION_TRUE", "REDUCE_PERCENTILE_99",
            "REDUCE_PERCENTILE_95", "REDUCE_PERCENTILE_50", "REDUCE_PERCENTILE_05"]
WIDGET_CONTENTS = ["xyChart", "scorecard", "text", "blank", "alertChart", "timeSeriesTable", "collapsibleGroup",
                   "logsPanel", "incidentList", "pieChart", "errorReportingPanel", "sectionHeader", "singleViewGroup",
                   "filterControl", "treemap"]


def _closed(properties: dict, required: tuple = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def _exactly_one(keys: list[str]) -> dict:
    return {"oneOf": [{"required": [k]} for k in keys]}


AGGREGATION = _closed({
    "alignmentPeriod": DURATION,  # "The value must be at least 60 seconds" (checked below: not a schema matter)
    "perSeriesAligner": {"enum": ALIGNERS},
    "crossSeriesReducer": {"enum": REDUCERS},
    "groupByFields": {"type": "array", "items": {"type": "string", "minLength": 1}},
})
TIME_SERIES_FILTER = _closed({
    "filter": {"type": "string", "minLength": 1},
    "aggregation": AGGREGATION,
    "secondaryAggregation": AGGREGATION,
    "pickTimeSeriesFilter": {"type": "object"},
    "statisticalTimeSeriesFilter": {"type": "object"},
}, required=("filter",))
TIME_SERIES_QUERY = {
    **_closed({
        "timeSeriesFilter": TIME_SERIES_FILTER,
        "timeSeriesFilterRatio": {"type": "object"},
        "timeSeriesQueryLanguage": {"type": "string"},
        "prometheusQuery": {"type": "string"},
        "unitOverride": {"type": "string"},
        "outputFullDuration": {"type": "boolean"},
    }),
    # oneof source in metrics.proto
    **_exactly_one(["timeSeriesFilter", "timeSeriesFilterRatio", "timeSeriesQueryLanguage", "prometheusQuery"]),
}
DATA_SET = _closed({
    "timeSeriesQuery": TIME_SERIES_QUERY,
    "plotType": {"enum": ["PLOT_TYPE_UNSPECIFIED", "LINE", "STACKED_AREA", "STACKED_BAR", "HEATMAP"]},
    "legendTemplate": {"type": "string"},
    "minAlignmentPeriod": DURATION,
    "targetAxis": {"enum": ["TARGET_AXIS_UNSPECIFIED", "Y1", "Y2"]},
    "breakdowns": {"type": "array"},
    "dimensions": {"type": "array"},
    "measures": {"type": "array"},
    "sort": {"type": "array"},
}, required=("timeSeriesQuery",))
AXIS = _closed({"label": {"type": "string"}, "scale": {"enum": ["SCALE_UNSPECIFIED", "LINEAR", "LOG10"]}})
# Threshold: "Color is not allowed in a XyChart", "Direction is not allowed in a XyChart" (metrics.proto).
XY_THRESHOLD = _closed({"label": {"type": "string"}, "value": {"type": "number"},
                        "targetAxis": {"enum": ["TARGET_AXIS_UNSPECIFIED", "Y1", "Y2"]}}, required=("value",))
XY_CHART = _closed({
    "dataSets": {"type": "array", "minItems": 1, "items": DATA_SET},
    "timeshiftDuration": DURATION,
    "thresholds": {"type": "array", "items": XY_THRESHOLD},
    "xAxis": AXIS, "yAxis": AXIS, "y2Axis": AXIS,
    "chartOptions": _closed({"mode": {"enum": ["MODE_UNSPECIFIED", "COLOR", "X_RAY", "STATS"]},
                             "displayHorizontal": {"type": "boolean"}}),
}, required=("dataSets",))
TEXT = _closed({"content": {"type": "string"}, "format": {"enum": ["FORMAT_UNSPECIFIED", "MARKDOWN", "RAW"]},
                "style": {"type": "object"}})
COLLAPSIBLE_GROUP = _closed({"collapsed": {"type": "boolean"}})
WIDGET = {
    **_closed({"title": {"type": "string"}, "id": {"type": "string"}, "visibilityCondition": {"type": "object"},
               "xyChart": XY_CHART, "text": TEXT, "collapsibleGroup": COLLAPSIBLE_GROUP,
               **{k: {"type": "object"} for k in WIDGET_CONTENTS if k not in ("xyChart", "text", "collapsibleGroup")}}),
    **_exactly_one(WIDGET_CONTENTS),  # oneof content in widget.proto
}
TILE = _closed({
    "xPos": {"type": "integer", "minimum": 0},  # "x_pos cannot be negative"
    "yPos": {"type": "integer", "minimum": 0},
    "width": {"type": "integer", "minimum": 1},  # "Tiles must have a minimum width of 1"
    "height": {"type": "integer", "minimum": 1},
    "widget": WIDGET,
}, required=("widget", "width", "height"))
DASHBOARD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **_closed({
        "name": {"type": "string"},
        "displayName": {"type": "string", "minLength": 1},  # Required
        "etag": {"type": "string"},
        "mosaicLayout": _closed({"columns": {"type": "integer", "minimum": 1, "maximum": 48},  # between 1 and 48
                                 "tiles": {"type": "array", "items": TILE}}, required=("columns", "tiles")),
        "gridLayout": {"type": "object"},
        "rowLayout": {"type": "object"},
        "columnLayout": {"type": "object"},
        "dashboardFilters": {"type": "array"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object"},
    }, required=("displayName",)),
    **_exactly_one(["gridLayout", "mosaicLayout", "rowLayout", "columnLayout"]),  # oneof layout
}
VALIDATOR = jsonschema.Draft202012Validator(DASHBOARD_SCHEMA)


def schema_errors(dashboard: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(dashboard)]


def layout_errors(dashboard: dict) -> list[str]:
    """What the API reference says in prose: tiles inside the columns, no two overlapping; and what this project
    promises: every chart inside exactly one row group, the header on top."""
    errors = []
    columns = dashboard["mosaicLayout"]["columns"]
    tiles = dashboard["mosaicLayout"]["tiles"]
    def box(t: dict) -> tuple[int, int, int, int]:
        x, y = t.get("xPos", 0), t.get("yPos", 0)
        return x, y, x + t["width"], y + t["height"]

    for t in tiles:
        if box(t)[2] > columns:
            errors.append(f"{t['widget'].get('title')}: beyond column {columns}")
    groups = [box(t) for t in tiles if "collapsibleGroup" in t["widget"]]
    others = [t for t in tiles if "collapsibleGroup" not in t["widget"]]
    overlap = lambda a, b: a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]  # noqa: E731
    for i, a in enumerate(others):
        for b in others[i + 1:]:
            if overlap(box(a), box(b)):
                errors.append(f"{a['widget'].get('title')} overlaps {b['widget'].get('title')}")
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            if overlap(a, b):
                errors.append(f"row groups {a} and {b} overlap")
    for t in others:
        x0, y0, x1, y1 = box(t)
        inside = [g for g in groups if g[0] <= x0 and x1 <= g[2] and g[1] <= y0 and y1 <= g[3]]
        if "xyChart" in t["widget"] and len(inside) != 1:
            errors.append(f"chart {t['widget']['title']} is inside {len(inside)} row groups")
        if "text" in t["widget"] and (inside or box(t)[1] != 0):
            errors.append("the header is not alone at the top")
    for t in tiles:
        for data_set in t["widget"].get("xyChart", {}).get("dataSets", []):
            aggregation = data_set["timeSeriesQuery"]["timeSeriesFilter"].get("aggregation", {})
            period = aggregation.get("alignmentPeriod", "60s")
            if float(period[:-1]) < 60:
                errors.append(f"{t['widget']['title']}: alignmentPeriod {period} is under 60s")
    if len(tiles) > metrics.limit("widgets_per_dashboard"):
        errors.append(f"{len(tiles)} widgets")
    return errors


def dashboards_of(plan: dict) -> list[dict]:
    return [json.loads(s["newState"]["inputs"]["dashboardJson"]) for s in steps_of_type(plan, DASHBOARD)]


def rows(dashboard: dict) -> dict[str, list[dict]]:
    """Row title -> the charts inside it."""
    tiles = dashboard["mosaicLayout"]["tiles"]
    out = {}
    for g in (t for t in tiles if "collapsibleGroup" in t["widget"]):
        # The API leaves out a position of 0 (proto3 default), and so does the builder (#22.7).
        top = g.get("yPos", 0)
        out[g["widget"]["title"]] = [t["widget"] for t in tiles if "xyChart" in t["widget"]
                                     and top <= t.get("yPos", 0) < top + g["height"]]
    return out


def metric_types(charts: list[dict]) -> set[str]:
    return {d["timeSeriesQuery"]["timeSeriesFilter"]["filter"].split('"')[1]
            for c in charts for d in c["xyChart"]["dataSets"]}


# --- every stack ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_has_one_dashboard_that_the_api_accepts(stack):
    (dashboard,) = dashboards_of(plan_of(stack))
    assert schema_errors(dashboard) == []
    assert layout_errors(dashboard) == []


@pytest.mark.parametrize("stack", STACKS)
def test_one_row_per_slice_entry_with_its_charts(stack):
    config = config_of(stack)
    (dashboard,) = dashboards_of(plan_of(stack))
    by_title = rows(dashboard)
    slice_rows = [title for title in by_title if title.startswith("TPU slice ")]
    assert [t.split(":")[0] for t in slice_rows] == [f"TPU slice {s.name}" for s in config.tpu_slices]
    for s, title in zip(config.tpu_slices, slice_rows):
        types = metric_types(by_title[title])
        expected = {metrics.NODE_CONDITION, metrics.DUTY_CYCLE, metrics.TENSORCORE,
                    metrics.HBM_BANDWIDTH, metrics.HBM_USED, metrics.HBM_TOTAL}
        if config.standard:
            expected.add(metrics.INTERRUPTIONS)
            if s.shape.multi_host:  # GKE's own series of multi-host pools
                expected |= {metrics.MULTI_HOST_AVAILABLE, metrics.NODE_POOL_STATUS, metrics.STARTUP_DURATION,
                             metrics.TIMES_TO_RECOVER, metrics.TIMES_BETWEEN_INTERRUPTIONS}
        if config.monitoring.slice_health.enabled:  # every committed stack runs the in-cluster slice check
            expected.add(metrics.SLICE_HEALTHY)
        groups = [g for o in config.ray_objects for g in o.worker_groups if g.slice == s.name]
        if config.cluster.ray_operator.monitoring and groups:
            expected |= {metrics.RAY_ACTIVE_NODES, metrics.RAY_PENDING_NODES}
        assert types == expected, title
        ready = next(c for c in by_title[title] if c["title"].startswith("Ready hosts"))
        assert ready["xyChart"]["thresholds"][0]["value"] == s.shape.hosts
        duty = next(c for c in by_title[title] if c["title"] == "TPU duty cycle (%)")
        assert duty["xyChart"]["thresholds"][0]["value"] == config.monitoring.idle_duty_cycle_percent
    ray = [t for t in by_title if t.startswith("Ray clusters")]
    assert len(ray) == (1 if config.cluster.ray_operator.monitoring else 0)
    pools_row = [t for t in by_title if t.startswith("Node pools of the cluster")]
    assert len(pools_row) == (0 if config.standard else 1)


def test_standard_rows_name_the_pools_and_autopilot_rows_the_selected_labels():
    (prod,) = dashboards_of(plan_of("prod"))
    v6e_64 = next(charts for title, charts in rows(prod).items() if title.startswith("TPU slice v6e-64:"))
    filters = [d["timeSeriesQuery"]["timeSeriesFilter"]["filter"] for c in v6e_64 for d in c["xyChart"]["dataSets"]]
    node = [f for f in filters if 'resource.type="k8s_node"' in f]
    assert node and all('metadata.user_labels."cloud.google.com/gke-nodepool"='
                        'monitoring.regex.full_match("v6e-64-0|v6e-64-1")' in f for f in node)
    pool = [f for f in filters if 'resource.type="k8s_node_pool"' in f]
    assert pool and all('resource.labels.node_pool_name=monitoring.regex.full_match("v6e-64-0|v6e-64-1")' in f
                        for f in pool)

    (sandbox,) = dashboards_of(plan_of("sandbox"))
    flex = next(charts for title, charts in rows(sandbox).items() if title.startswith("TPU slice v6e-16-flex:"))
    for chart in flex:
        for d in chart["xyChart"]["dataSets"]:
            f = d["timeSeriesQuery"]["timeSeriesFilter"]["filter"]
            if 'resource.type="generic_task"' in f:  # the slice check's series name their entry
                assert 'metric.labels.entry="v6e-16-flex"' in f
                continue
            assert 'metadata.user_labels."cloud.google.com/compute-class"="v6e-16-flex-flex-start"' in f
            assert 'metadata.user_labels."cloud.google.com/gke-tpu-topology"="4x4"' in f
            assert "gke-nodepool\"=" not in f


def test_dashboard_json_in_the_plan_is_the_builder_output_with_sorted_keys():
    (step,) = steps_of_type(plan_of("staging"), DASHBOARD)
    text = step["newState"]["inputs"]["dashboardJson"]
    assert text == dashboards.dashboard_json(json.loads(text))
    assert step["newState"]["inputs"]["project"] == "acme-ml-staging"


# --- the schema means something -------------------------------------------------------------------------------------


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d["mosaicLayout"].update(columns=49), "49 is greater than the maximum of 48"),
    (lambda d: d.pop("displayName"), "'displayName' is a required property"),
    (lambda d: d.update(gridLayout={}), "is valid under each of"),
    (lambda d: next(t["widget"]["xyChart"]["thresholds"][0] for t in d["mosaicLayout"]["tiles"]
                    if "thresholds" in t["widget"].get("xyChart", {})).update(color="RED"),
     "Additional properties are not allowed ('color' was unexpected)"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]
     ["timeSeriesFilter"].pop("filter"), "'filter' is a required property"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]
     ["timeSeriesFilter"]["aggregation"].update(perSeriesAligner="ALIGN_AVERAGE"), "'ALIGN_AVERAGE' is not one of"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]
     ["timeSeriesFilter"]["aggregation"].update(alignmentPeriod="1m"), "'1m' does not match"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"].update(text={"content": "x"}), "is valid under each of"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"]["xyChart"].update(dataSets=[]), "should be non-empty"),
    (lambda d: d["mosaicLayout"]["tiles"][2].update(xPos=-1), "-1 is less than the minimum of 0"),
    (lambda d: d["mosaicLayout"]["tiles"][2]["widget"]["xyChart"].update(yAxes={}), "'yAxes' was unexpected"),
])
def test_schema_rejects_what_the_api_rejects(break_it, message):
    (dashboard,) = dashboards_of(plan_of("staging"))
    assert "xyChart" in dashboard["mosaicLayout"]["tiles"][2]["widget"]
    broken = copy.deepcopy(dashboard)
    break_it(broken)
    errors = schema_errors(broken)
    assert any(message in e for e in errors), errors


def test_layout_check_finds_overlaps_and_strays():
    (dashboard,) = dashboards_of(plan_of("staging"))
    tiles = dashboard["mosaicLayout"]["tiles"]
    moved = copy.deepcopy(dashboard)
    moved["mosaicLayout"]["tiles"][3]["xPos"] = tiles[2].get("xPos", 0)
    assert any("overlaps" in e for e in layout_errors(moved))
    wide = copy.deepcopy(dashboard)
    wide["mosaicLayout"]["tiles"][2]["xPos"] = 40
    assert any("beyond column 48" in e for e in layout_errors(wide))


# --- large stacks and GPU pools ----------------------------------------------------------------------------------


def test_a_large_stack_splits_its_rows_over_dashboards_each_within_the_widget_limit():
    from benchmarks import synthetic

    values = synthetic.values(24)
    plan = run(values)
    dashboards = dashboards_of(plan)
    assert len(dashboards) > 1
    names = [d["displayName"] for d in dashboards]
    assert names[0].endswith(f"TPU slices 1/{len(dashboards)}") and len(set(names)) == len(names)
    titles = []
    for d in dashboards:
        assert schema_errors(d) == [] and layout_errors(d) == []
        titles += [t for t in rows(d) if t.startswith("TPU slice ")]
    assert [t.split(":")[0] for t in titles] == [f"TPU slice {s['name']}" for s in values["ray-tpu-gke:tpuSlices"]]
    cluster = values["ray-tpu-gke:cluster"]["name"]
    assert [s["newState"]["name"] for s in steps_of_type(plan, DASHBOARD)] == \
        [f"{cluster}-slices"] + [f"{cluster}-slices-{n}" for n in range(2, len(dashboards) + 1)]


def test_a_gpu_pool_row_is_one_more_row():
    env = Environment("acme-ml-test", "ray-tpu", "test", ray_metrics=True)
    tpu = SliceTarget("v6e-8", catalog.resolve("v6e", "2x4"), pools=("v6e-8-0",), worker_groups=("tpu",))
    gpu = GpuPoolTarget("l4", "nvidia-l4", "g2-standard-8", count=2, pools=("l4",), worker_groups=("gpu",))
    (dashboard,) = dashboards.dashboards(env, [tpu], [gpu])
    assert schema_errors(dashboard) == [] and layout_errors(dashboard) == []
    by_title = rows(dashboard)
    assert list(by_title)[-1] == "GPU pool l4: 2 x g2-standard-8 (nvidia-l4), onDemand"
    assert metric_types(by_title[list(by_title)[-1]]) == {
        metrics.NODE_CONDITION, metrics.DUTY_CYCLE, metrics.HBM_USED, metrics.HBM_TOTAL,
        metrics.INTERRUPTIONS, metrics.RAY_ACTIVE_NODES, metrics.RAY_PENDING_NODES}
    assert dashboards.gpu_pool_row(env, gpu).widgets == 6


# --- what the API returns (#22.7) ------------------------------------------------------------------------------------


def default_leaves(value, path=""):
    """Every field at its proto3 default (0, false, "", [], {}), which the Monitoring API leaves out of what it
    returns; collapsibleGroup {} is the widget itself and stays."""
    if isinstance(value, dict):
        for key, item in value.items():
            if item in (0, False, "", [], {}) and key != "collapsibleGroup":
                yield f"{path}.{key}"
            yield from default_leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from default_leaves(item, f"{path}[{i}]")


def remove_computed_keys(old, new):
    """terraform-provider-google resource_monitoring_dashboard.go removeComputedKeys, as read: drop from the state
    (what the API returned) every key the config does not have, recursively and list element by element."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: remove_computed_keys(v, new[k]) for k, v in old.items() if k in new}
    if isinstance(old, list) and isinstance(new, list):
        return [remove_computed_keys(o, n) if i < len(new) else o for i, (o, n) in
                enumerate(zip(old, new + [None] * (len(old) - len(new))))]
    return old


def api_read_back(config: dict) -> dict:
    """What the API returns for a dashboard: defaults left out, its own fields added."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k == "collapsibleGroup" or v not in (0, False, "", [], {})}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    returned = strip(config)
    returned.update(name="projects/1/dashboards/abc", etag="0123")
    return returned


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_dashboards_hold_no_default_the_api_would_leave_out(stack):
    for dashboard in dashboards_of(plan_of(stack)):
        assert list(default_leaves(dashboard)) == []
        assert dashboards.prune(dashboard) == dashboard
        # The provider's diff of the API's read-back against the config: equal, so no perpetual change.
        assert remove_computed_keys(api_read_back(dashboard), dashboard) == dashboard


def test_the_old_layout_would_always_differ():
    (dashboard,) = dashboards_of(plan_of("staging"))
    old = copy.deepcopy(dashboard)
    old["mosaicLayout"]["tiles"][0]["xPos"] = 0
    next(t for t in old["mosaicLayout"]["tiles"] if "collapsibleGroup" in t["widget"])["widget"]["collapsibleGroup"] = {
        "collapsed": False}
    assert list(default_leaves(old))
    assert remove_computed_keys(api_read_back(old), old) != old

