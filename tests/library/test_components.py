"""Mock tests of the components: what the plan registers for each mode, capacity type and slice shape."""

import pytest

from helpers import CLUSTER, NODE_POOL, minimal_values, plan_of, run, steps_of_type



def inputs(step):
    return step["newState"]["inputs"]


def by_name(plan, type_):
    return {s["newState"]["name"]: s for s in steps_of_type(plan, type_)}


def every_shape_values(mode="standard"):
    """One slice of every capacity type, single- and multi-host shapes of each generation, autoscaling on and off."""
    slices = [
        {"name": "v4-1", "generation": "v4", "topology": "2x2x1", "zone": "us-central1-a"},
        {"name": "v4-16", "generation": "v4", "topology": "4x4x4", "zone": "us-central1-a", "capacity": "spot"},
        {"name": "v5e-1", "generation": "v5e", "topology": "1x1", "zone": "us-central1-a"},
        {"name": "v5e-16", "generation": "v5e", "topology": "4x4", "zone": "us-central1-a", "capacity": "flexStart",
         "autoscaling": {"enabled": True}},
        {"name": "v5p-1", "generation": "v5p", "topology": "2x2x1", "zone": "us-central1-a",
         "capacity": "reservation", "reservation": "v5p-res"},
        {"name": "v5p-32", "generation": "v5p", "topology": "2x4x4", "zone": "us-central1-a",
         "capacity": "reservation", "reservation": "projects/acme-capacity/reservations/v5p"},
        {"name": "v6e-8", "generation": "v6e", "topology": "2x4", "zone": "us-central1-b", "count": 2},
        {"name": "v6e-8-two", "generation": "v6e", "topology": "2x4", "machineType": "ct6e-standard-4t",
         "zone": "us-central1-b", "autoscaling": {"enabled": True, "minNodes": 2}},
        {"name": "tpu7x-1", "generation": "tpu7x", "topology": "2x2x1", "zone": "us-central1-c", "capacity": "spot"},
        {"name": "tpu7x-64", "generation": "tpu7x", "topology": "4x4x4", "zone": "us-central1-c",
         "capacity": "flexStart", "autoscaling": {"enabled": True}},
    ]
    if mode == "autopilot":
        for s in slices:
            s.pop("autoscaling", None)
    groups = [{"name": s["name"], "slice": s["name"], "replicas": 1} for s in slices]
    values = minimal_values(tpuSlices=slices, rayClusters=[{"name": "all", "workerGroups": groups}])
    values["gcp:region"] = "us-central1"
    values["ray-tpu-gke:cluster"].update(location="us-central1", mode=mode, minMasterVersion="1.34")
    return values


@pytest.fixture(scope="module")
def standard():
    return run(every_shape_values("standard"))


@pytest.fixture(scope="module")
def autopilot():
    return run(every_shape_values("autopilot"))


def test_one_pool_per_slice_sized_from_the_catalogue(standard):
    pools = by_name(standard, NODE_POOL)
    expected = {"v4-1-0": ("ct4p-hightpu-4t", 1), "v4-16-0": ("ct4p-hightpu-4t", 16),
                "v5e-1-0": ("ct5lp-hightpu-1t", 1), "v5p-1-0": ("ct5p-hightpu-4t", 1),
                "v5p-32-0": ("ct5p-hightpu-4t", 8), "v6e-8-0": ("ct6e-standard-8t", 1),
                "v6e-8-1": ("ct6e-standard-8t", 1), "tpu7x-1-0": ("tpu7x-standard-4t", 1)}
    for name, (machine, hosts) in expected.items():
        pool = inputs(pools[name])
        assert pool["nodeConfig"]["machineType"] == machine
        assert pool["nodeCount"] == hosts
    assert set(pools) == set(expected) | {"v5e-16-0", "v6e-8-two-0", "tpu7x-64-0", "ray-tpu-system"}
    assert inputs(pools["v6e-8-1"])["nodeLocations"] == ["us-central1-b"]


def test_placement_multi_host_compact_with_topology_single_host_none(standard):
    pools = by_name(standard, NODE_POOL)
    assert inputs(pools["v4-16-0"])["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4x4"}
    assert inputs(pools["v6e-8-two-0"])["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x4"}
    for single in ("v4-1-0", "v5e-1-0", "v6e-8-0", "tpu7x-1-0"):
        assert "placementPolicy" not in inputs(pools[single])


def test_ironwood_multi_host_uses_a_high_throughput_workload_policy(standard):
    policies = steps_of_type(standard, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert len(policies) == 1
    policy = inputs(policies[0])
    assert policy["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"}
    pool = inputs(by_name(standard, NODE_POOL)["tpu7x-64-0"])
    assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": policy["name"]}


def test_capacity_types(standard):
    pools = {n: inputs(s) for n, s in by_name(standard, NODE_POOL).items()}
    assert pools["v4-16-0"]["nodeConfig"]["spot"] is True
    assert pools["v5p-1-0"]["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["v5p-res"]}
    assert pools["v5p-32-0"]["nodeConfig"]["reservationAffinity"]["values"] == [
        "projects/acme-capacity/reservations/v5p"]
    flex = pools["v5e-16-0"]
    assert flex["nodeConfig"]["flexStart"] is True
    assert flex["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert flex["management"]["autoRepair"] is False
    assert "spot" not in pools["v6e-8-0"]["nodeConfig"] and "reservationAffinity" not in pools["v6e-8-0"]["nodeConfig"]


def test_autoscaling_is_atomic_per_zone_never_total(standard):
    pools = {n: s for n, s in by_name(standard, NODE_POOL).items()}
    flex = inputs(pools["v5e-16-0"])
    assert flex["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    assert "nodeCount" not in flex and flex["initialNodeCount"] == 0
    assert "nodeCount" in pools["v5e-16-0"]["newState"]["options"]["ignoreChanges"]
    assert inputs(pools["v6e-8-two-0"])["autoscaling"]["minNodeCount"] == 2
    assert "autoscaling" not in inputs(pools["v4-16-0"])
    for name, pool in pools.items():
        autoscaling = inputs(pool).get("autoscaling", {})
        if name.endswith("system"):  # the system pool is sized in totals (admission rule gke-autoscaling-total-limits)
            assert set(autoscaling) == {"totalMinNodeCount", "totalMaxNodeCount", "locationPolicy"}
        else:
            assert "totalMinNodeCount" not in autoscaling and "totalMaxNodeCount" not in autoscaling


def test_tpu_pools_are_tainted_labelled_and_hardened(standard):
    for name, step in by_name(standard, NODE_POOL).items():
        node = inputs(step)["nodeConfig"]
        assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert node["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
        assert node["imageType"] == "COS_CONTAINERD"
        assert node["serviceAccount"].startswith("ray-tpu-nodes@")
        if name == "ray-tpu-system":
            continue
        assert node["taints"] == [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}]
        assert node["labels"]["ray-tpu-gke/slice"] == name.rsplit("-", 1)[0]
        assert inputs(step)["maxPodsPerNode"] == 16
        assert {"initialNodeCount", "placementPolicy.type"} <= set(step["newState"]["options"]["ignoreChanges"])


def test_ray_worker_groups_come_from_the_catalogue(standard):
    (cluster,) = steps_of_type(standard, "kubernetes:ray.io/v1:RayCluster")
    groups = {g["groupName"]: g for g in inputs(cluster)["spec"]["workerGroupSpecs"]}
    assert groups["v4-16"]["numOfHosts"] == 16
    assert groups["v6e-8-two"]["numOfHosts"] == 2
    worker = groups["v6e-8-two"]["template"]["spec"]
    container = worker["containers"][0]
    assert container["resources"]["requests"]["google.com/tpu"] == "4"
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert worker["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                      "cloud.google.com/gke-tpu-topology": "2x4", "ray-tpu-gke/slice": "v6e-8-two"}
    assert worker["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert {"containerPort": 8081, "name": "mxla"} in container["ports"]
    assert "ports" not in groups["v6e-8"]["template"]["spec"]["containers"][0]  # single host: no inter-host port


def test_ray_objects_depend_on_cluster_and_their_pools_and_use_its_provider(standard):
    (cluster,) = steps_of_type(standard, CLUSTER)
    (ray,) = steps_of_type(standard, "kubernetes:ray.io/v1:RayCluster")
    (provider,) = steps_of_type(standard, "pulumi:providers:kubernetes")
    deps = set(ray["newState"]["dependencies"])
    assert cluster["urn"] in deps
    assert {p["urn"] for p in steps_of_type(standard, NODE_POOL)} <= deps
    assert ray["newState"]["provider"] == provider["urn"]
    assert inputs(provider)["kubeconfig"] == "[secret]"


def test_autopilot_has_no_pools_and_selects_capacity(autopilot):
    assert steps_of_type(autopilot, NODE_POOL) == []
    (cluster,) = steps_of_type(autopilot, CLUSTER)
    assert inputs(cluster)["enableAutopilot"] is True
    assert "removeDefaultNodePool" not in inputs(cluster)
    (ray,) = steps_of_type(autopilot, "kubernetes:ray.io/v1:RayCluster")
    selectors = {g["groupName"]: g["template"]["spec"]["nodeSelector"] for g in inputs(ray)["spec"]["workerGroupSpecs"]}
    assert selectors["v4-16"]["cloud.google.com/gke-spot"] == "true"
    assert selectors["v5p-1"]["cloud.google.com/reservation-name"] == "v5p-res"
    assert selectors["v5p-1"]["cloud.google.com/reservation-affinity"] == "specific"
    assert selectors["v5e-16"]["cloud.google.com/compute-class"] == "v5e-16-flex-start"
    assert selectors["v6e-8"]["topology.kubernetes.io/zone"] == "us-central1-b"
    assert all("ray-tpu-gke/slice" not in s for s in selectors.values())
    classes = {inputs(s)["metadata"]["name"]: inputs(s) for s in
               steps_of_type(autopilot, "kubernetes:cloud.google.com/v1:ComputeClass")}
    assert set(classes) == {"v5e-16-flex-start", "tpu7x-64-flex-start"}
    priority = classes["tpu7x-64-flex-start"]["spec"]["priorities"][0]
    assert priority == {"tpu": {"type": "tpu7x", "count": 4, "topology": "4x4x4"}, "flexStart": {"enabled": True}}
    compute_class_urns = {s["urn"] for s in steps_of_type(autopilot, "kubernetes:cloud.google.com/v1:ComputeClass")}
    assert compute_class_urns <= set(ray["newState"]["dependencies"])


def test_cluster_is_hardened_with_the_ray_operator_add_on():
    plan = plan_of("prod")
    (cluster,) = steps_of_type(plan, CLUSTER)
    c = inputs(cluster)
    assert c["addonsConfig"]["rayOperatorConfigs"] == [{
        "enabled": True, "rayClusterLoggingConfig": {"enabled": True}, "rayClusterMonitoringConfig": {"enabled": True}}]
    assert c["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["workloadIdentityConfig"] == {"workloadPool": "acme-ml-prod.svc.id.goog"}
    assert c["masterAuth"]["clientCertificateConfig"] == {"issueClientCertificate": False}
    assert c["enableLegacyAbac"] is False and c["enableShieldedNodes"] is True
    assert c["datapathProvider"] == "ADVANCED_DATAPATH" and c["enableIntranodeVisibility"] is True
    assert c["binaryAuthorization"] == {"evaluationMode": "PROJECT_SINGLETON_POLICY_ENFORCE"}
    assert c["authenticatorGroupsConfig"] == {"securityGroup": "gke-security-groups@acme.example"}
    assert c["releaseChannel"] == {"channel": "STABLE"}
    assert c["deletionProtection"] is True and cluster["newState"]["options"]["protect"] is True
    assert c["loggingConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS", "WORKLOADS"]
    assert c["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert c["resourceLabels"]["environment"] == "prod" and c["resourceLabels"]["cost-center"] == "ml-production"
    tpu_pools = [s for s in steps_of_type(plan, NODE_POOL) if s["newState"]["name"] != "ray-tpu-prod-system"]
    assert tpu_pools and all(s["newState"]["options"]["protect"] for s in tpu_pools)


def test_dev_turns_protection_off_explicitly():
    (cluster,) = steps_of_type(plan_of("dev"), CLUSTER)
    assert inputs(cluster)["deletionProtection"] is False and cluster["newState"]["options"]["protect"] is False


def test_pool_identities_survive_adding_and_reordering_slices():
    values = minimal_values()
    values["ray-tpu-gke:tpuSlices"].insert(0, {"name": "v6e-16", "generation": "v6e", "topology": "4x4"})
    before = {s["urn"] for s in steps_of_type(run(minimal_values()), NODE_POOL)}
    after = {s["urn"] for s in steps_of_type(run(values), NODE_POOL)}
    assert before < after


def test_preview_mode_plans_the_same_resources():
    preview = plan_of("staging", preview=True)
    assert [s["urn"] for s in preview["steps"]] == [s["urn"] for s in plan_of("staging")["steps"]]


def test_no_kuberay_crds_or_operator_beside_the_add_on():
    for stack in ("dev", "staging", "prod"):
        types = {s["newState"]["type"] for s in plan_of(stack)["steps"]}
        assert not any("CustomResourceDefinition" in t or "helm" in t for t in types)


def test_existing_network_is_used_not_created():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["network"] = {
        "network": "projects/acme-net/global/networks/shared", "subnetwork": "projects/acme-net/regions/us-east5/"
        "subnetworks/ml", "podsRangeName": "ml-pods", "servicesRangeName": "ml-services"}
    plan = run(values)
    assert not steps_of_type(plan, "gcp:compute/network:Network")
    assert not steps_of_type(plan, "gcp:compute/routerNat:RouterNat")
    (cluster,) = steps_of_type(plan, CLUSTER)
    assert inputs(cluster)["network"] == "projects/acme-net/global/networks/shared"
    assert inputs(cluster)["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "ml-pods",
                                                    "servicesSecondaryRangeName": "ml-services"}


def test_new_network_is_private_with_nat_and_flow_logs():
    plan = plan_of("dev")
    (subnet,) = steps_of_type(plan, "gcp:compute/subnetwork:Subnetwork")
    assert inputs(subnet)["privateIpGoogleAccess"] is True
    assert {r["rangeName"] for r in inputs(subnet)["secondaryIpRanges"]} == {"pods", "services"}
    assert inputs(subnet)["logConfig"]["metadata"] == "INCLUDE_ALL_METADATA"
    (nat,) = steps_of_type(plan, "gcp:compute/routerNat:RouterNat")
    assert inputs(nat)["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"


def test_identity_and_bucket_least_privilege():
    plan = plan_of("prod")
    roles = {s["newState"]["name"]: inputs(s)["role"] for s in steps_of_type(plan, "gcp:projects/iAMMember:IAMMember")}
    # The nodes read images and act as GKE nodes; the in-cluster slice check may only write metrics.
    assert sorted(roles.values()) == ["roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount",
                                      "roles/monitoring.metricWriter"]
    assert [n for n, role in roles.items() if role == "roles/monitoring.metricWriter"] == [
        "ray-tpu-prod-health-metric-writer"]
    bindings = steps_of_type(plan, "gcp:serviceaccount/iAMMember:IAMMember")
    assert {inputs(b)["member"] for b in bindings} == {
        "serviceAccount:acme-ml-prod.svc.id.goog[serving/ray]", "serviceAccount:acme-ml-prod.svc.id.goog[training/ray]",
        "serviceAccount:acme-ml-prod.svc.id.goog[slice-health/slice-health]"}
    (bucket,) = steps_of_type(plan, "gcp:storage/bucket:Bucket")
    b = inputs(bucket)
    assert b["uniformBucketLevelAccess"] is True and b["publicAccessPrevention"] == "enforced"
    assert b["versioning"] == {"enabled": True} and b["logging"] == {"logBucket": "acme-ml-prod-access-logs"}
    assert bucket["newState"]["options"]["protect"] is True
    (grant,) = steps_of_type(plan, "gcp:storage/bucketIAMMember:BucketIAMMember")
    assert inputs(grant)["role"] == "roles/storage.objectUser"
    assert inputs(grant)["member"].startswith("serviceAccount:ray-tpu-prod-ray@")
    accounts = {inputs(s)["metadata"]["namespace"]: inputs(s) for s in
                steps_of_type(plan, "kubernetes:core/v1:ServiceAccount")}
    assert accounts["training"]["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "ray-tpu-prod-ray@acme-ml-prod.iam.gserviceaccount.com"}
