"""The second `pulumi up`: an autoscaled RayCluster Pulumi can still update after Ray's autoscaler has resized it,
and a RayService whose cluster changes reach KubeRay under `upgradeStrategy: None`.

The autoscaler is simulated as it acts on the cluster: a JSON patch of the RayCluster's replicas and
scaleStrategy.workersToDelete (ray 2.55.0 autoscaler/_private/kuberay/node_provider.py), then a refresh, which keeps
of the live object only the fields Pulumi applied (pulumi-kubernetes provider.go Read -> pruneLiveState). The next
revision is planned against that state by the review's own matcher (plan/review/classify.py), as `--diff-against`
does.
"""

from __future__ import annotations

import copy

import pytest
from helpers import minimal_values, plan_of
from plans import program_plan
from ray_tpu_gke.catalog.resource_types import RAY_KIND_PREFIX
from ray_tpu_gke.render import manifests
from ray_tpu_gke.spec.config import parse_stack_config

from plan.review import classify, revisions

RAYCLUSTER, RAYSERVICE, RAYJOB = (RAY_KIND_PREFIX + k for k in ("RayCluster", "RayService", "RayJob"))
IMAGE, NEW_IMAGE = "rayproject/ray:2.55.0-py311", "rayproject/ray:2.55.0-py311-cu128"
SERVE = {"applications": [{"name": "app", "import_path": "serve_app:app", "route_prefix": "/"}]}


def _group(**extra):
    return {"name": "tpu", "slice": "v6e-4", "replicas": 0, "minReplicas": 0, "maxReplicas": 2, **extra}


def _values(image: str = IMAGE, strategy: str = "None", serve: dict = SERVE) -> dict:
    return minimal_values(
        rayClusters=[{"name": "train", "image": image, "autoscaling": {"enabled": True}, "workerGroups": [_group()]}],
        rayServices=[
            {
                "name": "serve",
                "image": image,
                "upgradeStrategy": strategy,
                "autoscaling": {"enabled": True},
                "serveConfig": serve,
                "workerGroups": [_group()],
            }
        ],
        rayJobs=[
            {
                "name": "job",
                "image": image,
                "entrypoint": "python -c 'print(1)'",
                "autoscaling": {"enabled": True},
                "workerGroups": [_group(replicas=1, maxReplicas=1)],
            }
        ],
    )


def _plan(values: dict) -> dict:
    return program_plan("test", values).to_json()


def _step(plan: dict, type_: str) -> dict:
    (step,) = [s for s in plan["steps"] if s["newState"]["type"] == type_]
    return step


def _prune(live, applied):
    """The live value with only the keys the applied inputs have, lists by index (pruneMap / pruneSlice)."""
    if isinstance(live, dict) and isinstance(applied, dict):
        return {k: _prune(v, applied[k]) for k, v in live.items() if k in applied}
    if isinstance(live, list) and isinstance(applied, list):
        return [_prune(v, a) for v, a in zip(live, applied)]
    return live


def _scaled_and_refreshed(plan: dict, replicas: int) -> dict:
    """The state after the autoscaler resized every group of the RayCluster, and a refresh."""
    state = copy.deepcopy(plan)
    inputs = _step(state, RAYCLUSTER)["newState"]["inputs"]
    live = copy.deepcopy(inputs)
    for group in live["spec"]["workerGroupSpecs"]:  # what the autoscaler's patch writes
        group["replicas"] = replicas
        group["scaleStrategy"] = {"workersToDelete": ["train-tpu-worker-x"]}
    _step(state, RAYCLUSTER)["newState"]["inputs"] = _prune(live, inputs)
    return state


def _side(plan: dict) -> revisions.Side:
    return revisions.Side("planned", plan)


def _change(old: dict, new: dict, type_: str):
    changes = [c for c in classify.compare(_side(old), _side(new), "test").changes if c.type == type_]
    return changes[0] if changes else None


@pytest.fixture(scope="module")
def plans():
    return {
        "base": _plan(_values()),
        "image": _plan(_values(NEW_IMAGE)),
        "newcluster": _plan(_values(strategy="NewCluster")),
        "serve": _plan(_values(serve={"applications": [dict(SERVE["applications"][0], route_prefix="/v2")]})),
    }


def test_an_autoscaled_raycluster_leaves_replicas_to_the_autoscaler_and_takes_the_list_back_with_force(plans):
    inputs = _step(plans["base"], RAYCLUSTER)["newState"]["inputs"]
    assert inputs["metadata"]["annotations"][manifests.PATCH_FORCE] == "true"
    (group,) = inputs["spec"]["workerGroupSpecs"]
    assert "replicas" not in group and "scaleStrategy" not in group
    assert (group["minReplicas"], group["maxReplicas"]) == (0, 2)
    assert manifests.group_replicas(group) == 0  # KubeRay starts it at minReplicas


def test_a_raycluster_without_autoscaling_declares_its_replicas_and_forces_nothing():
    values = minimal_values()
    inputs = _step(_plan(values), RAYCLUSTER)["newState"]["inputs"]
    assert inputs["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert manifests.PATCH_FORCE not in inputs["metadata"]["annotations"]


def test_a_rayservice_or_rayjob_keeps_its_replicas_the_autoscaler_patches_their_kuberay_clusters(plans):
    for type_, key in ((RAYSERVICE, "rayClusterConfig"), (RAYJOB, "rayClusterSpec")):
        inputs = _step(plans["base"], type_)["newState"]["inputs"]
        assert inputs["spec"][key]["workerGroupSpecs"][0]["replicas"] == (0 if type_ == RAYSERVICE else 1)
        assert manifests.PATCH_FORCE not in inputs["metadata"]["annotations"]


def test_the_drift_check_after_the_autoscaler_acts_sees_no_change(plans):
    scaled = _scaled_and_refreshed(plans["base"], replicas=3)
    assert _change(scaled, plans["base"], RAYCLUSTER) is None


def test_an_image_change_after_the_autoscaler_acts_is_an_update_of_the_image_alone(plans):
    scaled = _scaled_and_refreshed(plans["base"], replicas=3)
    change = _change(scaled, plans["image"], RAYCLUSTER)
    assert change.op == "update" and not change.risky
    paths = [d.path for d in change.details]
    assert paths and all("image" in p for p in paths), paths
    assert not any("replicas" in p or "scaleStrategy" in p for p in paths)
    new_inputs = _step(plans["image"], RAYCLUSTER)["newState"]["inputs"]
    assert new_inputs["metadata"]["annotations"][manifests.PATCH_FORCE] == "true"  # applied with force: no conflict


def test_a_declared_count_an_autoscaled_raycluster_cannot_apply_is_a_warning():
    values = minimal_values(
        tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "count": 2}],
        rayClusters=[
            {"name": "train", "autoscaling": {"enabled": True}, "workerGroups": [_group(replicas=2, maxReplicas=2)]}
        ],
    )
    (warning,) = [w for w in parse_stack_config(values, "test").warnings if "not applied" in w]
    assert warning.startswith("ray-tpu-gke:rayClusters[0].workerGroups[0].replicas: 2 is not applied")
    assert "minReplicas (0)" in warning and "set replicas to 0" in warning


def test_upgrade_strategy_none_replaces_the_rayservice_when_its_cluster_changes(plans):
    options = _step(plans["base"], RAYSERVICE)["newState"]["options"]
    assert options["replaceOnChanges"] == ["spec.rayClusterConfig"] and options["deleteBeforeReplace"] is True
    change = _change(plans["base"], plans["image"], RAYSERVICE)
    assert change.op == "replace" and change.risky
    assert any(r.startswith("replaces RayService") and "upgradeStrategy None" in r for r in change.reasons)


def test_upgrade_strategy_none_applies_a_serve_config_change_in_place(plans):
    change = _change(plans["base"], plans["serve"], RAYSERVICE)
    assert change.op == "update" and [d.path.startswith("spec.serveConfigV2") for d in change.details] == [True]


def test_new_cluster_upgrades_in_place_as_kuberay_does(plans):
    options = _step(plans["newcluster"], RAYSERVICE)["newState"]["options"]
    assert not options.get("replaceOnChanges") and not options.get("deleteBeforeReplace")


def test_the_compare_stacks_services_under_none_are_replaced_when_their_cluster_changes():
    services = [s for s in plan_of("compare")["steps"] if s["newState"]["type"] == RAYSERVICE]
    assert {s["newState"]["name"] for s in services} == {"compare-serve-tpu", "compare-serve-gpu", "compare-llm-tpu",
                                                           "compare-llm-gpu"}
    for step in services:
        assert step["newState"]["inputs"]["spec"]["upgradeStrategy"] == {"type": "None"}
        assert step["newState"]["options"]["replaceOnChanges"] == ["spec.rayClusterConfig"]
