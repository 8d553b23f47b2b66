"""The first-apply rules (issue #11): each finding of the review, checked from its primary source (admission.RULES)."""

import copy
import re

import pytest
from helpers import (
    ROOT,
    STACKS,  # every stack in stacks/
    config_of,
    minimal_values,
    plan_of,
    problems,
    run,
    steps_of_type,
)

from plan import mocks
from ray_tpu_gke import admission, catalog
from ray_tpu_gke.render import manifests
from ray_tpu_gke.resources.preflight import PreflightError
from ray_tpu_gke.spec.config import parse_stack_config

RAY_TYPES = ("kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayService", "kubernetes:ray.io/v1:RayJob")


def autopilot(values, location="us-east5"):
    values["ray-tpu-gke:cluster"].update(mode="autopilot", location=location)
    return values


# 1. GKE version: the channel chooses; pins are checked offline, the channel's default at deploy time ---------------


def test_no_exact_version_is_sent_when_nothing_is_pinned():
    for stack in ("dev", "staging", "sandbox"):
        (cluster,) = steps_of_type(plan_of(stack), "gcp:container/cluster:Cluster")
        assert "minMasterVersion" not in cluster["newState"]["inputs"], stack


def test_a_pin_older_than_a_generation_needs_is_refused():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.30"
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:cluster.minMasterVersion: "1.30" is older than TPU v6e')
    assert "1.31.2-gke.1115000 or later" in problem
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.34"  # a minor alias: GKE picks the newest patch
    parse_stack_config(values, "test")


def test_a_channel_default_older_than_needed_stops_the_deploy(monkeypatch):
    old = copy.deepcopy(mocks.ENGINE_VERSIONS)
    old["releaseChannelDefaultVersion"]["REGULAR"] = "1.30.5-gke.1000000"
    monkeypatch.setattr(mocks, "ENGINE_VERSIONS", old)
    with pytest.raises(PreflightError, match=r"REGULAR channel in us-east5-b creates 1.30.5-gke.1000000, older than "
                                             r"1.31.2-gke.1115000 that TPU v6e needs; pin cluster.minMasterVersion to "
                                             r"1.31"):
        run(minimal_values())


def test_an_exact_pin_gke_no_longer_offers_stops_the_deploy():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.31.2-gke.1115000"
    with pytest.raises(PreflightError, match="GKE no longer offers 1.31.2-gke.1115000"):
        run(values)


# 2. Flex-start ------------------------------------------------------------------------------------------------------


def test_flex_start_needs_its_gke_version_and_a_generation_that_offers_it():
    values = minimal_values(tpuSlices=[{"name": "f", "generation": "v6e", "topology": "2x2", "capacity": "flexStart"}],
                            rayClusters=[])
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.32"
    (problem,) = problems(values)
    assert "older than flex-start TPUs" in problem and admission.FLEX_START_MIN_GKE_VERSION in problem
    values = minimal_values(tpuSlices=[{"name": "f", "generation": "v4", "topology": "2x2x1",
                                        "capacity": "flexStart", "zone": "us-east5-b"}], rayClusters=[])
    assert any('capacity: "flexStart" is not offered for TPU v4' in p for p in problems(values))


def test_flex_start_in_a_zone_not_known_to_offer_it_is_a_warning_listing_those_that_do():
    values = minimal_values(tpuSlices=[{"name": "f", "generation": "v6e", "topology": "2x2", "capacity": "flexStart"}],
                            rayClusters=[])
    values["gcp:region"] = "us-central1"
    values["ray-tpu-gke:cluster"]["location"] = "us-central1-b"
    (warning,) = parse_stack_config(values, "t").warnings
    assert "us-central1-b is not known to offer TPU v6e with flex-start" in warning
    assert "asia-northeast1-b, us-east5-a, us-east5-b" in warning


# 3. Autopilot is regional -------------------------------------------------------------------------------------------


def test_autopilot_in_a_zone_is_refused():
    values = minimal_values(rayClusters=[])
    values["ray-tpu-gke:cluster"]["mode"] = "autopilot"
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:cluster.location: "us-east5-b" is a zone; Autopilot clusters are regional')
    assert "us-east5" in problem


# 4. Label values: no '/' in a shared reservation's selector; every pod of every plan -------------------------------


def _ray_manifests(plan):
    return [step["newState"]["inputs"] for step in plan["steps"] if step["newState"]["type"] in RAY_TYPES]


def test_autopilot_shared_reservation_selects_short_name_and_owner_project():
    values = autopilot(minimal_values(tpuSlices=[{
        "name": "r", "generation": "v6e", "topology": "4x4", "capacity": "reservation",
        "reservation": "projects/acme-capacity/reservations/v6e-pool"}],
        rayClusters=[{"name": "train", "workerGroups": [{"name": "tpu", "slice": "r"}]}]))
    (manifest,) = _ray_manifests(run(values))
    selector = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/reservation-name"] == "v6e-pool"
    assert selector["cloud.google.com/reservation-project"] == "acme-capacity"
    assert selector["cloud.google.com/reservation-affinity"] == "specific"
    assert manifests.label_problems(manifest) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_pod_of_every_stack_has_valid_labels_and_fits_its_node(stack):
    config = config_of(stack)
    for manifest in _ray_manifests(plan_of(stack)):
        assert manifests.label_problems(manifest) == [], manifest["metadata"]["name"]
        _assert_pods_fit(manifest, config)


@pytest.mark.parametrize("mode", ["standard", "autopilot"])
def test_a_cpu_pool_group_fits_its_pool(mode):
    values = minimal_values(
        cpuPools=[{"name": "prep", "machineType": "n2-standard-8", "count": 2}],
        rayClusters=[{"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-4"},
                                                        {"name": "prep", "cpuPool": "prep", "replicas": 2}]}])
    if mode == "autopilot":
        autopilot(values)
        values["ray-tpu-gke:tpuSlices"][0]["zone"] = "us-east5-b"
    (manifest,) = _ray_manifests(run(values))
    assert [g["groupName"] for g in manifest["spec"]["workerGroupSpecs"]] == ["tpu", "prep"]
    _assert_pods_fit(manifest, parse_stack_config(values, "test"))


def test_the_documented_examples_have_valid_labels_and_fit():
    import yaml

    text = (ROOT / "docs/ray-objects.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    for stack_file, manifest in zip(blocks[0::2], blocks[1::2]):
        config = parse_stack_config(yaml.safe_load(stack_file)["config"], "dev")
        manifest = yaml.safe_load(manifest)
        assert manifests.label_problems(manifest) == []
        _assert_pods_fit(manifest, config)


def test_a_label_value_with_a_slash_is_caught():
    manifest = {"metadata": {"labels": {}}, "spec": {"headGroupSpec": {"template": {"spec": {
        "nodeSelector": {"cloud.google.com/reservation-name": "projects/p/reservations/r"}}}}}}
    (problem,) = manifests.label_problems(manifest)
    assert "cloud.google.com/reservation-name" in problem and "no '/'" in problem
    for bad in ("a" * 64, "-x", "x\n", "a b"):
        with pytest.raises(ValueError):
            admission.check_label_value(bad)
    for good in ("", "v6e-pool", "1.34", "A_b.c-9"):
        admission.check_label_value(good)


def _config_group(manifest, group, config):
    """The configured worker group a manifest's group was rendered from (metadata.name is the object's name)."""
    meta = manifest["metadata"]
    (obj,) = [o for o in config.ray_objects if o.name == meta["name"] and o.namespace == meta.get("namespace")]
    (configured,) = [g for g in obj.worker_groups if g.name == group["groupName"]]
    return configured


def _assert_pods_fit(manifest, config):
    """Every pod's requests, with the sidecars GKE and KubeRay inject, within what its node type allocates."""
    spec = manifest["spec"]
    cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or (spec if "headGroupSpec" in spec else None)
    if cluster is None:  # a RayJob on an existing RayCluster
        return
    gcs = "gke-gcsfuse/volumes" in str(cluster)
    if config.standard:
        machine = admission.cpu_machine(config.cluster.system_pool.machine_type)
        sidecars = [admission.GCS_FUSE_SIDECAR] * gcs
        sidecars += [admission.AUTOSCALER_SIDECAR] * bool(cluster.get("enableInTreeAutoscaling"))
        need = admission.pod_requests(cluster["headGroupSpec"]["template"]["spec"], sidecars)
        free = admission.allocatable(*machine)
        assert need[0] <= free[0] and need[1] <= free[1], (manifest["metadata"]["name"], need, free)
    for group in cluster.get("workerGroupSpecs", []):
        pod = group["template"]["spec"]
        selector = pod.get("nodeSelector", {})  # an on-demand Autopilot CPU pool selects nothing
        if catalog.GPU_ACCELERATOR_LABEL in selector:  # a GPU pool: all of one node's GPUs, within what it allocates
            pool = next(p for p in config.gpu_pools if p.accelerator == selector[catalog.GPU_ACCELERATOR_LABEL])
            need = admission.pod_requests(pod, [admission.GCS_FUSE_SIDECAR] * gcs)
            free = admission.allocatable(pool.machine.vcpus, pool.machine.memory_gib)
            assert need[0] <= free[0] and need[1] <= free[1], (group["groupName"], need, free)
            limits = pod["containers"][0]["resources"]["limits"]
            assert limits[catalog.GPU_RESOURCE] == str(pool.machine.gpus) and group["numOfHosts"] == 1
            continue
        if catalog.ACCELERATOR_LABEL not in selector:  # a CPU pool: its group's pool, found through the config
            kind, name = _config_group(manifest, group, config).target
            assert kind == "cpu_pool", (group["groupName"], kind)
            pool = config.targets["cpu_pool"][name]
            need = admission.pod_requests(pod, [admission.GCS_FUSE_SIDECAR] * gcs)
            free = admission.allocatable(*admission.cpu_machine(pool.machine_type))
            assert need[0] <= free[0] and need[1] <= free[1], (group["groupName"], need, free)
            assert group["numOfHosts"] == 1
            continue
        shape = catalog.resolve(next(g for g in catalog.GENERATIONS.values()
                                     if g.accelerator == selector[catalog.ACCELERATOR_LABEL]).name,
                                selector[catalog.TOPOLOGY_LABEL])
        host = next(m for m in catalog.layouts(shape.generation, shape.topology)
                    if str(m.chips) == pod["containers"][0]["resources"]["limits"][catalog.TPU_RESOURCE])
        need = admission.pod_requests(pod, [admission.GCS_FUSE_SIDECAR] * gcs)
        free = admission.allocatable(host.vcpus, host.memory_gib)
        assert need[0] <= free[0] and need[1] <= free[1], (group["groupName"], need, free)
        assert group["numOfHosts"] * host.chips == shape.chips


# 5 and 6. Machine shapes and what fits -------------------------------------------------------------------------------


def test_allocatable_follows_gke_reservations():
    agents_cpu, agents_memory = admission.daemonset_allowance(4, "cpu")
    cpu, memory = admission.allocatable(4, 16, "cpu")  # e2-standard-4
    assert cpu == pytest.approx(4 - 0.08 - agents_cpu)
    assert memory == pytest.approx(16 - (1 + 0.8 + 0.8) - 100 / 1024 - agents_memory)
    cpu, _ = admission.allocatable(180, 720, "tpu")  # ct6e-standard-4t
    agents_cpu, _ = admission.daemonset_allowance(180, "tpu")
    assert cpu == pytest.approx(180 - (0.06 + 0.01 + 0.01 + 176 * 0.0025) - agents_cpu)


def test_daemonset_allowance_is_the_sum_of_the_agents_the_stack_turns_on_with_a_margin():
    """Issue #22.6: 0.4 CPU / 1 GiB was below the requests of GKE's own DaemonSets on a TPU host."""
    def total(kinds):
        rows = [r for r in admission.NODE_DAEMONSETS if r[1] in kinds]
        return sum(r[2] for r in rows) / 1000, sum(256 if r[3] is None else r[3] for r in rows) / 1024

    cpu, memory = total(("all", "large", "tpu"))  # a 180-vCPU v6e host gets the large logging variant
    assert cpu == pytest.approx(1.364) and memory == pytest.approx(1400 / 1024)
    assert admission.daemonset_allowance(180, "tpu") == pytest.approx((cpu * 1.5, memory * 1.5))
    assert admission.daemonset_allowance(180, "tpu")[0] > 2.0  # the old allowance was 0.4
    gpu_cpu, _ = total(("all", "large", "gpu"))  # the GPU device plugin and the driver installer
    assert admission.daemonset_allowance(208, "gpu")[0] == pytest.approx(gpu_cpu * 1.5)
    assert admission.daemonset_allowance(180) == pytest.approx(  # accelerator unknown: the larger of both
        tuple(map(max, admission.daemonset_allowance(180, "tpu"), admission.daemonset_allowance(180, "gpu"))))
    assert admission.daemonset_allowance(4, "cpu") == pytest.approx((1.0, max(1.5, total(("all", "small", "cpu"))[1]
                                                                              * 1.5)))  # the floor
    # The v6e 8-chip host of the issue: its worker now leaves room for every agent.
    assert admission.node_worker_resources(180, 1440, gcs_fuse=True, accelerator="tpu") == (177, 1402)
    rule = admission.RULES["gke-node-daemonsets"].summary
    assert "kubectl describe node" in rule and "1.5" in rule


def test_a_head_that_cannot_fit_its_system_node_is_refused():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["systemPool"] = {"machineType": "e2-standard-4"}
    values["ray-tpu-gke:rayClusters"][0]["head"] = {"cpu": "4", "memory": "16Gi"}  # the first version's dev head
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:rayClusters[0].head: 4 CPU and 16Gi') and "e2-standard-4" in problem


def test_v6e_8_chip_workers_request_what_180_vcpus_allow():
    values = minimal_values(tpuSlices=[{"name": "s", "generation": "v6e", "topology": "2x4"}],
                            rayClusters=[{"name": "t", "workerGroups": [{"name": "tpu", "slice": "s"}]}])
    (manifest,) = _ray_manifests(run(values))
    requests = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert int(requests["cpu"]) < 180 and requests["google.com/tpu"] == "8"


# 7 and 8. Capacity over time; groups that never run ------------------------------------------------------------------


def test_rayservice_new_cluster_upgrade_needs_twice_the_slices():
    values = minimal_values(rayClusters=[], rayServices=[{"name": "s", "serveConfig": {"applications": []},
                                                          "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}])
    (problem,) = problems(values)
    assert "ask for 2 at once (ray/s group tpu (twice: NewCluster upgrades): 2)" in problem


def test_a_group_with_no_replicas_and_no_autoscaling_is_refused():
    values = minimal_values()
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0]["replicas"] = 0
    (problem,) = problems(values)
    assert problem.startswith("ray-tpu-gke:rayClusters[0].workerGroups[0].replicas: 0 with Ray autoscaling off")


# 9. Ray version gates ------------------------------------------------------------------------------------------------


def test_ray_255_autoscaling_of_an_ironwood_group_is_refused_and_256_allowed():
    values = minimal_values(tpuSlices=[{"name": "iw", "generation": "tpu7x", "topology": "2x2x1"}],
                            rayClusters=[{"name": "t", "autoscaling": {"enabled": True}, "rayVersion": "2.55.0",
                                          "image": "rayproject/ray:2.55.0-py311",
                                          "workerGroups": [{"name": "tpu", "slice": "iw"}]}])
    (problem,) = problems(values)
    assert problem.startswith("ray-tpu-gke:rayClusters[0].autoscaling.enabled: true, but Ray 2.55.0's autoscaler")
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.56.0", image="rayproject/ray:2.56.0-py311")
    parse_stack_config(values, "test")
    del values["ray-tpu-gke:rayClusters"][0]["rayVersion"], values["ray-tpu-gke:rayClusters"][0]["image"]
    parse_stack_config(values, "test")  # the default, 2.60.0, maps tpu7x too
    # A Ray version refused for another reason is not replaced by the default to judge the autoscaler on.
    values["ray-tpu-gke:rayClusters"][0].update(rayVersion="2.55.0", image="rayproject/ray:2.56.0-py311")
    assert [p.split(": ", 1)[0] for p in problems(values)] == ["ray-tpu-gke:rayClusters[0].rayVersion"]


# 10. Ironwood ---------------------------------------------------------------------------------------------------------


def test_standard_multi_host_ironwood_ignores_the_topology_gke_reads_back():
    (pool,) = [s for s in steps_of_type(plan_of("prod"), "gcp:container/nodePool:NodePool")
               if s["newState"]["name"] == "ironwood-64-0"]
    state = pool["newState"]
    placement = state["inputs"]["placementPolicy"]
    assert "tpuTopology" not in placement and "policyName" in placement
    assert "placementPolicy.tpuTopology" in state["options"]["ignoreChanges"]


def test_autopilot_multi_host_ironwood_has_a_policy_and_selects_it():
    values = autopilot(minimal_values(
        tpuSlices=[{"name": "iw", "generation": "tpu7x", "topology": "4x4x4", "zone": "us-central1-c"}],
        rayClusters=[{"name": "t", "workerGroups": [{"name": "tpu", "slice": "iw"}]}]), "us-central1")
    values["gcp:region"] = "us-central1"
    plan = run(values)
    (policy,) = steps_of_type(plan, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy["newState"]["inputs"]["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"}
    (manifest,) = _ray_manifests(plan)
    selector = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]
    assert selector[manifests.PLACEMENT_POLICY_LABEL] == policy["newState"]["inputs"]["name"]
    ray_step = next(s for s in plan["steps"] if s["newState"]["type"] == RAY_TYPES[0])
    assert policy["urn"] in ray_step["newState"]["dependencies"]


# 11. Per-zone limits --------------------------------------------------------------------------------------------------


def test_regional_system_pool_limits_are_totals():
    (pool,) = [s for s in steps_of_type(plan_of("prod"), "gcp:container/nodePool:NodePool")
               if s["newState"]["name"].endswith("system")]
    autoscaling = pool["newState"]["inputs"]["autoscaling"]
    assert (autoscaling["totalMinNodeCount"], autoscaling["totalMaxNodeCount"]) == (3, 6)
    assert "minNodeCount" not in autoscaling and "maxNodeCount" not in autoscaling


# 12. Quota before capacity ------------------------------------------------------------------------------------------


def test_quota_needs_per_region_and_quota():
    needs = config_of("staging").quota_needs()
    assert [(n.key, n.region, n.chips) for n in needs] == [
        ("TPUS-PER-TPU-FAMILY-per-project-region, tpu_family=CT6E", "us-east5", 16)]
    assert config_of("prod").quota_needs()[0].chips == 32  # reserved slices draw on their reservations


def test_too_little_quota_stops_before_any_node_pool(monkeypatch):
    monkeypatch.setattr(mocks, "MOCK_TPU_QUOTA", 8)
    values = minimal_values(tpuSlices=[{"name": "s", "generation": "v6e", "topology": "4x4"}], rayClusters=[])
    with pytest.raises(PreflightError, match=r"quota TPUS-PER-TPU-FAMILY-per-project-region, tpu_family=CT6E in "
                                             r"us-east5: the project has 8 TPU chips, the stack needs 16"):
        run(values)


def test_unknown_quota_is_a_warning_not_a_guess():
    errors, warnings = admission.quota_shortfalls(
        [admission.tpu_quota_need("tpu7x", "onDemand", 4, "us-central1", "iw")], {})
    assert errors == [] and "quota unknown in us-central1: not found" in warnings[0]


# The rules' page -----------------------------------------------------------------------------------------------------


def test_docs_list_every_rule_with_its_source(request):
    path = ROOT / "docs/admission.md"
    page = path.read_text()
    if request.config.getoption("--update-snapshots"):  # `make snapshots` rewrites the table from the rules
        page = page[:page.index("| rule |")] + admission.markdown()
        path.write_text(page)
    assert page.endswith(admission.markdown())
    assert all(rule.source for rule in admission.RULES.values())


def test_the_policy_pack_applies_the_same_label_and_fit_rules():
    from policy_findings import assert_violation, groups, ray

    plan = plan_of("prod")
    pod = groups(ray(plan, "training-train"))[0]["template"]["spec"]
    pod["nodeSelector"]["cloud.google.com/reservation-name"] = "projects/acme-capacity/reservations/v6e"
    pod["containers"][0]["resources"]["requests"]["cpu"] = "306"
    assert_violation(plan, "k8s-label-values", "training-train", "cloud.google.com/reservation-name", "no '/'")
    assert_violation(plan, "tpu-pod-fits-host", "training-train", "requests 306.25 CPU",
                     "a ct6e-standard-4t host allocates")
