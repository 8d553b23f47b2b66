"""Every config rule: each bad input is refused with its full key path, the value given and what is allowed."""

import copy

import pytest
from helpers import minimal_values, one_problem, problems

from ray_tpu_gke.spec.config import parse_stack_config


def slices(*entries):
    return [{"name": "v6e-4", "generation": "v6e", "topology": "2x2", **e} for e in entries]


def test_minimal_config_is_valid_and_typed():
    config = parse_stack_config(minimal_values(), "dev")
    assert config.cluster.mode == "standard"
    assert config.tpu_slices[0].shape.hosts == 1
    assert config.gke_version is None  # unpinned: the release channel chooses
    assert config.gke_version_need.version == "1.31.2-gke.1115000"  # checked against the channel at deploy time
    assert config.labels["environment"] == "dev"


def test_unknown_keys_are_errors_at_every_level():
    values = minimal_values()
    values["ray-tpu-gke:clsuter"] = {}
    values["ray-tpu-gke:cluster"] = {**values["ray-tpu-gke:cluster"], "nmae": "x"}
    values["ray-tpu-gke:tpuSlices"] = slices({"topolgy": "2x2"})
    found = problems(values)
    assert any(p.startswith("ray-tpu-gke:clsuter: unknown key") and "ray-tpu-gke:cluster" in p for p in found)
    assert any(p.startswith("ray-tpu-gke:cluster.nmae: unknown key") and "name, mode" in p for p in found)
    assert any(p.startswith("ray-tpu-gke:tpuSlices[0].topolgy: unknown key") and "topology" in p for p in found)


def test_every_problem_is_reported_at_once():
    values = minimal_values(
        tpuSlices=[{"name": "A", "generation": "v7", "topology": "2x2", "count": -1}],
        rayClusters=[{"name": "train", "workerGroups": [{"name": "tpu", "slice": "nope", "replicas": 1}]}],
    )
    values["ray-tpu-gke:cluster"]["mode"] = "serverless"
    found = problems(values)
    paths = {p.split(":", 2)[0] + ":" + p.split(":", 2)[1] for p in found}
    assert {"ray-tpu-gke:tpuSlices[0].name", "ray-tpu-gke:tpuSlices[0].generation", "ray-tpu-gke:tpuSlices[0].count",
            "ray-tpu-gke:cluster.mode"} <= paths, found


@pytest.mark.parametrize("key,value,fragment", [
    ("mode", "serverless", "'standard' or 'autopilot'"),
    ("releaseChannel", "NIGHTLY", "'RAPID', 'REGULAR' or 'STABLE'"),
    ("location", "mars", "zone"),
    ("name", "Ray_TPU", "DNS label"),
    ("name", "a" * 41, "at most 40"),
    ("deletionProtection", "yes", "boolean"),
    ("minMasterVersion", "latest", "a minor such as 1.34"),
    ("rbacSecurityGroup", "admins@acme.example", "gke-security-groups@"),
])
def test_cluster_fields(key, value, fragment):
    values = minimal_values()
    values["ray-tpu-gke:cluster"][key] = value
    problem = one_problem(values)
    assert problem.startswith(f"ray-tpu-gke:cluster.{key}: ")
    assert fragment in problem


def test_required_keys():
    values = minimal_values()
    del values["gcp:project"]
    del values["ray-tpu-gke:cluster"]["location"]
    found = problems(values)
    assert any(p.startswith("gcp:project: required") for p in found)
    assert "ray-tpu-gke:cluster.location: required key is missing" in found
    assert problems({"gcp:project": "acme-ml-test"}) == [
        "ray-tpu-gke:cluster: required: the GKE cluster (name, location, ...)"]


def test_topology_must_be_valid_for_the_generation():
    problem = one_problem(minimal_values(tpuSlices=slices({"topology": "4x2"})))
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].topology: \"4x2\" is not a v6e topology; allowed: 1x1, 2x2")
    problem = one_problem(minimal_values(tpuSlices=slices({"generation": "v5p", "topology": "4x4x6"})))
    assert "multiples of 4" in problem


def test_machine_type_must_fit_generation_and_topology():
    problem = one_problem(minimal_values(tpuSlices=slices({"machineType": "ct5lp-hightpu-4t"})))
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].machineType: \"ct5lp-hightpu-4t\"")
    assert "allowed: ct6e-standard-4t" in problem


def test_gke_version_must_cover_every_generation_and_the_add_on():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.30.5-gke.1000"
    problem = one_problem(values)
    assert problem.startswith("ray-tpu-gke:cluster.minMasterVersion: \"1.30.5-gke.1000\"")
    assert "1.31.2-gke.1115000 or later" in problem
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.31.2-gke.1115000"
    parse_stack_config(values, "test")


@pytest.mark.parametrize("group,path,fragment", [
    ({"replicas": 2, "minReplicas": 3}, "minReplicas", "exceeds replicas"),
    ({"replicas": 2, "maxReplicas": 1}, "maxReplicas", "below replicas"),
    ({"replicas": -1}, "replicas", "greater than or equal to 0"),
    ({"minReplicas": -1}, "minReplicas", "greater than or equal to 0"),
    ({"slice": "v6e-16"}, "slice", "not a tpuSlices name; allowed: v6e-4"),
    ({"name": "TPU"}, "name", "DNS label"),
])
def test_worker_group_rules(group, path, fragment):
    values = minimal_values()
    values["ray-tpu-gke:tpuSlices"][0]["count"] = 3
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0].update(group)
    problem = one_problem(values)
    assert problem.startswith(f"ray-tpu-gke:rayClusters[0].workerGroups[0].{path}: "), problem
    assert fragment in problem


def test_standard_mode_demand_must_fit_the_provisioned_slices():
    values = minimal_values(rayServices=[{"name": "serve", "serveConfig": {"applications": []},
                                          "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}])
    problem = one_problem(values)
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].count: 1 slice(s) of v6e-4, but the Ray objects ask for 3")
    assert "ray/serve group tpu (twice: NewCluster upgrades): 2" in problem and "ray/train group tpu: 1" in problem
    values["ray-tpu-gke:rayServices"][0]["upgradeStrategy"] = "None"
    assert "ask for 2 at once" in one_problem(values)
    values["ray-tpu-gke:tpuSlices"][0]["count"] = 2
    parse_stack_config(values, "test")
    values["ray-tpu-gke:tpuSlices"][0]["count"] = 1
    # Autopilot provisions on demand: no pool count to exceed
    values["ray-tpu-gke:cluster"].update(mode="autopilot", location="us-east5")
    parse_stack_config(values, "test")


def test_names_are_unique():
    values = minimal_values(tpuSlices=slices({}, {}))
    assert one_problem(values).startswith("ray-tpu-gke:tpuSlices[1].name: \"v6e-4\" is used by an earlier slice")
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"].append(copy.deepcopy(values["ray-tpu-gke:rayClusters"][0]))
    values["ray-tpu-gke:tpuSlices"][0]["count"] = 2
    assert one_problem(values).startswith("ray-tpu-gke:rayClusters[1].name: \"train\" is used twice")
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"].append({"name": "tpu", "slice": "v6e-4", "replicas": 0})
    values["ray-tpu-gke:rayClusters"][0]["autoscaling"] = {"enabled": True}
    assert one_problem(values).startswith("ray-tpu-gke:rayClusters[0].workerGroups[1].name")


def test_kubernetes_names_are_dns_labels():
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0]["namespace"] = "Ray_NS"
    assert one_problem(values).startswith("ray-tpu-gke:rayClusters[0].namespace: \"Ray_NS\" is invalid")


def test_reservation_rules():
    problem = one_problem(minimal_values(tpuSlices=slices({"capacity": "reservation"})))
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].reservation: required when capacity is reservation")
    problem = one_problem(minimal_values(tpuSlices=slices({"capacity": "spot", "reservation": "r1"})))
    assert "only allowed with capacity reservation" in problem
    problem = one_problem(minimal_values(tpuSlices=slices({"capacity": "reservation", "reservation": "projects/x"})))
    assert "projects/<project>/reservations/<name>" in problem
    parse_stack_config(minimal_values(tpuSlices=slices(
        {"capacity": "reservation", "reservation": "projects/acme-capacity/reservations/v6e-pool"})), "test")


def test_capacity_enum():
    problem = one_problem(minimal_values(tpuSlices=slices({"capacity": "preemptible"})))
    assert "'onDemand', 'spot', 'reservation' or 'flexStart'" in problem


def test_flex_start_needs_autoscaling_and_multi_host_scales_atomically():
    config = parse_stack_config(minimal_values(tpuSlices=slices({"capacity": "flexStart"})), "t")
    assert config.tpu_slices[0].autoscaled  # flex-start implies autoscaling from 0
    problem = one_problem(minimal_values(tpuSlices=slices({"capacity": "flexStart", "autoscaling": False})))
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].autoscaling: flexStart capacity needs autoscaling")
    assert parse_stack_config(minimal_values(tpuSlices=slices({"autoscaling": True})), "t").tpu_slices[0].autoscaled
    values = minimal_values(tpuSlices=slices({"topology": "4x4", "autoscaling": {"minNodes": 2}}))
    problem = one_problem(values)
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].autoscaling.minNodes: 2 would split a 4-host slice")
    parse_stack_config(minimal_values(tpuSlices=slices({"topology": "4x4", "autoscaling": {"minNodes": 4}})), "t")


def test_ray_job_rules():
    job = {"name": "job", "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}
    values = minimal_values(rayJobs=[job])
    assert one_problem(values) == "ray-tpu-gke:rayJobs[0].entrypoint: required key is missing"
    values = minimal_values(rayJobs=[{**job, "entrypoint": "python x.py", "shutdownAfterJobFinishes": False,
                                      "ttlSecondsAfterFinished": 60}], rayClusters=[])
    assert one_problem(values).startswith("ray-tpu-gke:rayJobs[0].ttlSecondsAfterFinished: 60 is only allowed with")


def test_a_suspended_ray_job_needs_its_own_cluster_shut_down_after_it():
    # KubeRay v1.7.0 validation.go ValidateRayJobSpec refuses both; the plan says so before registering anything.
    job = {"name": "job", "entrypoint": "python x.py", "suspend": True,
           "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}
    problem = one_problem(minimal_values(rayJobs=[{**job, "shutdownAfterJobFinishes": False}], rayClusters=[]))
    assert problem.startswith("ray-tpu-gke:rayJobs[0].suspend: true is only allowed with shutdownAfterJobFinishes")
    assert "kuberay-rayjob-suspend-shutdown" in problem
    cluster = {"name": "rc", "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}
    on_cluster = {"name": "job", "entrypoint": "python x.py", "suspend": True, "cluster": "rc",
                  "shutdownAfterJobFinishes": False}
    problem = one_problem(minimal_values(rayJobs=[on_cluster], rayClusters=[cluster]))
    assert problem.startswith('ray-tpu-gke:rayJobs[0].suspend: true is not allowed with cluster "rc"')
    problem = one_problem(minimal_values(rayJobs=[{**job, "waitForReady": True}], rayClusters=[]))
    assert problem.startswith("ray-tpu-gke:rayJobs[0].suspend: true is not allowed with waitForReady: true")
    assert parse_stack_config(minimal_values(rayJobs=[job], rayClusters=[]), "t").ray_jobs[0].suspend is True


def test_serve_config_must_be_a_mapping():
    service = {"name": "serve", "serveConfig": "applications: []",
               "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 0}]}
    problem = one_problem(minimal_values(rayServices=[service]))
    assert problem.startswith("ray-tpu-gke:rayServices[0].serveConfig: \"applications: []\" is invalid")
    assert "dictionary" in problem


def test_zones_must_be_in_the_cluster_region_and_regional_clusters_need_one():
    problem = one_problem(minimal_values(tpuSlices=slices({"zone": "us-central1-b"})))
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].zone: \"us-central1-b\" is outside the cluster's region")
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["location"] = "us-east5"
    assert one_problem(values).startswith("ray-tpu-gke:tpuSlices[0].zone: required for a regional cluster")


def test_unknown_zone_for_a_generation_is_only_a_warning():
    values = minimal_values()
    values["gcp:region"] = "europe-west1"
    values["ray-tpu-gke:cluster"]["location"] = "europe-west1-b"
    config = parse_stack_config(values, "test")
    assert config.warnings and "not known to offer TPU v6e" in config.warnings[0]


def test_autopilot_refuses_node_pool_settings():
    values = minimal_values(tpuSlices=slices({"autoscaling": {"enabled": True}}))
    values["ray-tpu-gke:cluster"].update(mode="autopilot", location="us-east5")
    assert one_problem(values).startswith("ray-tpu-gke:tpuSlices[0].autoscaling: Autopilot has no node pools")


def test_labels_must_be_gcp_label_values():
    problem = one_problem(minimal_values(team="ML Platform"))
    assert problem.startswith("ray-tpu-gke:team: \"ML Platform\" is invalid: must be a label value")


def test_lists_must_be_lists():
    assert one_problem(minimal_values(tpuSlices={"name": "x"})).startswith("ray-tpu-gke:tpuSlices: must be a list")


def test_strict_types_no_silent_coercion():
    values = minimal_values(tpuSlices=slices({"count": "2"}))
    assert one_problem(values).startswith("ray-tpu-gke:tpuSlices[0].count: \"2\" is invalid")
    values = minimal_values(tpuSlices=slices({"count": True}))
    assert one_problem(values).startswith("ray-tpu-gke:tpuSlices[0].count: true is invalid")


def test_autopilot_ironwood_needs_its_own_newer_version():
    values = minimal_values(tpuSlices=[{"name": "iw", "generation": "tpu7x", "topology": "2x2x1"}],
                            rayClusters=[])
    values["ray-tpu-gke:cluster"].update(minMasterVersion="1.34.0-gke.2201000")
    parse_stack_config(values, "test")  # enough for Standard
    values["ray-tpu-gke:cluster"].update(mode="autopilot", location="us-east5")
    problem = one_problem(values)
    assert problem.startswith("ray-tpu-gke:cluster.minMasterVersion: \"1.34.0-gke.2201000\" is older than TPU tpu7x "
                              "in Autopilot")
    assert "1.34.1-gke.3084001 or later" in problem
    del values["ray-tpu-gke:cluster"]["minMasterVersion"]
    assert parse_stack_config(values, "test").gke_version_need.version == "1.34.1-gke.3084001"
