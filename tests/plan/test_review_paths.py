"""Reviews a person can read: named list items matched by name, documents in strings diffed inside, Monitoring
filters by clause, long strings shown where they differ (plan/review/paths.py, plan/review/strings.py)."""

import json

from helpers import RAY_CLUSTER, minimal_values, run
from plan.review import paths, strings
from plan.review.classify import compare
from plan.review.revisions import Side



def diffs(old, new):
    return {paths.format_path(p): (a, b) for p, a, b in paths.leaf_diffs(old, new)}


def group(name, replicas=1):
    return {"groupName": name, "replicas": replicas, "template": {"spec": {"containers": [
        {"name": "ray-worker", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": name}]}]}}}


def test_removing_the_first_named_item_is_one_removed_item():
    old = {"spec": {"workerGroupSpecs": [group("tpu"), group("cpu"), group("gpu")]}}
    new = {"spec": {"workerGroupSpecs": [group("cpu"), group("gpu")]}}
    assert diffs(old, new) == {'spec.workerGroupSpecs[groupName="tpu"]': (group("tpu"), paths.ABSENT)}


def test_a_change_inside_a_named_item_names_the_item_and_env_var():
    old = {"spec": {"workerGroupSpecs": [group("tpu"), group("cpu")]}}
    changed = group("cpu", replicas=3)
    changed["template"]["spec"]["containers"][0]["env"][0]["value"] = "2"
    new = {"spec": {"workerGroupSpecs": [group("tpu"), changed]}}
    assert diffs(old, new) == {
        'spec.workerGroupSpecs[groupName="cpu"].replicas': (1, 3),
        'spec.workerGroupSpecs[groupName="cpu"].template.spec.containers[name="ray-worker"].env[name="A"].value':
            ("1", "2")}


def test_a_new_order_of_the_same_names_is_one_change_and_positional_lists_stay_positional():
    old = {"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}
    new = {"items": [{"name": "b", "v": 2}, {"name": "a", "v": 1}]}
    assert diffs(old, new) == {"items[order]": (["a", "b"], ["b", "a"])}
    # Duplicate or missing names: matched by position as before.
    assert set(diffs({"x": [{"name": "a"}, {"name": "a"}]}, {"x": [{"name": "a"}, {"name": "b"}]})) == {
        "x[1].name"}
    assert set(diffs({"x": [1, 2]}, {"x": [2]})) == {"x[0]", "x[1]"}


def test_json_and_yaml_documents_are_diffed_inside():
    old = json.dumps({"displayName": "d", "mosaicLayout": {"tiles": [{"widget": {"title": "HBM"}}] * 2}})
    new = json.dumps({"displayName": "d", "mosaicLayout": {"tiles": [{"widget": {"title": "HBM"}},
                                                                     {"widget": {"title": "TensorCore"}}]}})
    assert diffs({"dashboardJson": old}, {"dashboardJson": new}) == {
        "dashboardJson(json).mosaicLayout.tiles[1].widget.title": ("HBM", "TensorCore")}
    serve_old = ("applications:\n- name: app\n  import_path: serve:app\n  deployments:\n  - name: D\n"
                 "    num_replicas: 1\n")
    serve_new = serve_old.replace("num_replicas: 1", "num_replicas: 2")
    assert diffs({"spec": {"serveConfigV2": serve_old}}, {"spec": {"serveConfigV2": serve_new}}) == {
        'spec.serveConfigV2(yaml).applications[name="app"].deployments[name="D"].num_replicas': (1, 2)}
    # The same document written differently still changes the input: shown whole, not hidden.
    assert diffs({"j": '{"a": 1}'}, {"j": '{"a":1}'}) == {"j": ('{"a": 1}', '{"a":1}')}
    assert paths.lookup({"j": old}, paths.parse_path("j") + (paths.Inside("json"), "displayName")) == "d"


FILTER = ('metric.type = "kubernetes.io/node/accelerator/duty_cycle" AND resource.type = "k8s_node" AND '
          'metadata.system_labels.node_pool_name = starts_with("v6e-16-") AND resource.labels.cluster_name = "ray"')


def test_monitoring_filters_are_diffed_by_clause():
    new = FILTER.replace('"k8s_node"', '"k8s_container"') + ' AND metric.labels.accelerator_id = "tpu-0"'
    assert diffs({"filter": FILTER}, {"filter": new}) == {
        "filter(clause resource.type)": ('AND resource.type = "k8s_node"', 'AND resource.type = "k8s_container"'),
        "filter(clause metric.labels.accelerator_id)": (paths.ABSENT, 'AND metric.labels.accelerator_id = "tpu-0"')}
    # Joiners inside quotes or parentheses do not split a clause.
    assert strings.clauses('metric.type = "a AND b" AND (resource.type = "x" OR resource.type = "y") AND x = 1'
                           ' AND y = 2') == ['metric.type = "a AND b"', 'AND (resource.type = "x" OR resource.type = '
                                             '"y")', "AND x = 1", "AND y = 2"]


def test_long_strings_are_shown_where_they_differ():
    old, new = "x" * 300 + "alpha" + "y" * 50, "x" * 300 + "omega" + "y" * 50
    a, b = paths.show_pair(old, new, 80)
    assert "alpha" in a and "omega" in b and a.startswith("...") and b.startswith("...")
    assert paths.show_pair("short", "other") == ('"short"', '"other"')


def test_diff_of_a_plan_removing_the_first_worker_group_shows_one_removed_group():
    groups = [{"name": "tpu", "slice": "v6e-4", "replicas": 1}, {"name": "more", "slice": "v6e-4", "replicas": 1}]
    slices = [{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "count": 2}]
    old = run(minimal_values(tpuSlices=slices, rayClusters=[{"name": "train", "workerGroups": groups}]))
    new = run(minimal_values(tpuSlices=slices, rayClusters=[{"name": "train", "workerGroups": groups[1:]}]))
    result = compare(Side("planned", old), Side("planned", new), "test", "base", "0" * 40)
    (change,) = [c for c in result.changes if c.type == RAY_CLUSTER]
    removed = [d for d in change.details if d.new is paths.ABSENT]
    assert [d.path for d in removed] == ['spec.workerGroupSpecs[groupName="tpu"]']
    assert not any("more" in d.path for d in change.details)
