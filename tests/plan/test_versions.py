"""The version set (#24.3): the plan's `versions` (JSON and table), the plan-time refusal of a rayVersion its image
tag contradicts and the warning for a TPU group on an image without JAX, one diff line per changed element (risky
for GKE and Ray), and plan.verify's live checks of it (CRD fields from the schema, the TPU webhook, the images)."""

from __future__ import annotations

import copy
import json

import kuberay_schema
import pytest
import yaml
from helpers import config_of, minimal_values
from plans import program_plan
from ray_tpu_gke.catalog.ray_versions import DEFAULT_RAY_VERSION as RAY
from ray_tpu_gke.spec.config import parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError
from stand_in_cluster import GROUP, TRAIN, WEBHOOK, failures, healthy

from plan import stackfile, version_set
from plan.review import classify
from plan.verify import live_versions as live

WORKLOADS = "us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/workloads-tpu"


def plan_json(stack: str, values=None) -> dict:
    values = values if values is not None else stackfile.load(stack)[0]
    config = parse_stack_config(values, stack)
    return version_set.attach(program_plan(stack, values), config)


def test_the_plan_json_carries_the_version_set(plan_output):
    done = plan_output("prod", "--json")
    assert done.returncode == 0, done.stderr
    v = json.loads(done.stdout)["versions"]
    config = config_of("prod")
    assert v["gke"] == {"releaseChannel": "STABLE", "pin": "1.34", "minimum": {
        "version": config.gke_version_need.version, "reason": config.gke_version_need.reason}}
    assert v["rayObjects"]["train"] == {
        "kind": "RayCluster", "namespace": "training", "rayVersion": RAY,
        "image": f"us-central1-docker.pkg.dev/acme-ml-prod/ray-tpu-gke/workloads-tpu:{RAY}",
        "imageRayVersion": RAY, "workloadsImage": True}
    assert set(v["rayObjects"]) == {o.name for o in config.ray_objects}
    assert "spec.workerGroupSpecs[].numOfHosts" in v["kuberay"]["fields"]["RayCluster"]
    assert v["kuberay"]["minimum"]["version"] == "v1.3" and "Ray 2.38.0 and later" in v["kuberay"]["minimum"]["reason"]
    assert v["workloadsImages"]["tpu"]["base"] == f"rayproject/ray:{RAY}-py311"
    assert {"jax", "libtpu"} <= set(v["workloadsImages"]["tpu"])
    gpu = v["workloadsImages"]["gpu"]
    assert gpu["base"].startswith(f"rayproject/ray:{RAY}-py311-cu") and gpu["jax"] == v["workloadsImages"]["tpu"]["jax"]
    # A RayJob on the train RayCluster runs in that cluster's Ray and image, not the defaults of its own spec.
    assert v["rayObjects"]["train-multislice"]["cluster"] == "train"
    assert v["rayObjects"]["train-multislice"]["image"] == v["rayObjects"]["train"]["image"]


def test_the_text_plan_has_the_table(plan_output):
    done = plan_output("staging")
    assert done.returncode == 0, done.stderr
    assert "Version set (what must stay together)" in done.stdout
    assert "GKE minimum needed" in done.stdout and "Ray of train" in done.stdout


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_kuberay_field_a_stack_sets_is_in_the_crds_it_runs_on(stack):
    fields = plan_json(stack)["versions"]["kuberay"]["fields"]
    for release in kuberay_schema.RELEASES:
        for kind, paths in fields.items():
            crd = yaml.load(kuberay_schema.crd_path(release, kind).read_text(), Loader=kuberay_schema._Loader)
            (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
            schema = v1["schema"]["openAPIV3Schema"]
            assert [p for p in paths if not live.schema_has(schema, p)] == [], (release, kind)
            assert not live.schema_has(schema, "spec.workerGroupSpecs[].numOfHost")  # a misspelt field is missing


def test_a_ray_version_the_image_tag_contradicts_is_refused():
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.56.0", image=f"{WORKLOADS}:2.55.0")
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(values, "test")
    (problem,) = caught.value.problems
    assert problem.path == "ray-tpu-gke:rayClusters[0].rayVersion"
    assert "2.56.0 contradicts the image" in str(problem) and "which is Ray 2.55.0" in str(problem)


def test_a_tpu_group_on_rays_own_image_warns_naming_the_repositorys_image():
    config = parse_stack_config(minimal_values(), "test")  # rayproject/ray:<default>-py311, the default
    (warning,) = version_set.warnings(config)
    assert warning.startswith(f"ray-tpu-gke:rayClusters[0].image: rayproject/ray:{RAY}-py311 has no JAX")
    assert f"us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/workloads-tpu:{RAY}" in warning
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0]["image"] = f"{WORKLOADS}:{RAY}"
    assert version_set.warnings(parse_stack_config(values, "test")) == []


def test_the_default_is_ray_2_60_and_a_stack_pinned_to_2_55_still_plans_warning_what_it_lacks():
    assert RAY == "2.60.0"
    assert not [w for w in parse_stack_config(minimal_values(), "test").warnings if "older than the default" in w]
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.55.0", image=f"{WORKLOADS}:2.55.0")
    config = parse_stack_config(values, "test")
    (behind,) = [w for w in config.warnings if "older than the default" in w]
    assert behind.startswith("ray-tpu-gke:rayClusters[0].rayVersion: 2.55.0 is older than the default Ray 2.60.0")
    for lacking in ("serve-llm-tpu (2.56.0)", "multislice-megascale-refresh (2.56.0)",
                    "data-iter-jax-batches (2.56.0)", "data-iter-blocked-stages (2.57.0)",
                    "max-preemption-failures (2.58.0)"):
        assert lacking in behind
    assert "jax-multislice" not in behind  # 2.54: 2.55 has it
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.57.0", image=f"{WORKLOADS}:2.57.0")
    (behind,) = [w for w in parse_stack_config(values, "test").warnings if "older than the default" in w]
    assert behind.endswith("lacks: max-preemption-failures (2.58.0) (docs/admission.md, Ray versions)")
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.58.0", image=f"{WORKLOADS}:2.58.0")
    assert not [w for w in parse_stack_config(values, "test").warnings if "older than the default" in w]


def test_a_changed_element_is_one_risky_line_in_the_diff():
    old = plan_json("staging")
    new = copy.deepcopy(old)
    new["versions"]["rayObjects"]["train"].update(rayVersion="2.56.0", image=f"{WORKLOADS}:2.56.0")
    new["versions"]["gke"]["pin"] = "1.34"
    changes = {c.name: c for c in classify.version_changes(old, new)}
    assert set(changes) == {"rayObjects.train.rayVersion", "rayObjects.train.image", "gke.pin"}
    for change in changes.values():  # one line each: the element and its values before and after
        assert change.type == classify.VERSIONS_TYPE and change.details == [] and change.risky
    assert changes["gke.pin"].summary == 'null → "1.34"'
    assert changes["rayObjects.train.rayVersion"].summary == f'"{RAY}" → "2.56.0"'
    assert f'"{RAY}" → "2.56.0"' in changes["rayObjects.train.rayVersion"].reasons[0]
    new["versions"]["kuberay"]["fields"]["RayJob"] = ["spec.entrypoint"]
    (fields,) = [c for c in classify.version_changes(old, new) if c.name.startswith("kuberay.")]
    assert fields.name == "kuberay.fields.RayJob" and not fields.risky
    assert classify.version_changes({"steps": []}, new) == []  # a plan from before the version set


# --- the live version set (plan.verify) ---------------------------------------------------------------------------


def test_a_healthy_cluster_passes_the_version_checks(run):  # noqa: F811
    code, checks, _, _ = run("staging", healthy("staging"), "--skip-smoke")
    assert code == 0
    assert checks[("CRD rayclusters.ray.io", "fields")]["status"] == "pass"
    assert checks[("TPU webhook", "installed")]["detail"].startswith("kuberay-tpu-mutating-webhook-cfg/")
    assert checks[("TPU webhook", "serving")]["status"] == "pass"
    assert checks[(TRAIN, "image")]["status"] == "pass"


def test_an_older_crd_without_a_field_the_stack_uses_fails_naming_it(run, tmp_path):  # noqa: F811
    state = healthy("staging")
    crd = json.loads(open(state["crds"]["rayclusters.ray.io"]).read())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    group = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["workerGroupSpecs"]["items"]
    del group["properties"]["numOfHosts"]
    path = tmp_path / "old-crd.json"
    path.write_text(json.dumps(crd))
    state["crds"] = {**state["crds"], "rayclusters.ray.io": str(path)}
    code, checks, _, _ = run("staging", state, "--skip-smoke")
    assert code == 1
    assert failures(checks) == {("CRD rayclusters.ray.io", "fields"): "missing: spec.workerGroupSpecs[].numOfHosts"}


def test_no_tpu_webhook_and_a_pod_on_another_image_fail(run):  # noqa: F811
    state = healthy("staging")
    state["webhooks"] = [{**WEBHOOK, "webhooks": [{**WEBHOOK["webhooks"][0], "objectSelector": {},
                                                   "clientConfig": {"service": {"name": "other"}}}]}]
    pod = state["pods"][0]
    pod["spec"]["containers"][0]["image"] = "rayproject/ray:2.56.0-py311"
    code, checks, _, _ = run("staging", state, "--skip-smoke")
    assert code == 1
    failed = failures(checks)
    assert failed[("TPU webhook", "installed")].startswith("no mutating webhook of pod creation selects KubeRay's")
    assert failed[(TRAIN, "image")] == f"{pod['metadata']['name']}/ray-worker runs rayproject/ray:2.56.0-py311"
    assert (GROUP, "webhook env") not in failed  # the pods were mutated when they were created
