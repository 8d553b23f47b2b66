"""Multislice training declared and planned (issue #23 item 1), and TPU pods that drain and wait long enough for
their slices (issue #22 item 12): the rules of ray_tpu_gke.spec.multislice, the manifests and the entrypoint check."""

from __future__ import annotations

import copy

import pytest
import yaml
from helpers import ROOT, minimal_values, problems

from plan import entrypoints, preview, stackfile
from ray_tpu_gke.catalog import ray_versions
from ray_tpu_gke.render import manifests
from ray_tpu_gke.spec import multislice
from ray_tpu_gke.spec.config import parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError

SHAPE_ENV = ("SLICE_GENERATION", "SLICE_TOPOLOGY", "SLICE_HOSTS", "SLICE_CHIPS_PER_HOST", "SLICE_COUNT")


def two_slice_job(ray_version="2.56.0", count=2, replicas=2, capacity="onDemand", mode="standard", **job):
    """Two (or `count`) v6e 4x4 slices (4 hosts of 4 chips) and a RayJob training over `replicas` of them."""
    cluster = {"name": "ray-tpu", "mode": mode, "location": "us-east5-b" if mode == "standard" else "us-east5",
               "deletionProtection": False}
    return minimal_values(
        cluster=cluster,
        tpuSlices=[{"name": "v6e-16", "generation": "v6e", "topology": "4x4", "count": count, "capacity": capacity,
                    "zone": "us-east5-b"}],
        rayClusters=[],
        rayJobs=[{"name": "pretrain", "rayVersion": ray_version, "image": f"rayproject/ray:{ray_version}-py311",
                  "entrypoint": "python -m workloads.train --slices 2 --steps 100",
                  "workerGroups": [{"name": "tpu", "slice": "v6e-16", "replicas": replicas}], **job}])


def on_ray(obj: dict, version: str) -> dict:
    """A Ray object of this Ray version, in the Ray project's image of it (the rayVersion must match the image)."""
    obj.update(rayVersion=version, image=f"rayproject/ray:{version}-py311")
    return obj


def manifest_of(config, kind="ray_jobs", index=0) -> dict:
    obj = getattr(config, kind)[index]
    return manifests.ray_manifest(obj, config.targets, manifests.render_context(config, "ray-sa"))


def env_of(container) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


# --- the shape on every pod ------------------------------------------------------------------------------------------


def test_multislice_pods_get_their_group_shape_and_the_head_too():
    config = parse_stack_config(two_slice_job(), "test")
    spec = manifest_of(config)["spec"]["rayClusterSpec"]
    want = {"SLICE_GENERATION": "v6e", "SLICE_TOPOLOGY": "4x4", "SLICE_HOSTS": "4", "SLICE_CHIPS_PER_HOST": "4",
            "SLICE_COUNT": "2"}
    (group,) = spec["workerGroupSpecs"]
    assert group["replicas"] == 2 and group["numOfHosts"] == 4
    worker = env_of(group["template"]["spec"]["containers"][0])
    head = env_of(spec["headGroupSpec"]["template"]["spec"]["containers"][0])
    assert {k: worker[k] for k in SHAPE_ENV} == want
    assert {k: head[k] for k in SHAPE_ENV} == want  # the driver runs on the head and reads them there
    # JaxTrainer computes MEGASCALE_* itself; set in the pod spec, the TPU webhook would pin stale per-pod values.
    assert not any(k.startswith("MEGASCALE_") for k in worker)


def test_multislice_head_has_no_shape_when_the_object_has_two_tpu_groups():
    values = two_slice_job(count=3)
    values["ray-tpu-gke:rayJobs"][0]["workerGroups"].append({"name": "tpu-b", "slice": "v6e-16", "replicas": 1})
    spec = manifest_of(parse_stack_config(values, "test"))["spec"]["rayClusterSpec"]
    head = env_of(spec["headGroupSpec"]["template"]["spec"]["containers"][0])
    assert not set(SHAPE_ENV) & set(head)
    assert [env_of(g["template"]["spec"]["containers"][0])["SLICE_COUNT"] for g in spec["workerGroupSpecs"]] == \
        ["2", "1"]


# --- slices that must exist at once ----------------------------------------------------------------------------------


def test_multislice_group_needing_more_slices_than_the_entry_has_is_refused_in_autopilot():
    found = problems(two_slice_job(count=1, mode="autopilot"))
    assert any(p.startswith("ray-tpu-gke:tpuSlices[0].count: 1 slice(s) of v6e-16, but multislice ray/pretrain "
                            "group tpu needs 2 at once") for p in found), found


def test_multislice_group_counts_what_other_objects_hold_of_the_entry():
    values = two_slice_job(count=2, mode="autopilot")
    values["ray-tpu-gke:rayClusters"] = [{"name": "notebook", "workerGroups": [{"name": "tpu", "slice": "v6e-16",
                                                                                "replicas": 1}]}]
    found = problems(values)
    assert any("needs 2 at once beside 1 held by others (ray/notebook group tpu: 1); allowed: at least 3" in p
               for p in found), found


def test_multislice_group_started_from_zero_by_ray_autoscaling_needs_its_max_replicas_at_once():
    values = two_slice_job(count=1, replicas=0, autoscaling={"enabled": True})
    values["ray-tpu-gke:rayJobs"][0]["workerGroups"][0]["maxReplicas"] = 2
    found = problems(values)
    assert any(p.startswith("ray-tpu-gke:tpuSlices[0].count: 1 slice(s) of v6e-16, but multislice") for p in found)


def test_multislice_group_that_fits_plans_and_the_plan_says_so():
    config = parse_stack_config(two_slice_job(), "test")
    (row,) = preview.multislice_rows(config)
    assert (row["object"], row["slices"], row["chips"], row["hosts"]) == ("ray/pretrain", 2, 32, 8)
    (line,) = preview.multislice_lines(config)
    assert "runs one JaxTrainer over 2 slices of v6e-16 (32 chips, 8 hosts)" in line and "All or nothing" in line


def test_a_rayservice_with_two_slices_is_not_multislice():
    values = two_slice_job()
    values["ray-tpu-gke:rayServices"] = [on_ray({"name": "serve", "serveConfig": {"applications": []},
                                                 "upgradeStrategy": "None",
                                                 "workerGroups": [{"name": "tpu", "slice": "v6e-16", "replicas": 2}]},
                                                "2.55.0")]
    values["ray-tpu-gke:rayJobs"] = []
    config = parse_stack_config(values, "test")
    assert preview.multislice_rows(config) == [] and not any("MEGASCALE" in w for w in config.warnings)


# --- Ray versions and capacity ---------------------------------------------------------------------------------------


def test_multislice_before_ray_2_56_warns_of_stale_megascale_and_names_the_fix():
    old = parse_stack_config(two_slice_job(ray_version="2.55.0"), "test").warnings
    assert any(w.startswith("ray-tpu-gke:rayJobs[0].rayVersion: 2.55.0: a multislice JaxTrainer") and
               "stale MEGASCALE_*" in w and "fixed in Ray 2.56.0 (ray-project/ray#62893)" in w for w in old), old
    new = parse_stack_config(two_slice_job(ray_version="2.56.0"), "test").warnings
    assert not any("MEGASCALE" in w for w in new)


def test_multislice_on_spot_slices_warns_that_one_preemption_stops_all():
    found = parse_stack_config(two_slice_job(capacity="spot"), "test").warnings
    assert any(w.startswith("ray-tpu-gke:rayJobs[0].workerGroups[0].replicas: multislice") and
               "one preemption" in w for w in found), found


def test_multislice_reservation_wait_of_ray_2_55_warns_on_slices_created_on_demand():
    values = two_slice_job(ray_version="2.55.0")
    values["ray-tpu-gke:tpuSlices"][0]["autoscaling"] = True
    found = parse_stack_config(values, "test").warnings
    assert any("waits at most 100 s for each 4-host slice" in w for w in found), found
    on_ray(values["ray-tpu-gke:rayJobs"][0], "2.56.0")
    assert not any("100 s" in w for w in parse_stack_config(values, "test").warnings)
    fixed = copy.deepcopy(values)
    on_ray(fixed["ray-tpu-gke:rayJobs"][0], "2.55.0")
    del fixed["ray-tpu-gke:tpuSlices"][0]["autoscaling"]  # fixed-size pools keep their nodes
    assert not any("100 s" in w for w in parse_stack_config(fixed, "test").warnings)


def test_v5e_autoscaling_before_ray_2_56_warns_of_the_head_resource_name():
    values = minimal_values(tpuSlices=[{"name": "v5e-16", "generation": "v5e", "topology": "4x4"}],
                            rayClusters=[on_ray({"name": "train", "autoscaling": {"enabled": True},
                                                 "workerGroups": [{"name": "tpu", "slice": "v5e-16", "replicas": 1}]},
                                                "2.55.0")])
    found = parse_stack_config(values, "test").warnings
    assert any(w.startswith("ray-tpu-gke:rayClusters[0].autoscaling.enabled: Ray 2.55.0's autoscaler") and
               "TPU-v5litepod-N-head" in w for w in found), found
    on_ray(values["ray-tpu-gke:rayClusters"][0], "2.56.0")
    assert not any("v5litepod" in w for w in parse_stack_config(values, "test").warnings)


# --- drain grace period and Ray Train's start timeout (#22.12) -------------------------------------------------------


def test_tpu_workers_get_a_grace_period_longer_than_rays_drain():
    config = parse_stack_config(two_slice_job(), "test")
    group = manifest_of(config)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    # Ray 2.57 drains 30 s on SIGTERM; Kubernetes' default grace period is also 30 s.
    assert group["template"]["spec"]["terminationGracePeriodSeconds"] == 60 > ray_versions.DRAIN_TIMEOUT_S


def test_grace_period_is_configurable_validated_and_a_short_one_warns_from_ray_2_57():
    values = two_slice_job(ray_version="2.57.0")
    values["ray-tpu-gke:rayJobs"][0]["workerGroups"][0]["terminationGracePeriodSeconds"] = 120
    config = parse_stack_config(values, "test")
    group = manifest_of(config)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert group["template"]["spec"]["terminationGracePeriodSeconds"] == 120
    values["ray-tpu-gke:rayJobs"][0]["workerGroups"][0]["terminationGracePeriodSeconds"] = 30
    found = parse_stack_config(values, "test").warnings
    assert any(w.startswith("ray-tpu-gke:rayJobs[0].workerGroups[0].terminationGracePeriodSeconds: 30 s is not "
                            "longer than Ray 2.57.0's 30 s drain") for w in found), found
    on_ray(values["ray-tpu-gke:rayJobs"][0], "2.56.0")  # no drain before 2.57
    assert not any("terminationGracePeriodSeconds" in w for w in parse_stack_config(values, "test").warnings)
    values["ray-tpu-gke:rayJobs"][0]["workerGroups"][0]["terminationGracePeriodSeconds"] = -1
    assert any(p.startswith("ray-tpu-gke:rayJobs[0].workerGroups[0].terminationGracePeriodSeconds")
               for p in problems(values))


def test_training_heads_get_the_worker_group_start_timeout_and_services_do_not():
    config = parse_stack_config(two_slice_job(), "test")
    head = manifest_of(config)["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert env_of(head)["RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] == "900"  # Ray's default is 60 s
    values = two_slice_job(workerGroupStartTimeoutSeconds=1800)
    head = manifest_of(parse_stack_config(values, "test"))["spec"]["rayClusterSpec"]["headGroupSpec"]
    assert env_of(head["template"]["spec"]["containers"][0])["RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] == "1800"
    values = two_slice_job(workerGroupStartTimeoutSeconds=0)
    assert any(p.startswith("ray-tpu-gke:rayJobs[0].workerGroupStartTimeoutSeconds") for p in problems(values))
    serve = minimal_values(rayClusters=[], rayServices=[{"name": "serve", "serveConfig": {"applications": []},
                                                         "upgradeStrategy": "None",
                                                         "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}])
    spec = manifest_of(parse_stack_config(serve, "test"), "ray_services")["spec"]["rayClusterConfig"]
    assert "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S" not in env_of(
        spec["headGroupSpec"]["template"]["spec"]["containers"][0])


# --- entrypoints of the repository's training workload ---------------------------------------------------------------


def _load(tmp_path, values) -> list[str]:
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    with pytest.raises(ConfigError) as error:
        stackfile.load_checked("test", path)
    return [str(p) for p in error.value.problems]


def test_multislice_entrypoint_that_contradicts_its_group_is_refused_with_the_key_path(tmp_path):
    values = two_slice_job(entrypoint="python -m workloads.train --hosts 2 --chips-per-host 8 --slices 3")
    found = _load(tmp_path, values)
    assert len(found) == 3, found
    assert all(p.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ") for p in found)
    assert "--hosts 2 contradicts group tpu on v6e-16 (v6e 4x4: 4 host(s) of 4 chips); allowed: --hosts 4" in found[0]
    assert "--chips-per-host 8 contradicts" in found[1] and "allowed: --chips-per-host 4" in found[1]
    assert "--slices 3 asks for more slices than" in found[2] and "(replicas 2)" in found[2]


def test_multislice_entrypoint_on_a_ray_cluster_is_checked_against_that_clusters_group(tmp_path):
    values = two_slice_job()
    values["ray-tpu-gke:rayClusters"] = [{"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-16",
                                                                             "replicas": 2}]}]
    values["ray-tpu-gke:rayJobs"] = [{"name": "job", "cluster": "train",
                                      "entrypoint": "python -m workloads.train --topology 2x4 --slices 2"}]
    (found,) = _load(tmp_path, values)
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: --topology 2x4 contradicts group tpu on v6e-16")


def test_multislice_entrypoint_the_workload_refuses_is_refused(tmp_path):
    (found,) = _load(tmp_path, two_slice_job(entrypoint="python -m workloads.train --slices two"))
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ") and "workloads.train refuses" in found


def test_multislice_entrypoints_that_agree_with_their_group_plan():
    config = parse_stack_config(two_slice_job(entrypoint="python -m workloads.train --generation v6e --topology 4x4 "
                                                         "--hosts 4 --chips-per-host 4 --slices 2"), "test")
    assert entrypoints.problems(config) == []
    assert entrypoints.train_arguments("python -m workloads.tpu_smoke --hosts 2") is None


def test_multislice_prod_declares_a_two_slice_job_that_plans():
    values, _ = stackfile.load("prod")
    config = parse_stack_config(values, "prod")
    assert entrypoints.problems(config) == []
    rows = {(r["object"], r["slices"]) for r in preview.multislice_rows(config)}
    assert ("training/train", 2) in rows
    jobs = [r["jobs"] for r in preview.multislice_rows(config) if r["object"] == "training/train"][0]
    assert "training/train-multislice" in jobs


# --- the Ray versions table ------------------------------------------------------------------------------------------


def test_ray_versions_table_is_listed_in_the_docs_and_used_by_the_rules():
    page = (ROOT / "docs/admission.md").read_text()
    assert ray_versions.markdown() in page
    from ray_tpu_gke import admission

    assert admission.ray_autoscaler_accelerators("2.55.0") == tuple(ray_versions.autoscaler_tpu_generations("2.55.0"))
    assert "tpu7x" not in admission.ray_autoscaler_accelerators("2.55.1")
    assert "tpu7x" in admission.ray_autoscaler_accelerators(ray_versions.ray_feature("autoscaler-tpu7x").since)
    assert ray_versions.ray_has("2.58.0", "max-preemption-failures") and \
        not ray_versions.ray_has("2.57.1", "max-preemption-failures")


# --- pods of one Ray cluster reach each other across slices ----------------------------------------------------------


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_multislice_pods_of_one_cluster_reach_each_other_across_slices(stack):
    from helpers import plan_of

    resources = [(s["newState"]["type"], s["newState"]["name"], s["newState"]["inputs"])
                 for s in plan_of(stack)["steps"]]
    assert multislice.cross_slice_blockers(resources) == []
    # The stack's VPC denies all other ingress, below GKE's own allow rules for in-cluster traffic.
    denies = [inputs for type_, _, inputs in resources if type_ == "gcp:compute/firewall:Firewall"]
    assert denies and all(d["priority"] > multislice.GKE_POD_ALLOW_PRIORITY for d in denies)


def test_multislice_blockers_are_found():
    deny = ("gcp:compute/firewall:Firewall", "lockdown", {"direction": "INGRESS", "priority": 900,
                                                          "denies": [{"protocol": "all"}]})
    policy = ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "default-deny", {"spec": {"podSelector": {}}})
    assert len(multislice.cross_slice_blockers([deny, policy])) == 2


def test_multislice_objects_say_so_in_the_plan_json():
    config = parse_stack_config(two_slice_job(), "test")
    annotations = manifest_of(config)["metadata"]["annotations"]
    assert annotations[multislice.ANNOTATION] == "tpu: 2 slices of v6e-16 x 16 chips = 32 chips"
    single = parse_stack_config(two_slice_job(replicas=1), "test")
    assert multislice.ANNOTATION not in manifest_of(single)["metadata"]["annotations"]


def test_every_ray_pod_of_a_ray_that_drains_gets_the_longer_grace_period():
    values = minimal_values(cpuPools=[{"name": "prep", "zone": "us-east5-b"}], rayClusters=[
        {"name": "train", "rayVersion": "2.57.0", "image": "rayproject/ray:2.57.0-py311",
         "workerGroups": [{"name": "tpu", "slice": "v6e-4"}, {"name": "prep", "cpuPool": "prep"}]}])
    spec = manifest_of(parse_stack_config(values, "test"), "ray_clusters")["spec"]
    pods = [spec["headGroupSpec"]] + spec["workerGroupSpecs"]
    assert [p["template"]["spec"]["terminationGracePeriodSeconds"] for p in pods] == [60, 60, 60]
    on_ray(values["ray-tpu-gke:rayClusters"][0], "2.56.0")  # no drain: CPU pods keep Kubernetes' default
    spec = manifest_of(parse_stack_config(values, "test"), "ray_clusters")["spec"]
    pods = [spec["headGroupSpec"]] + spec["workerGroupSpecs"]
    assert [p["template"]["spec"].get("terminationGracePeriodSeconds") for p in pods] == [None, 60, None]


def test_multislice_smoke_test_entrypoints_are_checked_against_the_group_they_name(tmp_path):
    smoke = "python -m workloads.tpu_smoke --generation v6e --topology {} --hosts {} --chips-per-host 4 --group {} " \
            "--slices 2"
    values = two_slice_job(entrypoint=smoke.format("4x4", 4, "tpu"))
    assert entrypoints.problems(parse_stack_config(values, "test")) == []
    values["ray-tpu-gke:rayJobs"][0]["entrypoint"] = smoke.format("4x4", 4, "gpu")
    (found,) = _load(tmp_path, values)
    assert found == "ray-tpu-gke:rayJobs[0].entrypoint: --group gpu is not a TPU worker group of pretrain; allowed: tpu"
    values["ray-tpu-gke:rayJobs"][0]["entrypoint"] = smoke.format("2x4", 2, "tpu")
    found = _load(tmp_path, values)
    assert len(found) == 2 and "--topology 2x4 contradicts group tpu on v6e-16" in found[0]
    assert "--hosts 2 contradicts group tpu on v6e-16" in found[1]
    # What the entrypoint leaves out, the head's $SLICE_* says (the job's cluster has one TPU group).
    values["ray-tpu-gke:rayJobs"][0]["entrypoint"] = "python -m workloads.tpu_smoke --generation v6e --slices 1"
    assert entrypoints.problems(parse_stack_config(values, "test")) == []
    values["ray-tpu-gke:rayJobs"][0]["entrypoint"] = "python -m workloads.tpu_smoke --generation v5e --slices 1"
    (found,) = _load(tmp_path, values)
    assert "--generation v5e contradicts group tpu on v6e-16" in found
