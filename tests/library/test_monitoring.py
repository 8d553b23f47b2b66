"""SliceMonitoring: each stack's plan holds its dashboard and alert policies, with the thresholds and node pools of its
config; bad arguments fail with ConfigError before anything is registered; the review diff knows the new resources.
The policy pack's rule over them: tests/plan/test_monitoring_policy.py."""

from __future__ import annotations

import json
import textwrap

import pytest
from helpers import ALERT_POLICY, DASHBOARD, STACKS, config_of, minimal_values, plan_of, prod_plan, run, steps_of_type

from plan import harness, stackfile
from plan.review import replacement
from ray_tpu_gke.spec.models import GpuPoolConfig

COMPONENT = "ray-tpu-gke:index:SliceMonitoring"


def policies(plan: dict) -> dict[str, dict]:
    return {s["newState"]["name"]: s["newState"] for s in steps_of_type(plan, ALERT_POLICY)}


def threshold(policy: dict, index: int = 0) -> dict:
    return policy["inputs"]["conditions"][index]["conditionThreshold"]


def pool_match(pools: list[str]) -> str:
    return f'"{pools[0]}"' if len(pools) == 1 else f'monitoring.regex.full_match("{"|".join(pools)}")'


# --- the plans of the committed stacks --------------------------------------------------------------------------------

EXPECTED = {
    "dev": ["v6e-4-idle", "v6e-4-unavailable", "v6e-4-interruptions", "slice-health", "ray-not-ready",
            "pending-pods"],
    "staging": ["v6e-16-idle-0", "v6e-16-unavailable", "v6e-16-interruptions", "slice-health", "ray-not-ready",
                "rayjob-failed", "pending-pods"],
    "prod": ["v6e-64-idle-0", "v6e-64-idle-1", "v6e-64-unavailable", "v6e-64-interruptions",
             "ironwood-64-idle-0", "ironwood-64-unavailable", "ironwood-64-interruptions",
             "v6e-8-serve-idle", "v6e-8-serve-unavailable", "v6e-8-serve-interruptions", "slice-health",
             "ray-not-ready", "rayjob-failed", "pending-pods"],
}


def expected_keys(config) -> list[str]:
    """The policies a stack's config asks for: per slice entry idle (per slice for a multi-host entry in Standard
    mode), not whole or not available, and, where the pools are named, repeated interruptions; in Autopilot one
    interruption policy for the cluster's node pools."""
    keys = []
    for s in config.tpu_slices:
        if config.standard and s.shape.multi_host:
            keys += [f"{s.name}-idle-{i}" for i in range(s.count)]
        else:
            keys.append(f"{s.name}-idle")
        keys.append(f"{s.name}-unavailable")
        if config.standard:
            keys.append(f"{s.name}-interruptions")
    for pool in config.gpu_pools:  # a GPU pool: idle GPUs, and in Standard mode its interruptions
        keys.append(f"{pool.name}-gpu-idle")
        if config.standard:
            keys.append(f"{pool.name}-gpu-interruptions")
    # The stack's own: the in-cluster slice check (every committed stack runs it) and the Ray objects it reports on,
    # and unschedulable pods in the Ray namespaces.
    kinds = {type(o).__name__.removesuffix("Config") for o in config.ray_objects}
    if config.tpu_slices and config.monitoring.slice_health.enabled:
        keys.append("slice-health")
        keys += ["ray-not-ready"] if kinds & {"RayCluster", "RayService"} else []
        keys += ["rayjob-failed"] if "RayJob" in kinds else []
    if config.namespaces:
        keys.append("pending-pods")
    if not config.standard and (config.tpu_slices or config.gpu_pools):
        keys.append("node-pools-interruptions")
    return keys


def test_the_committed_stacks_hold_these_policies():
    for stack, keys in EXPECTED.items():
        assert expected_keys(config_of(stack)) == keys, stack


@pytest.mark.parametrize("stack", STACKS)
def test_plan_holds_the_dashboard_and_the_alert_policies(stack):
    config = config_of(stack)
    plan = plan_of(stack)
    cluster = config.cluster.name
    (component,) = steps_of_type(plan, COMPONENT)
    assert component["newState"]["name"] == cluster
    assert [s["newState"]["name"] for s in steps_of_type(plan, DASHBOARD)] == [f"{cluster}-slices"]
    found = policies(plan)
    assert list(found) == [f"{cluster}-{key}" for key in expected_keys(config)]
    for state in [*found.values(), *(s["newState"] for s in steps_of_type(plan, DASHBOARD))]:
        assert state["parent"] == component["urn"]
        assert state["inputs"]["project"] == config.project
    for policy in found.values():
        inputs = policy["inputs"]
        assert inputs["notificationChannels"] == list(config.monitoring.notification_channels)
        assert inputs["displayName"].startswith(f"[{config.environment}] {cluster}: ")
        assert inputs["userLabels"]["environment"] == config.environment
        assert inputs["alertStrategy"] == {"autoClose": "1800s"} and inputs["enabled"] is True
        assert inputs["documentation"]["mimeType"] == "text/markdown"
        assert "docs/operations.md" in inputs["documentation"]["content"]


@pytest.mark.parametrize("stack", STACKS)
def test_alert_conditions_follow_the_config_per_pool(stack):
    config = config_of(stack)
    m = config.monitoring
    found = policies(plan_of(stack))
    cluster = config.cluster.name
    for s in config.tpu_slices:
        pools = [f"{s.name}-{i}" for i in range(s.count)]
        node = (f'metadata.user_labels."cloud.google.com/gke-nodepool"={pool_match(pools)}' if config.standard
                else 'metadata.user_labels."cloud.google.com/gke-tpu-topology"=' f'"{s.topology}"')

        # idle: node-level duty cycle below the threshold for idleMinutes; a multi-host slice also available
        if config.standard and s.shape.multi_host:
            for i, pool in enumerate(pools):
                policy = found[f"{cluster}-{s.name}-idle-{i}"]["inputs"]
                assert policy["combiner"] == "AND"
                available, duty = (c["conditionThreshold"] for c in policy["conditions"])
                assert f'resource.labels.node_pool_name="{pool}"' in available["filter"]
                assert (available["comparison"], available["thresholdValue"]) == ("COMPARISON_GT", 0.99)
                assert f'metadata.user_labels."cloud.google.com/gke-nodepool"="{pool}"' in duty["filter"]
                for condition in (available, duty):
                    assert condition["duration"] == f"{m.idle_minutes * 60}s"
        else:
            policy = found[f"{cluster}-{s.name}-idle"]["inputs"]
            (duty,) = (c["conditionThreshold"] for c in policy["conditions"])
            assert node in duty["filter"]
        assert 'metric.type="kubernetes.io/node/accelerator/duty_cycle"' in duty["filter"]
        assert 'resource.type="k8s_node"' in duty["filter"]  # node-level: present while the node is, idle or not
        assert (duty["comparison"], duty["thresholdValue"]) == ("COMPARISON_LT", m.idle_duty_cycle_percent)
        assert duty["aggregations"][0]["crossSeriesReducer"] == "REDUCE_MEAN"

        # not whole or not available for unavailableMinutes
        policy = found[f"{cluster}-{s.name}-unavailable"]["inputs"]
        ready = policy["conditions"][0]["conditionThreshold"]
        assert node in ready["filter"] and 'metric.labels.condition="Ready"' in ready["filter"]
        assert (ready["comparison"], ready["thresholdValue"]) == ("COMPARISON_LT", s.shape.hosts - 0.5)
        assert ready["duration"] == f"{m.unavailable_minutes * 60}s"
        multi_host_fixed = config.standard and s.shape.multi_host and not s.autoscaled
        assert len(policy["conditions"]) == (2 if multi_host_fixed else 1)
        if multi_host_fixed:
            available = policy["conditions"][1]["conditionThreshold"]
            assert 'metric.type="kubernetes.io/node_pool/multi_host/available"' in available["filter"]
            assert f"resource.labels.node_pool_name={pool_match(pools)}" in available["filter"]
            assert (available["comparison"], available["thresholdValue"]) == ("COMPARISON_LT", 1)

        # interruptions: more than interruptionsPerDay in 24 h, per pool
        if config.standard:
            (c,) = found[f"{cluster}-{s.name}-interruptions"]["inputs"]["conditions"]
            c = c["conditionThreshold"]
            assert f"resource.labels.node_pool_name={pool_match(pools)}" in c["filter"]
            assert (c["comparison"], c["thresholdValue"], c["duration"]) == ("COMPARISON_GT",
                                                                             m.interruptions_per_day, "0s")
            assert c["aggregations"][0] == {"alignmentPeriod": "86400s", "perSeriesAligner": "ALIGN_SUM",
                                            "crossSeriesReducer": "REDUCE_SUM",
                                            "groupByFields": ['resource.label."node_pool_name"']}
    if not config.standard:
        (c,) = found[f"{cluster}-node-pools-interruptions"]["inputs"]["conditions"]
        assert "node_pool_name" not in c["conditionThreshold"]["filter"]  # GKE names Autopilot's pools


def test_thresholds_and_channels_come_from_the_monitoring_section():
    channels = ["projects/acme-ml-test/notificationChannels/123", "projects/acme-ml-test/notificationChannels/456"]
    plan = run(minimal_values(monitoring={"notificationChannels": channels, "idleDutyCyclePercent": 12.5,
                                          "idleMinutes": 30, "unavailableMinutes": 5, "interruptionsPerDay": 10}))
    found = policies(plan)
    # minimal_values runs the default rayproject/ray image, without the workloads package: no slice check.
    assert set(found) == {"ray-tpu-v6e-4-idle", "ray-tpu-v6e-4-unavailable", "ray-tpu-v6e-4-interruptions",
                          "ray-tpu-pending-pods"}
    assert all(p["inputs"]["notificationChannels"] == channels for p in found.values())
    idle = threshold(found["ray-tpu-v6e-4-idle"])
    assert (idle["thresholdValue"], idle["duration"]) == (12.5, "1800s")
    assert threshold(found["ray-tpu-v6e-4-unavailable"])["duration"] == "300s"
    assert threshold(found["ray-tpu-v6e-4-interruptions"])["thresholdValue"] == 10
    (dashboard,) = steps_of_type(plan, DASHBOARD)
    text = dashboard["newState"]["inputs"]["dashboardJson"]
    assert '"label":"idle below 12.5%","value":12.5' in text and "2 notification channel(s)" in text


def test_a_production_stack_without_channels_warns_and_others_do_not():
    warning = ("ray-tpu-prod: no notification channels (ray-tpu-gke:monitoring.notificationChannels): the alert "
               "policies open incidents in Cloud Monitoring but notify nobody")
    assert warning in prod_plan([]).warnings
    channel_warnings = [w for w in prod_plan(["projects/acme-ml-prod/notificationChannels/42"]).warnings
                        if "notification channels" in w]
    assert channel_warnings == []
    for stack in ("dev", "sandbox"):
        values, secrets = stackfile.load(stack)
        assert not [w for w in harness.run_program(stack, values, secrets).warnings if "notification channels" in w]


def test_monitoring_disabled_registers_no_monitoring_resource():
    plan = run(minimal_values(monitoring={"enabled": False}))
    assert not [s for s in plan["steps"] if "monitoring" in s["newState"]["type"].lower()]


def test_ray_charts_follow_the_ray_operator_monitoring_switch():
    for enabled in (True, False):
        values = minimal_values()
        values["ray-tpu-gke:cluster"]["rayOperator"] = {"monitoring": enabled}
        (dashboard,) = steps_of_type(run(values), DASHBOARD)
        assert ("prometheus.googleapis.com/ray_" in dashboard["newState"]["inputs"]["dashboardJson"]) is enabled


# --- the component on its own: arguments validated before anything is registered -----------------------------------

PROGRAM = textwrap.dedent("""
    import pulumi
    from ray_tpu_gke import ConfigError
    from ray_tpu_gke.resources.monitoring import SliceMonitoring

    args = pulumi.Config("ray-tpu-gke").require_object("args")
    try:
        component = SliceMonitoring("mon", args)
        pulumi.export("error", "")
        pulumi.export("policies", component.alert_policies)
    except ConfigError as error:
        pulumi.export("error", str(error))
""")


def component_plan(tmp_path, args: dict) -> harness.Plan:
    program = tmp_path / "__main__.py"
    program.write_text(PROGRAM)
    return harness.run_program("test", {"gcp:project": "acme-ml-test", "ray-tpu-gke:args": args}, program=program)


GOOD = {
    "project": "acme-ml-test", "cluster": "ray-tpu", "environment": "test", "mode": "standard",
    "slices": [{"slice": {"name": "v5p-16", "generation": "v5p", "topology": "2x2x4", "count": 2},
                "pools": ["v5p-16-0", "v5p-16-1"], "worker_groups": ["train"]}],
    "monitoring": {"idle_minutes": 20},
    "ray_metrics": True,
    "labels": {"team": "ml"},
}
GPU_POOL = {"pool": {"name": "l4", "accelerator": "nvidia-l4"}, "pools": ["l4"], "worker_groups": ["gpu"]}


def test_the_component_alone_builds_its_slices(tmp_path):
    plan = component_plan(tmp_path, GOOD)
    assert plan.outputs["error"] == ""
    assert [s.name for s in plan.steps if s.type == ALERT_POLICY] == [
        "mon-v5p-16-idle-0", "mon-v5p-16-idle-1", "mon-v5p-16-unavailable", "mon-v5p-16-interruptions"]
    assert len(plan.outputs["policies"]) == 4
    (dashboard,) = [s for s in plan.steps if s.type == DASHBOARD]
    tiles = json.loads(dashboard.inputs["dashboardJson"])["mosaicLayout"]["tiles"]
    assert [t["widget"]["title"] for t in tiles if "collapsibleGroup" in t["widget"]] == [
        "Ray clusters (Ray metrics from the Ray Operator add-on)",
        "TPU slice v5p-16: v5p 2x2x4, 16 chips on 4 hosts of ct5p-hightpu-4t; 2 x onDemand"]
    idle = next(s for s in plan.steps if s.name == "mon-v5p-16-idle-1")
    assert idle.inputs["userLabels"] == {"team": "ml", "alert": "idle", "subject": "v5p-16-1"}
    assert plan.warnings == []  # not production


def test_the_component_alone_builds_gpu_pools(tmp_path):
    plan = component_plan(tmp_path, {**GOOD, "gpu_pools": [GPU_POOL]})
    assert plan.outputs["error"] == ""
    assert [s.name for s in plan.steps if s.type == ALERT_POLICY][-2:] == ["mon-l4-gpu-idle", "mon-l4-gpu-interruptions"]
    (dashboard,) = [s for s in plan.steps if s.type == DASHBOARD]
    tiles = json.loads(dashboard.inputs["dashboardJson"])["mosaicLayout"]["tiles"]
    machine = GpuPoolConfig(name="l4", accelerator="nvidia-l4").machine_type
    assert [t["widget"]["title"] for t in tiles if "collapsibleGroup" in t["widget"]][-1] == \
        f"GPU pool l4: 1 x {machine} (nvidia-l4), onDemand"
    idle = next(s for s in plan.steps if s.name == "mon-l4-gpu-idle")
    assert idle.inputs["userLabels"] == {"team": "ml", "alert": "gpu-idle", "subject": "l4"}


def test_gpu_pools_are_checked_with_the_slices(tmp_path):
    plan = component_plan(tmp_path, {**GOOD, "mode": "autopilot", "slices": [],
                                     "gpu_pools": [GPU_POOL, {"pool": {"name": "l4", "accelerator": "nvidia-l4"}}]})
    error = plan.outputs["error"]
    assert 'SliceMonitoring(mon).args.gpu_pools[0].pools: Autopilot names its node pools itself' in error
    assert 'SliceMonitoring(mon).args.gpu_pools[1].pool.name: "l4" is also SliceMonitoring(mon).args.gpu_pools[0]' \
        in error
    plan = component_plan(tmp_path, {**GOOD, "gpu_pools": [
        {"pool": {"name": "v5p-16", "accelerator": "nvidia-l4"}, "pools": ["v5p-16-1"]}]})
    error = plan.outputs["error"]
    assert ('SliceMonitoring(mon).args.gpu_pools[0].pools[0]: "v5p-16-1" is also a pool of '
            "SliceMonitoring(mon).args.slices[0]") in error
    assert ('SliceMonitoring(mon).args.gpu_pools: GPU pool "v5p-16" has the name of SliceMonitoring(mon).args.'
            "slices[0]: names must differ") in error
    assert [s.type for s in plan.steps] == ["pulumi:pulumi:Stack"]


@pytest.mark.parametrize("change, problems", [
    ({"project": "Bad_Project", "cluster": None},
     ['SliceMonitoring(mon).args.project: required: the Google Cloud project ID (given "Bad_Project")',
      "SliceMonitoring(mon).args.cluster: required: the cluster's name as a string (given null)"]),
    ({"mode": "hybrid", "ray_metrics": "yes", "colour": "blue"},
     ['SliceMonitoring(mon).args.colour: unknown argument (given "blue"); allowed: project, cluster, environment, '
      "mode, slices, gpu_pools, monitoring, ray_metrics, labels",
      'SliceMonitoring(mon).args.mode: "hybrid" is invalid; allowed: standard, autopilot',
      'SliceMonitoring(mon).args.ray_metrics: must be true or false (given "yes")']),
    ({"monitoring": {"idle_minutes": 2, "notification_channels": ["me@example.com"], "idleMinutes": 30}},
     ["SliceMonitoring(mon).args.monitoring.idle_minutes: 2 is invalid: input should be greater than or equal to 5",
      'SliceMonitoring(mon).args.monitoring.notification_channels: ["me@example.com"] is invalid: '
      "'me@example.com' is not a notification channel ID: projects/<project>/notificationChannels/<number>",
      "SliceMonitoring(mon).args.monitoring.idleMinutes: unknown key (did you mean idle_minutes?) (given 30); "
      "allowed: enabled, "
      "notification_channels, idle_duty_cycle_percent, idle_minutes, unavailable_minutes, interruptions_per_day"]),
    ({"slices": [{"slice": {"name": "v5p-16", "generation": "v5p", "topology": "3x3"}, "pools": ["v5p-16-0"]},
                 {"slice": {"name": "v6e-8", "generation": "v6e", "topology": "2x4", "count": 2},
                  "pools": ["v6e-8-0"]},
                 {"slice": {"name": "v6e-4", "generation": "v6e", "topology": "2x2"}},
                 {"slice": {"name": "v6e-1", "generation": "v6e", "topology": "1x1"}, "pools": ["Bad Pool"],
                  "worker_groups": "tpu"}]},
     ['SliceMonitoring(mon).args.slices[0].slice.topology: "3x3" is not a v5p topology',
      "SliceMonitoring(mon).args.slices[1].pools: 1 pool(s) for a count of 2: one node pool per slice",
      "SliceMonitoring(mon).args.slices[2].pools: required in Standard mode: the entry's node pool names (given null)",
      'SliceMonitoring(mon).args.slices[3].pools[0]: "Bad Pool" is invalid',
      'SliceMonitoring(mon).args.slices[3].worker_groups: must be a list of worker group names (given "tpu")']),
    ({"mode": "autopilot"},
     ['SliceMonitoring(mon).args.slices[0].pools: Autopilot names its node pools itself: leave pools out (given '
      '["v5p-16-0", "v5p-16-1"])']),
    ({"slices": [{"slice": {"name": "a", "generation": "v6e", "topology": "2x2"}, "pools": ["p"]},
                 {"slice": {"name": "a", "generation": "v6e", "topology": "2x2", "capacity": "reservation"},
                  "pools": ["p"], "colour": "blue"}]},
     ['SliceMonitoring(mon).args.slices[1].colour: unknown argument (given "blue"); allowed: slice, pools, '
      "worker_groups",
      "SliceMonitoring(mon).args.slices[1].slice.reservation: required when capacity is reservation",
      'SliceMonitoring(mon).args.slices[1].pools[0]: "p" is also a pool of SliceMonitoring(mon).args.slices[0]']),
    ({"slices": [{"slice": {"name": "big", "generation": "v6e", "topology": "1x1", "count": 100},
                  "pools": [f"big-pool-with-a-long-name-{i}" for i in range(100)]}]},
     ["SliceMonitoring(mon).args.slices[0]: the filter of kubernetes.io/node/status_condition would be"]),
])
def test_bad_arguments_fail_with_every_problem_before_anything_is_registered(tmp_path, change, problems):
    args = {**GOOD, **change}
    plan = component_plan(tmp_path, {k: v for k, v in args.items() if v is not None})
    error = plan.outputs["error"]
    assert error.startswith("invalid configuration:\n")
    for problem in problems:
        assert any(line.strip().startswith(problem) for line in error.splitlines()), (problem, error)
    assert [s.type for s in plan.steps] == ["pulumi:pulumi:Stack"]


def test_arguments_must_be_a_mapping(tmp_path):
    plan = component_plan(tmp_path, ["not", "a", "mapping"])
    assert "SliceMonitoring(mon).args: must be SliceMonitoringArgs, a mapping" in plan.outputs["error"]


# --- the review diff ------------------------------------------------------------------------------------------------


def test_new_thresholds_update_in_place_and_only_a_new_project_replaces():
    policy, dashboard = "gcp:monitoring/alertPolicy:AlertPolicy", "gcp:monitoring/dashboard:Dashboard"
    old = policies(plan_of("staging"))["ray-tpu-staging-v6e-16-unavailable"]["inputs"]
    assert not replacement.replace_rule(policy, ("conditions", 0, "conditionThreshold", "thresholdValue"), old, old,
                                        False)
    assert not replacement.replace_rule(policy, ("notificationChannels",), old, old, False)
    assert not replacement.replace_rule(dashboard, ("dashboardJson",), {}, {}, False)
    assert replacement.replace_rule(policy, ("project",), old, old, False)
    assert replacement.replace_rule(dashboard, ("project",), {}, {}, False)


def test_a_changed_threshold_is_an_update_in_the_review(tmp_path):
    from plan.review import classify
    from plan.review.revisions import Side

    values, secrets = stackfile.load("staging")
    old = harness.run_program("staging", values, secrets).to_json()
    values["ray-tpu-gke:monitoring"] = {"unavailableMinutes": 30}
    new = harness.run_program("staging", values, secrets).to_json()
    diff = classify.compare(Side("planned", old), Side("planned", new), "staging")
    changed = {(c.type, c.name): c for c in diff.changes}
    assert {key[1] for key in changed} == {"ray-tpu-staging-v6e-16-unavailable", "ray-tpu-staging-ray-not-ready",
                                           "ray-tpu-staging-slices"}
    assert {c.op for c in changed.values()} == {"update"} and not any(c.risky for c in changed.values())
