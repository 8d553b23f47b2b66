"""Upgrades under control (#24.4): the cluster's maintenance windows and exclusions, the TPU and GPU pools' upgrade
settings, each validated with its key path; what the plan sends to GKE."""

from __future__ import annotations

import pytest
from helpers import CLUSTER, NODE_POOL, maintained_cluster, minimal_values, problems, run, steps_of_type

from plan import stackfile
from ray_tpu_gke.render import upgrades
from ray_tpu_gke.spec.config import parse_stack_config

WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T08:00:00Z",
          "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
TRAINING = {"name": "training", "startTime": "2026-12-01T00:00:00Z", "untilEndOfSupport": True}


def test_the_window_and_exclusions_reach_the_cluster_in_utc():
    plan = run(minimal_values(cluster=maintained_cluster(window=WINDOW, exclusions=[TRAINING])))
    inputs = steps_of_type(plan, CLUSTER)[0]["newState"]["inputs"]
    assert inputs["maintenancePolicy"] == {
        "recurringWindow": WINDOW,
        "maintenanceExclusions": [{"exclusionName": "training", "startTime": "2026-12-01T00:00:00Z",
                                   "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES",
                                                        "endTimeBehavior": "UNTIL_END_OF_SUPPORT"}}]}


def test_no_maintenance_section_sends_no_policy():
    plan = run(minimal_values())
    assert "maintenancePolicy" not in steps_of_type(plan, CLUSTER)[0]["newState"]["inputs"]


def test_the_pod_package_is_collected_for_the_pending_pods_alert():
    plan = run(minimal_values())
    components = steps_of_type(plan, CLUSTER)[0]["newState"]["inputs"]["monitoringConfig"]["enableComponents"]
    assert "POD" in components and "SYSTEM_COMPONENTS" in components


@pytest.mark.parametrize("maintenance, expected", [
    ({"window": {**WINDOW, "endTime": "2026-01-03T04:00:00Z"}}, "lasts 2:00:00; GKE needs at least 4 hours"),
    ({"window": {**WINDOW, "recurrence": "FREQ=HOURLY"}}, "allowed FREQ=DAILY or FREQ=WEEKLY;BYDAY=<days>"),
    ({"window": {**WINDOW, "recurrence": "FREQ=WEEKLY;BYDAY=SU"}}, "GKE needs at least 48 hours"),
    ({"window": {**WINDOW, "startTime": "2026-01-03T02:00:00+01:00"}}, "is not an RFC 3339 UTC time"),
    ({"exclusions": [{**TRAINING, "endTime": "2026-12-05T00:00:00Z"}]}, "exactly one of endTime and untilEndOfSupport"),
    ({"exclusions": [{"name": "x", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-15T00:00:00Z",
                      "scope": "NO_UPGRADES"}]}, "NO_UPGRADES exclusion lasts at most 30 days"),
    ({"exclusions": [TRAINING, TRAINING]}, "two exclusions are named 'training'"),
])
def test_bad_maintenance_is_refused_with_its_key_path(maintenance, expected):
    found = problems(minimal_values(cluster=maintained_cluster(**maintenance)))
    assert any(p.startswith("ray-tpu-gke:cluster.maintenance") and expected in p for p in found), found


def test_single_host_tpu_pools_upgrade_in_fixed_capacity_and_multi_host_ones_are_left_to_the_exclusion():
    slices = [{"name": "v6e-4", "generation": "v6e", "topology": "2x2"},
              {"name": "v6e-16", "generation": "v6e", "topology": "4x4"},
              {"name": "v6e-8", "generation": "v6e", "topology": "2x4", "upgrade": {"maxSurge": 1,
                                                                                   "maxUnavailable": 0}}]
    groups = [{"name": s["name"], "slice": s["name"]} for s in slices]
    plan = run(minimal_values(tpuSlices=slices, rayClusters=[{"name": "train", "workerGroups": groups}]))
    settings = {s["newState"]["inputs"]["name"]: s["newState"]["inputs"].get("upgradeSettings")
                for s in steps_of_type(plan, NODE_POOL)}
    assert settings["v6e-4-0"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert settings["v6e-16-0"] is None
    assert settings["v6e-8-0"] == {"strategy": "SURGE", "maxSurge": 1, "maxUnavailable": 0}


def test_flex_start_pools_keep_gkes_short_lived_upgrades():
    config = parse_stack_config(minimal_values(tpuSlices=[
        {"name": "v6e-4", "generation": "v6e", "topology": "2x2", "capacity": "flexStart"}]), "test")
    assert upgrades.upgrade_settings(config.tpu_slices[0]) is None


def test_an_upgrade_with_nothing_above_zero_is_refused():
    found = problems(minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2",
                                                "upgrade": {"maxSurge": 0, "maxUnavailable": 0}}]))
    assert any(p.startswith("ray-tpu-gke:tpuSlices[0].upgrade") and "at least one must be above 0" in p
               for p in found), found


def test_prod_has_a_maintenance_policy():
    values, _ = stackfile.load("prod")
    config = parse_stack_config(values, "prod")
    assert upgrades.maintenance_policy(config.cluster.maintenance) is not None
