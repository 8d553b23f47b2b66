"""The slice check in the plan (#24.1, #24.2): prod has the CronJob in the workloads image, RBAC that only reads, a
Google identity that may only write metrics, the alert policy on the series the check writes, and dashboard tiles;
stacks without an image for it go without, unless it is asked for explicitly."""

from __future__ import annotations

import json

import pytest
from helpers import ALERT_POLICY, CRONJOB, minimal_values, plan_of, run, steps_of_type

from ray_tpu_gke.catalog import metrics
from ray_tpu_gke.render import health
from ray_tpu_gke.spec.problems import ConfigError

RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
WORKLOADS = "us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/workloads-tpu:2.60.0"


def inputs(plan: dict, type_: str) -> list[dict]:
    return [s["newState"]["inputs"] for s in steps_of_type(plan, type_)]


def test_prod_runs_the_check_every_few_minutes_in_the_workloads_image():
    plan = plan_of("prod")
    (cron,) = inputs(plan, CRONJOB)
    spec = cron["spec"]
    assert (cron["metadata"]["namespace"], spec["schedule"], spec["concurrencyPolicy"]) == (
        "slice-health", "*/5 * * * *", "Forbid")
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "us-central1-docker.pkg.dev/acme-ml-prod/ray-tpu-gke/workloads-tpu:2.60.0"
    assert container["command"][:3] == ["python", "-m", "workloads.slice_health"]
    assert pod["serviceAccountName"] == "slice-health" and pod["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "system"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert spec["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 300  # ends before the next run is due


def test_the_config_map_is_what_the_check_reads_and_names_every_pool_and_tpu_group():
    plan = plan_of("prod")
    (config_map,) = [m for m in inputs(plan, "kubernetes:core/v1:ConfigMap") if m["metadata"]["name"] == health.NAME]
    config = json.loads(config_map["data"]["config.json"])
    pools = [i["name"] for i in inputs(plan, "gcp:container/nodePool:NodePool")
             if i["name"] != "system" and not i["name"].startswith(("l4", "cpu"))]
    assert sorted(p["name"] for p in config["pools"]) == sorted(pools)
    groups = {(o["namespace"], o["name"]): [g["group"] for g in o["groups"]] for o in config["objects"]}
    assert groups[("training", "train")] == ["v6e-64"]
    assert (config["project"], config["cluster"]) == ("acme-ml-prod", "ray-tpu-prod")


def test_rbac_only_reads_what_the_check_reads():
    plan = plan_of("prod")
    roles = inputs(plan, RBAC + "ClusterRole") + inputs(plan, RBAC + "Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert rule["verbs"] == ["get", "list", "watch"], role["metadata"]
    (cluster_role,) = inputs(plan, RBAC + "ClusterRole")
    assert cluster_role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]
    namespaced = {r["metadata"]["namespace"]: r["rules"] for r in inputs(plan, RBAC + "Role")}
    assert set(namespaced) == {"training", "serving"}  # the Ray namespaces, nothing else
    for rules in namespaced.values():
        assert {res for r in rules for res in r["resources"]} == {"pods", "rayclusters", "rayservices", "rayjobs"}
    bindings = inputs(plan, RBAC + "ClusterRoleBinding") + inputs(plan, RBAC + "RoleBinding")
    assert len(bindings) == 3
    assert all(b["subjects"] == [{"kind": "ServiceAccount", "name": "slice-health", "namespace": "slice-health"}]
               for b in bindings)


def test_the_google_identity_may_only_write_metrics():
    plan = plan_of("prod")
    accounts = {i["accountId"]: i for i in inputs(plan, "gcp:serviceaccount/account:Account")}
    assert "ray-tpu-prod-health" in accounts
    member = "serviceAccount:ray-tpu-prod-health@acme-ml-prod.iam.gserviceaccount.com"
    roles = [i["role"] for i in inputs(plan, "gcp:projects/iAMMember:IAMMember") if "health" in str(i.get("member"))
             or i.get("member") is None]
    (writer,) = [s for s in steps_of_type(plan, "gcp:projects/iAMMember:IAMMember")
                 if s["newState"]["name"] == "ray-tpu-prod-health-metric-writer"]
    assert writer["newState"]["inputs"]["role"] == "roles/monitoring.metricWriter"
    assert "roles/monitoring.metricWriter" in roles
    (wi,) = [i for i in inputs(plan, "gcp:serviceaccount/iAMMember:IAMMember")
             if i["member"].endswith("[slice-health/slice-health]")]
    assert wi["role"] == "roles/iam.workloadIdentityUser"
    (ksa,) = [i for i in inputs(plan, "kubernetes:core/v1:ServiceAccount") if i["metadata"]["name"] == "slice-health"]
    assert ksa["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": member.split(":", 1)[1]}
    descriptors = {i["type"]: i for i in inputs(plan, "gcp:monitoring/metricDescriptor:MetricDescriptor")}
    assert set(descriptors) == {metrics.SLICE_HEALTHY, metrics.RAY_OBJECT_READY}
    assert {label["key"] for label in descriptors[metrics.SLICE_HEALTHY]["labels"]} == {"entry", "slice", "problem"}


def test_the_alert_reads_the_checks_metric_for_the_configured_time_and_names_slice_and_problem():
    values = minimal_values(monitoring={"sliceHealth": {"alertAfterMinutes": 25}})
    values["ray-tpu-gke:rayClusters"][0]["image"] = WORKLOADS
    policy = next(p for p in inputs(run(values), ALERT_POLICY) if p["userLabels"]["alert"] == "slice-health")
    wrong, silent = policy["conditions"]
    threshold = wrong["conditionThreshold"]
    assert f'metric.type="{metrics.SLICE_HEALTHY}"' in threshold["filter"]
    assert 'resource.labels.job="slice-health"' in threshold["filter"]
    # 25 minutes in whole 10-minute windows (two runs of the default */5 schedule each): 30
    assert (threshold["comparison"], threshold["thresholdValue"], threshold["duration"]) == ("COMPARISON_LT", 1,
                                                                                            "1800s")
    assert threshold["aggregations"][0]["groupByFields"] == [
        'metric.label."entry"', 'metric.label."slice"', 'metric.label."problem"']
    assert silent["conditionAbsent"]["duration"] == "3600s"
    content = policy["documentation"]["content"]
    assert "${metric.label.slice}" in content and "${metric.label.problem}" in content


def test_a_stack_on_the_default_image_goes_without_and_asking_for_it_names_the_key():
    plan = run(minimal_values())  # rayproject/ray: no workloads package to run the check
    assert inputs(plan, CRONJOB) == []
    assert not [p for p in inputs(plan, ALERT_POLICY) if p["userLabels"]["alert"] == "slice-health"]
    with pytest.raises(ConfigError, match=r"ray-tpu-gke:monitoring\.sliceHealth\.image: required"):
        run(minimal_values(monitoring={"sliceHealth": {"enabled": True}}))
    plan = run(minimal_values(monitoring={"sliceHealth": {"enabled": True, "image": WORKLOADS}}))
    (cron,) = inputs(plan, CRONJOB)
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] == WORKLOADS


@pytest.mark.parametrize("health_config, message", [
    ({"schedule": "every 5 minutes"}, "five fields"),
    ({"schedule": "*/0 * * * *"}, "a step is at least 1"),  # robfig/cron takes */61 (minute 0 hourly), not */0
    ({"schedule": "60 * * * *"}, "above the minute's maximum 59"),
    ({"schedule": "*/10 * * * *", "alertAfterMinutes": 15}, "shorter than two runs"),
    ({"alertAfterMinutes": 2}, "greater than or equal to 5"),
])
def test_bad_slice_health_settings_are_refused_with_their_key_path(health_config, message):
    with pytest.raises(ConfigError) as caught:
        run(minimal_values(monitoring={"sliceHealth": health_config}))
    assert any(str(p).startswith("ray-tpu-gke:monitoring.sliceHealth") and message in str(p)
               for p in caught.value.problems), caught.value.problems


def test_autopilot_ironwood_monitoring_selects_the_workload_policy_of_the_cluster():
    from ray_tpu_gke.resources.monitoring import _slice_target
    from ray_tpu_gke.spec.models import TpuSliceConfig

    iw = TpuSliceConfig(name="iw-16", generation="tpu7x", topology="2x2x4")
    target = _slice_target(iw, None, [], "autopilot", "ray-tpu")
    assert ("cloud.google.com/placement-policy-name", "ray-tpu-iw-16") in target.node_labels


def test_autopilot_ironwood_pods_policy_and_filters_share_one_workload_policy_name():
    values = minimal_values(
        cluster={"name": "ray-ap", "mode": "autopilot", "location": "us-central1", "deletionProtection": False},
        tpuSlices=[{"name": "iw-64", "generation": "tpu7x", "topology": "4x4x4", "zone": "us-central1-c"}],
        rayClusters=[{"name": "train", "image": "us-central1-docker.pkg.dev/acme-ml-test/ray-tpu-gke/"
                                                 "workloads-tpu:2.56.0", "rayVersion": "2.56.0",
                      "workerGroups": [{"name": "iw", "slice": "iw-64"}]}])
    values["gcp:region"] = "us-central1"
    plan = run(values)
    (policy,) = inputs(plan, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy["name"] == "ray-ap-iw-64" and policy["workloadPolicy"]["type"] == "HIGH_THROUGHPUT"
    (ray,) = inputs(plan, "kubernetes:ray.io/v1:RayCluster")
    selector = ray["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/placement-policy-name"] == "ray-ap-iw-64"
    dashboard = inputs(plan, "gcp:monitoring/dashboard:Dashboard")[0]["dashboardJson"]
    assert 'metadata.user_labels.\\"cloud.google.com/placement-policy-name\\"=\\"ray-ap-iw-64\\"' in dashboard


def test_the_workload_policy_helper_refuses_what_needs_none():
    from ray_tpu_gke.resources.workload_policy import ironwood_workload_policy

    with pytest.raises(ValueError, match="not a multi-host Ironwood slice"):
        ironwood_workload_policy("ray-tpu", {"name": "v6e-16", "generation": "v6e", "topology": "4x4"},
                                 "acme-ml-test", "us-east5")
