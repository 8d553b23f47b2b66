"""Issue #22.10: inputs a Cloud service refuses are refused before any resource, each line naming the stack key, the
value and what is allowed (never a component argument path)."""

import functools
import re
from pathlib import Path

import pytest
import helpers
from helpers import minimal_values, one_problem

from ray_tpu_gke import admission
from ray_tpu_gke.spec.config import parse_stack_config


# Every problem line of this module names the stack key, on one line, never a component argument path.
problems = functools.partial(helpers.problems, one_line=True, stack_keys=True)
one = functools.partial(one_problem, one_line=True, stack_keys=True)


@pytest.mark.parametrize("location, fragment", [
    ("us central1", "without spaces"),
    ("Mars", "not a Cloud Storage location; allowed: US, EU, ASIA, ASIA1"),
    ("us-central1-a", "is a zone"),
    ("us-central2", "not a Cloud Storage location"),  # a TPU-only Compute region
])
def test_a_bucket_location_cloud_storage_does_not_have_is_refused(location, fragment):
    line = one(minimal_values(storage={"location": location}), "ray-tpu-gke:storage.location")
    assert f'"{location}"' in line and fragment in line


@pytest.mark.parametrize("location", ["US", "eu", "NAM4", "us-central1", "US-EAST5", "asia1"])
def test_known_locations_pass_in_any_case(location):
    parse_stack_config(minimal_values(storage={"location": location}), "test")


@pytest.mark.parametrize("name, fragment", [
    ("googdata", 'begins with "goog"'),
    ("acme-google-ray", 'contains "google"'),
    ("acme-g00gle-ray", 'contains "google"'),
    ("acme-goo-gle", 'contains "google"'),
    ("acme-gooogle", 'contains "google"'),
    ("192.168.10.1", "IP address"),
    ("Acme", "lowercase letters"),
])
def test_a_bucket_name_cloud_storage_forbids_is_refused(name, fragment):
    line = one(minimal_values(storage={"bucketName": name}), "ray-tpu-gke:storage.bucketName")
    assert fragment in line


def test_the_derived_bucket_name_is_checked_too():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["name"] = "google-tpu"
    line = one(values, "ray-tpu-gke:storage.bucketName")
    assert '"acme-ml-test-google-tpu-ray"' in line and "set a name" in line
    values["ray-tpu-gke:storage"] = {"bucketName": "acme-tpu-ray"}
    parse_stack_config(values, "test")


@pytest.mark.parametrize("name", ["goggles-ray", "goodlegs", "acme-ml-dev-ray"])
def test_names_that_only_look_alike_pass(name):
    parse_stack_config(minimal_values(storage={"bucketName": name}), "test")


def test_an_unset_location_in_a_region_without_buckets_is_a_warning():
    values = minimal_values(tpuSlices=[{"name": "v4-8", "generation": "v4", "topology": "2x2x1"}],
                            rayClusters=[{"name": "train", "workerGroups": [{"name": "tpu", "slice": "v4-8"}]}])
    values["gcp:region"] = "us-central2"
    values["ray-tpu-gke:cluster"]["location"] = "us-central2-b"
    config = parse_stack_config(values, "test")
    (warning,) = [w for w in config.warnings if "storage.location" in w]
    assert warning.startswith("ray-tpu-gke:storage.location: unset") and "us-central2" in warning


@pytest.mark.parametrize("entrypoint", ["", "   ", "\t\n"])
def test_a_blank_entrypoint_is_refused(entrypoint):
    values = minimal_values(rayJobs=[{"name": "job", "entrypoint": entrypoint,
                                      "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}])
    values.pop("ray-tpu-gke:rayClusters")
    assert "ray-tpu-gke:rayJobs[0].entrypoint" in one(values, "ray-tpu-gke:rayJobs[0].entrypoint")


@pytest.mark.parametrize("name", ["a", "ab", "r" * 40, "a" * 16 + "-" + "b" * 23, "x" * 26 + "-yz"])
def test_service_account_ids_of_any_cluster_name_are_valid_and_distinct(name):
    ids = [admission.service_account_id(name, purpose) for purpose in admission.SERVICE_ACCOUNT_PURPOSES]
    for account in ids:
        admission.check_service_account_id(account)
    assert len(set(ids)) == len(ids)
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["name"] = name
    parse_stack_config(values, "test")


def test_the_service_account_id_rule_refuses_what_iam_refuses():
    for account in ("a-ray", "x" * 31, "9abcdefg", "abcdefg-"):
        with pytest.raises(ValueError, match="6 to 30 characters"):
            admission.check_service_account_id(account)


@pytest.mark.parametrize("key, machine", [
    ("systemPool", "c3-standard-2"), ("systemPool", "e2-standard-3"), ("cpuPool", "n4-standard-6"),
    ("cpuPool", "n2-highcpu-128"), ("cpuPool", "n2d-highmem-224"),
])
def test_machine_types_compute_engine_does_not_have_are_refused(key, machine):
    values = minimal_values()
    if key == "systemPool":
        values["ray-tpu-gke:cluster"]["systemPool"] = {"machineType": machine}
        path = "ray-tpu-gke:cluster.systemPool.machineType"
    else:
        values["ray-tpu-gke:cpuPools"] = [{"name": "prep", "machineType": machine}]
        path = "ray-tpu-gke:cpuPools[0].machineType"
    line = one(values, path)
    series = machine.rsplit("-", 1)[0]
    assert f'"{machine}"' in line and f"allowed sizes: {series}-" in line


def test_every_predefined_size_is_accepted():
    for machine in ("c3-standard-4", "c3-highcpu-176", "e2-highmem-16", "n2-highmem-128", "n2d-standard-224",
                    "n4-highcpu-80"):
        admission.check_cpu_machine_type(machine)
    assert admission.cpu_machine("n2-highmem-128") == (128, 864.0)
    assert admission.cpu_machine("n4-highcpu-8") == (8, 16.0)


@pytest.mark.parametrize("key, cidr, other", [
    ("podsCidr", "10.0.8.0/21", "subnetCidr"),
    ("servicesCidr", "10.0.0.0/24", "subnetCidr"),
    ("servicesCidr", "10.16.0.0/20", "podsCidr"),
])
def test_secondary_ranges_overlapping_the_subnet_are_refused(key, cidr, other):
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["network"] = {key: cidr}
    line = one(values, f"ray-tpu-gke:cluster.network.{key}")
    assert f'"{cidr}" overlaps {other}' in line


def test_an_existing_network_names_its_subnetwork_and_ranges_with_stack_keys():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["network"] = {"network": "shared-vpc"}
    found = problems(values)
    assert sorted(p.split(":", 2)[1] for p in found) == [
        "cluster.network.podsRangeName", "cluster.network.servicesRangeName", "cluster.network.subnetwork"]
    values["ray-tpu-gke:cluster"]["network"] = {"podsRangeName": "pods"}
    assert "only allowed with network" in one(values, "ray-tpu-gke:cluster.network.podsRangeName")


def test_node_pools_past_200_are_counted_over_every_pool_and_warned_about_not_refused():
    # GKE node auto-provisioning, Limitations: past 200 node pools autoscaling may be slower; no quota refuses them.
    slices = [{"name": name, "generation": "v6e", "topology": "2x2", "count": 100} for name in ("v6e-4", "more")]
    values = minimal_values(tpuSlices=slices, cpuPools=[{"name": "prep", "machineType": "n2-standard-8"}])
    (warning,) = [w for w in parse_stack_config(values, "test").warnings if "node pools" in w]
    assert warning.startswith("ray-tpu-gke:tpuSlices: 202 node pools in one cluster (system 1, tpuSlices 200, "
                              "gpuPools 0, cpuPools 1): past 200, GKE's autoscaling may take longer")
    values["ray-tpu-gke:tpuSlices"][1]["count"] = 98
    assert not [w for w in parse_stack_config(values, "test").warnings if "node pools" in w]  # 1 + 198 + 1 = 200


@pytest.mark.parametrize("region, fragment", [
    ("us-central1-a", "is a zone; a rate applies to a region: allowed: us-central1"),
    ("US-CENTRAL1", "regions are lower case; allowed: us-central1"),
    ("us-middle9", "is not a Google Cloud region"),
])
def test_a_rate_region_that_is_no_region_is_refused(region, fragment):
    rate = {"kind": "tpu", "name": "v6e", "capacity": "reservation", "hourly": 1.5, "region": region}
    line = one(minimal_values(pricing={"rates": [rate]}), "ray-tpu-gke:pricing.rates[0].region")
    assert fragment in line


def test_two_rates_for_one_item_are_refused():
    rate = {"kind": "tpu", "name": "v6e", "capacity": "reservation", "hourly": 1.5, "region": "us-east5"}
    line = one(minimal_values(pricing={"rates": [rate, {**rate, "hourly": 2.0}]}), "ray-tpu-gke:pricing.rates[1]")
    assert "rates[0] is the first" in line
    parse_stack_config(minimal_values(pricing={"rates": [rate, {**rate, "region": "us-central1"}]}), "test")


@pytest.mark.parametrize("key, fragment", [
    ("gcp:storage", "allowed: ray-tpu-gke:storage"),
    ("gcp:pricing", "allowed: ray-tpu-gke:pricing"),
    ("gcp:projectt", "allowed: accessToken"),
])
def test_gcp_keys_that_are_no_provider_setting_are_refused(key, fragment):
    values = minimal_values()
    values[key] = {"x": 1}
    line = one(values, key)
    assert line.startswith(f"{key}: unknown key: no setting of the gcp provider") and fragment in line


def test_provider_settings_pass():
    values = minimal_values()
    values.update({"gcp:zone": "us-east5-b", "gcp:defaultLabels": {"team": "ml"}, "gcp:computeCustomEndpoint": "x"})
    parse_stack_config(values, "test")


def test_the_provider_key_list_is_the_installed_providers():
    import pulumi_gcp

    from ray_tpu_gke.spec.provider import GCP_PROVIDER_KEYS

    source = (Path(pulumi_gcp.__file__).parent / "config" / "vars.py").read_text()
    assert GCP_PROVIDER_KEYS == set(re.findall(r"__config__\.get[a-z_]*\('([A-Za-z0-9]+)'", source))
