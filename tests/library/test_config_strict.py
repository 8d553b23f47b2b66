"""Nothing silently ignored or overridden (issue #17): one spelling per key, values a service would refuse, one pass."""

import pytest
from helpers import minimal_values, one_problem, problems

from plan import harness
from ray_tpu_gke import admission
from ray_tpu_gke.spec.problems import ConfigError


def test_snake_case_is_not_a_second_spelling():
    values = minimal_values()
    values["ray-tpu-gke:tpuSlices"][0]["machine_type"] = "c"
    problem = one_problem(values)
    assert problem.startswith("ray-tpu-gke:tpuSlices[0].machine_type: unknown key") and "machineType" in problem
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["deletion_protection"] = False
    assert one_problem(values).startswith("ray-tpu-gke:cluster.deletion_protection: unknown key")


@pytest.mark.parametrize("key", ["Ray-Tpu-Gke:rayClusters", " ray-tpu-gke:cluster", "ray-tpu-gke :team",
                                 "aws:region", "gcp:project "])
def test_keys_of_other_spellings_or_namespaces_are_refused(key):
    values = minimal_values()
    values[key] = []
    assert one_problem(values).startswith(f"{key}: unknown key")


@pytest.mark.parametrize("path, value, fragment", [
    (("cluster", "network", "podsCidr"), "10.0.0.0", "prefix length"),
    (("cluster", "network", "masterCidr"), "172.16.0.0/24", "/28"),
    (("cluster", "name"), "ray-tpu\n", "DNS label"),
    (("cluster", "minMasterVersion"), "1.\u0663\u0664", "GKE version"),
    (("cluster", "systemPool", "diskSizeGb"), 10**9, "less than or equal to 65536"),
    (("cluster", "systemPool", "machineType"), "e2-medium", "at least 2 vCPUs"),
    (("rayClusters", 0, "image"), "a b", "image reference"),
    (("rayClusters", 0, "namespace"), "kube-system", "namespace of Kubernetes itself"),
    (("rayClusters", 0, "head", "cpu"), "lots", "Kubernetes quantity"),
    (("rayClusters", 0, "workerGroups", 0, "replicas"), 2**31, "less than or equal to 2147483647"),
    (("tpuSlices", 0, "count"), 1_000_000, "less than or equal to 200"),
])
def test_values_a_service_would_refuse(path, value, fragment):
    values = minimal_values()
    target = values[f"ray-tpu-gke:{path[0]}"]
    for part in path[1:-1]:
        target = target.setdefault(part, {}) if isinstance(part, str) else target[part]
    target[path[-1]] = value
    problem = one_problem(values)
    assert fragment in problem, problem


def test_system_pool_minimum_above_its_maximum():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["systemPool"] = {"minNodes": 5}
    assert one_problem(values).startswith("ray-tpu-gke:cluster.systemPool.minNodes: 5 exceeds maxNodes 3")


def test_ray_objects_whose_names_join_to_one_resource():
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "count": 2}])
    values["ray-tpu-gke:rayClusters"] = [
        {"name": "c", "namespace": "a-b", "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]},
        {"name": "b-c", "namespace": "a", "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}]
    assert "a/b-c and a-b/c both become the Pulumi resource a-b-c" in one_problem(values)


@pytest.mark.parametrize("region", [None, False, "", "us east"])
def test_region_must_be_a_region_in_both_validations(region):
    values = minimal_values()
    values["gcp:region"] = region
    assert one_problem(values).startswith("gcp:region: ")
    with pytest.raises(ConfigError):  # the program, as the CLI hands it the config, refuses it too
        harness.run_program("test", values)


@pytest.mark.parametrize("cluster", ["a", "ab", "ray-tpu-platform-production-east", "x" * 40,
                                     "ray-tpu-platform-production-ea"])
def test_service_account_ids_are_always_valid_and_distinct(cluster):
    ids = {admission.service_account_id(cluster, purpose) for purpose in ("nodes", "ray")}
    assert len(ids) == 2
    for account in ids:
        assert 6 <= len(account) <= 30 and account[0].isalpha() and not account.endswith("-"), account
    other = admission.service_account_id(cluster + "-b", "nodes") if len(cluster) < 38 else None
    assert other not in ids


def test_every_problem_of_a_config_at_once():
    values = minimal_values(rayClusters=[{
        "name": "train", "head": {"cpu": "lots"},
        "workerGroups": [{"name": "tpu", "slice": "nope", "replicas": 1, "minReplicas": 2},
                         {"name": "tpu", "slice": "v6e-4"}]}])
    values["ray-tpu-gke:cluster"].update(mode="serverless", releaseChannel="NIGHTLY")
    found = problems(values)
    paths = sorted(p.split(": ")[0] for p in found)
    assert paths == sorted([
        "ray-tpu-gke:cluster.mode", "ray-tpu-gke:cluster.releaseChannel", "ray-tpu-gke:rayClusters[0].head.cpu",
        "ray-tpu-gke:rayClusters[0].workerGroups[0].slice", "ray-tpu-gke:rayClusters[0].workerGroups[0].minReplicas",
        "ray-tpu-gke:rayClusters[0].workerGroups[1].name"]), found


def test_a_zone_problem_lists_the_zones_that_offer_the_generation():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["location"] = "us-east5"
    problem = one_problem(values)
    assert "required for a regional cluster" in problem and "us-east5-a, us-east5-b" in problem


def test_demand_names_who_asks():
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"].append({"name": "other", "workerGroups": [{"name": "g", "slice": "v6e-4"}]})
    problem = one_problem(values)
    assert "ray/train group tpu: 1; ray/other group g: 1" in problem
