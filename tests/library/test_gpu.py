"""GPU and CPU pools beside TPU slices (issue #13): the catalogue against its source table, the node pools against what
`gcloud container node-pools create --accelerator` creates, worker groups in both modes, and bad configuration."""

import kuberay_schema
import pytest
from helpers import NODE_POOL, minimal_values, plan_of, problems, run, steps_of_type

from ray_tpu_gke import catalog
from ray_tpu_gke.spec.config import parse_stack_config


# Compute Engine "Accelerator-optimized machine family" (cloud.google.com/compute/docs/accelerator-optimized-machines),
# transcribed row by row: machine type -> (GKE accelerator, GPUs, vCPUs, memory GB).
SOURCE_TABLE = {
    "g2-standard-4": ("nvidia-l4", 1, 4, 16), "g2-standard-8": ("nvidia-l4", 1, 8, 32),
    "g2-standard-12": ("nvidia-l4", 1, 12, 48), "g2-standard-16": ("nvidia-l4", 1, 16, 64),
    "g2-standard-24": ("nvidia-l4", 2, 24, 96), "g2-standard-32": ("nvidia-l4", 1, 32, 128),
    "g2-standard-48": ("nvidia-l4", 4, 48, 192), "g2-standard-96": ("nvidia-l4", 8, 96, 384),
    "a2-highgpu-1g": ("nvidia-tesla-a100", 1, 12, 85), "a2-highgpu-2g": ("nvidia-tesla-a100", 2, 24, 170),
    "a2-highgpu-4g": ("nvidia-tesla-a100", 4, 48, 340), "a2-highgpu-8g": ("nvidia-tesla-a100", 8, 96, 680),
    "a2-megagpu-16g": ("nvidia-tesla-a100", 16, 96, 1360),
    "a2-ultragpu-1g": ("nvidia-a100-80gb", 1, 12, 170), "a2-ultragpu-2g": ("nvidia-a100-80gb", 2, 24, 340),
    "a2-ultragpu-4g": ("nvidia-a100-80gb", 4, 48, 680), "a2-ultragpu-8g": ("nvidia-a100-80gb", 8, 96, 1360),
    "a3-highgpu-1g": ("nvidia-h100-80gb", 1, 26, 234), "a3-highgpu-2g": ("nvidia-h100-80gb", 2, 52, 468),
    "a3-highgpu-4g": ("nvidia-h100-80gb", 4, 104, 936), "a3-highgpu-8g": ("nvidia-h100-80gb", 8, 208, 1872),
    "a3-megagpu-8g": ("nvidia-h100-mega-80gb", 8, 208, 1872),
    "a3-ultragpu-8g": ("nvidia-h200-141gb", 8, 224, 2952),
    "a4-highgpu-8g": ("nvidia-b200", 8, 224, 3968),
}


def test_every_gpu_machine_type_matches_its_source_row():
    catalogued = {m.name: (g.accelerator, m.gpus, m.vcpus, m.memory_gib)
                  for g in catalog.GPUS.values() for m in g.machines}
    assert catalogued == SOURCE_TABLE


def gpu_values(mode="standard", **pool):
    values = minimal_values(rayClusters=[{"name": "train", "workerGroups": [{"name": "gpu", "gpuPool": "l4"}]}],
                            tpuSlices=[])
    values["gcp:region"] = "us-central1"
    values["ray-tpu-gke:cluster"].update(location="us-central1", mode=mode)
    values["ray-tpu-gke:gpuPools"] = [{"name": "l4", "accelerator": "nvidia-l4", "zone": "us-central1-a",
                                       "allowUnlistedZone": True, **pool}]
    return values


def test_the_gpu_pool_is_what_gcloud_creates():
    """gcloud container node-pools create l4 --machine-type g2-standard-48 --accelerator type=nvidia-l4,count=4,
    gpu-driver-version=default --spot --node-locations us-central1-a: machine, accelerator and count, driver,
    spot without reservation; plus the GPU taint GKE adds beside non-GPU pools."""
    plan = run(gpu_values(machineType="g2-standard-48", capacity="spot"))
    (pool,) = [s for s in steps_of_type(plan, NODE_POOL) if s["newState"]["name"] == "l4"]
    inputs = pool["newState"]["inputs"]
    node = inputs["nodeConfig"]
    assert node["machineType"] == "g2-standard-48"
    assert node["guestAccelerators"] == [{"type": "nvidia-l4", "count": 4,
                                          "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}]
    assert node["spot"] is True and node["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert node["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert inputs["nodeLocations"] == ["us-central1-a"] and inputs["nodeCount"] == 1
    assert node["labels"] == {"ray-tpu-gke/pool": "l4"}
    assert node["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}


def test_reservation_and_flex_start_gpu_pools():
    node = _pool_inputs(gpu_values(capacity="reservation", reservation="l4-pool"))["nodeConfig"]
    assert node["reservationAffinity"] == {"consumeReservationType": "SPECIFIC_RESERVATION",
                                           "key": "compute.googleapis.com/reservation-name", "values": ["l4-pool"]}
    inputs = _pool_inputs(gpu_values(capacity="flexStart", count=4))
    assert inputs["nodeConfig"]["flexStart"] is True and inputs["management"]["autoRepair"] is False
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}


def _pool_inputs(values):
    (pool,) = [s for s in steps_of_type(run(values), NODE_POOL) if s["newState"]["name"] == "l4"]
    return pool["newState"]["inputs"]


def test_gpu_worker_group_requests_every_gpu_of_its_node():
    plan = run(gpu_values(machineType="g2-standard-24"))
    (manifest,) = [s["newState"]["inputs"] for s in plan["steps"]
                   if s["newState"]["type"] == "kubernetes:ray.io/v1:RayCluster"]
    group = manifest["spec"]["workerGroupSpecs"][0]
    pod = group["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] and resources["limits"]["nvidia.com/gpu"] == "2"
    assert int(resources["limits"]["cpu"]) < 24 and group["numOfHosts"] == 1
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4", "ray-tpu-gke/pool": "l4"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for release in kuberay_schema.RELEASES:
        assert kuberay_schema.errors(manifest, release) == []


def test_autopilot_gpu_pods_select_type_count_and_capacity():
    plan = run(gpu_values(mode="autopilot", capacity="spot", machineType="g2-standard-48"))
    assert not [s for s in steps_of_type(plan, NODE_POOL)]
    (manifest,) = [s["newState"]["inputs"] for s in plan["steps"]
                   if s["newState"]["type"] == "kubernetes:ray.io/v1:RayCluster"]
    selector = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]
    assert selector == {"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-accelerator-count": "4",
                        "cloud.google.com/gke-spot": "true", "topology.kubernetes.io/zone": "us-central1-a"}


def test_autopilot_flex_start_gpus_get_a_compute_class():
    plan = run(gpu_values(mode="autopilot", capacity="flexStart"))
    (compute_class,) = [s["newState"]["inputs"] for s in plan["steps"]
                        if s["newState"]["type"] == "kubernetes:cloud.google.com/v1:ComputeClass"]
    assert compute_class["spec"]["priorities"] == [{"gpu": {"type": "nvidia-l4", "count": 1},
                                                    "flexStart": {"enabled": True}}]


def test_cpu_worker_groups_run_on_a_cpu_pool():
    values = minimal_values(rayClusters=[{"name": "data", "workerGroups": [{"name": "cpu", "cpuPool": "data",
                                                                            "replicas": 2}]}], tpuSlices=[])
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-16", "count": 2}]
    plan = run(values)
    (pool,) = [s for s in steps_of_type(plan, NODE_POOL) if s["newState"]["name"] == "data"]
    assert "guestAccelerators" not in pool["newState"]["inputs"]["nodeConfig"]
    (manifest,) = [s["newState"]["inputs"] for s in plan["steps"]
                   if s["newState"]["type"] == "kubernetes:ray.io/v1:RayCluster"]
    pod = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert pod["nodeSelector"] == {"ray-tpu-gke/pool": "data"} and "tolerations" not in pod
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]


@pytest.mark.parametrize("pool, path, fragment", [
    ({"accelerator": "nvidia-v100"}, "accelerator", "'nvidia-l4'"),
    ({"machineType": "a2-highgpu-8g"}, "machineType", "allowed: g2-standard-12 (1 GPU)"),
    ({"accelerator": "nvidia-b200", "machineType": None}, "capacity", "allowed: spot, reservation, flexStart"),
    ({"accelerator": "nvidia-h100-80gb", "machineType": "a3-highgpu-2g"}, "capacity", "allowed: spot, flexStart"),
    ({"zone": "us-east5-a"}, "zone", "outside the cluster's region"),
    ({"name": "system"}, "name", "already the system pool"),
    ({"capacity": "reservation"}, "reservation", "required when capacity is reservation"),
    ({"autoscaling": {"minNodes": 3}, "count": 2}, "autoscaling.minNodes", "exceeds the pool's 2 nodes"),
])
def test_bad_gpu_configuration_names_the_key_and_what_is_allowed(pool, path, fragment):
    values = gpu_values(**{k: v for k, v in pool.items() if v is not None})
    if pool.get("machineType", "") is None:
        values["ray-tpu-gke:gpuPools"][0].pop("machineType", None)
    found = problems(values)
    assert any(p.startswith(f"ray-tpu-gke:gpuPools[0].{path}: ") and fragment in p for p in found), found


def test_a_group_names_exactly_one_place_to_run():
    values = gpu_values()
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0]["slice"] = "v6e-4"
    assert any("names 2 of slice, gpuPool, cpuPool" in p for p in problems(values))
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0] = {"name": "g", "gpuPool": "nope"}
    assert any('gpuPool: "nope" is not a gpuPools name; allowed: l4' in p for p in problems(values))


def test_gpu_demand_fits_the_pool_and_gpu_versions_are_checked():
    values = gpu_values()
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0]["replicas"] = 2
    assert any("1 node(s) of l4, but the Ray objects ask for 2" in p for p in problems(values))
    values = gpu_values(accelerator="nvidia-b200", capacity="spot", allowUnlistedZone=True)
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.31"
    assert any("older than nvidia-b200 with GKE-installed drivers" in p for p in problems(values))


def test_compare_stack_runs_one_job_on_each_accelerator():
    plan = plan_of("compare")
    jobs = {s["newState"]["inputs"]["metadata"]["name"]: s["newState"]["inputs"] for s in plan["steps"]
            if s["newState"]["type"] == "kubernetes:ray.io/v1:RayJob"}
    assert set(jobs) == {"bench-tpu", "bench-a100", "bench-h100", "bench-l4"}
    # Templates: created suspended, so a deploy starts no Ray cluster (KubeRay rayjob_types.go RayJobSpec.Suspend).
    assert all(job["spec"]["suspend"] is True for job in jobs.values())
    # The same program and steps; only the run name and where it runs differ.
    common = {name: job["spec"]["entrypoint"].replace(name, "NAME").split(" --generation")[0].split(" --gpus")[0]
              for name, job in jobs.items()}
    assert set(common.values()) == {"python -m workloads.train --steps 300 --name NAME"}
    limits = {name: job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
              ["resources"]["limits"] for name, job in jobs.items()}
    assert limits["bench-tpu"]["google.com/tpu"] == "8"
    for gpu in ("bench-a100", "bench-h100", "bench-l4"):
        assert limits[gpu]["nvidia.com/gpu"] == "8" and jobs[gpu]["spec"]["entrypoint"].endswith("--gpus 8")


def test_replacing_or_deleting_a_gpu_pool_is_a_risky_change():
    from plan.review import classify, revisions

    old = run(gpu_values(machineType="g2-standard-24"))
    new = run(gpu_values(machineType="g2-standard-48"))
    side = lambda plan: revisions.Side(status="planned", plan=plan)  # noqa: E731
    diff = classify.compare(side(old), side(new), "test", "base", "abc")
    (change,) = [c for c in diff.changes if c.name == "l4" and c.type == NODE_POOL]
    assert change.op == "replace" and change.risky
    assert any("replaces GPU node pool l4 (2 x nvidia-l4 per node)" in r for r in change.reasons)


def test_policy_catches_a_wrong_gpu_count_a_missing_taint_and_an_always_on_pool():
    from policy_findings import assert_violation

    plan = run(gpu_values(machineType="g2-standard-48"))
    (pool,) = [s for s in steps_of_type(plan, NODE_POOL) if s["newState"]["name"] == "l4"]
    node = pool["newState"]["inputs"]["nodeConfig"]
    node["guestAccelerators"][0]["count"] = 2
    node["taints"] = []
    assert_violation(plan, "gpu-pool-shape", "l4", "g2-standard-48 carries 4 nvidia-l4, the pool attaches 2")
    assert_violation(plan, "gpu-driver-and-taint", "l4", "no nvidia.com/gpu=present:NO_SCHEDULE taint")
    assert_violation(plan, "gpu-pool-autoscaling", "l4", "1 GPU node(s) always on", level="advisory")


def test_the_comparison_guide_names_what_the_stack_creates():
    from helpers import ROOT, config_of

    guide = (ROOT / "docs/compare.md").read_text()
    config = config_of("compare")
    names = [*(s.name for s in config.tpu_slices), *(p.name for p in config.gpu_pools),
             *(f"compare/{job.name}" for job in config.ray_jobs)]
    assert all(f"`{name}`" in guide for name in names), names
    for job in config.ray_jobs:
        assert job.entrypoint.split(" --name")[0] in guide  # the program the guide describes is the one both run


# --- issue #22.8: GPU zones from the cited catalogue, per machine type; outside them a warning -----------------------


def _config(values):
    return parse_stack_config(values, "test")


@pytest.mark.parametrize("accelerator, machine, zone", [
    ("nvidia-h100-80gb", "a3-highgpu-8g", "us-east4-a"),
    ("nvidia-h100-80gb", "a3-highgpu-8g", "us-east4-c"),
    ("nvidia-tesla-a100", "a2-highgpu-1g", "asia-northeast3-a"),
    ("nvidia-a100-80gb", "a2-ultragpu-1g", "us-east4-c"),
    ("nvidia-h200-141gb", "a3-ultragpu-8g", "us-south1-b"),
])
def test_zones_the_cited_machine_table_lists_pass_without_a_warning(accelerator, machine, zone):
    values = gpu_values(accelerator=accelerator, machineType=machine, zone=zone, allowUnlistedZone=False,
                        capacity="spot")
    region = zone.rsplit("-", 1)[0]
    values["gcp:region"] = region
    values["ray-tpu-gke:cluster"]["location"] = region
    assert not [w for w in _config(values).warnings if "gpuPools[0].zone" in w]


def test_a_zone_outside_the_machine_table_is_a_warning_listing_the_known_ones():
    values = gpu_values(zone="us-central1-f", allowUnlistedZone=False)  # L4 is not sold in us-central1-f
    (warning,) = [w for w in _config(values).warnings if "gpuPools[0].zone" in w]
    assert warning.startswith("ray-tpu-gke:gpuPools[0].zone: us-central1-f is not known to sell g2-standard-12")
    assert "zones known in us-central1: us-central1-a, us-central1-b, us-central1-c" in warning
    assert "\n" not in warning
    values["ray-tpu-gke:gpuPools"][0]["allowUnlistedZone"] = True
    assert not [w for w in _config(values).warnings if "gpuPools[0].zone" in w]


def test_zones_are_per_machine_type():
    # a2-megagpu-16g is sold in fewer zones than the other A100 40GB machines.
    assert "us-east1-b" in catalog.GPU_MACHINE_ZONES["a2-highgpu-8g"]
    assert "us-east1-b" not in catalog.GPU_MACHINE_ZONES["a2-megagpu-16g"]
    assert set(catalog.GPU_MACHINE_ZONES) == {m.name for g in catalog.GPUS.values() for m in g.machines}
    assert len(catalog.GPU_ZONES["nvidia-l4"]) == 44


# --- issue #22.1: one pool kind, one rule: a pool in a regional cluster names its zone ------------------------------


def test_a_cpu_pool_without_zone_in_a_regional_cluster_is_refused():
    values = gpu_values()
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-16", "count": 2}]
    (problem,) = problems(values)
    assert problem.startswith("ray-tpu-gke:cpuPools[0].zone: required for a regional cluster: a zone of us-central1")
    assert "count nodes in every zone" in problem
    values["ray-tpu-gke:cpuPools"][0]["zone"] = "us-central1-b"
    plan = run(values)
    (pool,) = [s for s in steps_of_type(plan, NODE_POOL) if s["newState"]["name"] == "data"]
    inputs = pool["newState"]["inputs"]
    assert inputs["nodeLocations"] == ["us-central1-b"] and inputs["nodeCount"] == 2  # 2 nodes, priced as 2
    from ray_tpu_gke.render import pricing

    (item,) = [i for i in pricing.estimate(_config(values)).items if i.name == "data"]
    assert item.quantity == 2  # the cost counts the nodes GKE creates


def test_a_gpu_pool_without_zone_in_a_regional_cluster_is_refused_the_same_way():
    values = gpu_values()
    del values["ray-tpu-gke:gpuPools"][0]["zone"]
    (problem,) = problems(values)
    assert problem.startswith("ray-tpu-gke:gpuPools[0].zone: required for a regional cluster")


# --- issue #22.5: Autopilot's maxima are not recorded, so GPU and CPU workers sized from the machine are flagged ----


def test_autopilot_gpu_workers_are_flagged_against_autopilots_maxima():
    values = gpu_values(mode="autopilot", machineType="a2-highgpu-1g", accelerator="nvidia-tesla-a100",
                        allowUnlistedZone=False)
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-16"}]
    warnings = [w for w in _config(values).warnings if "Autopilot rejects requests above its maximum" in w]
    assert [w.split(":", 2)[1] for w in warnings] == ["gpuPools[0]"]  # the CPU pool is within general-purpose's
    assert "a2-highgpu-1g (12 vCPUs, 85 GB)" in warnings[0] and "kubectl apply --dry-run=server" in warnings[0]
    assert not [w for w in _config(gpu_values()).warnings if "Autopilot" in w]  # Standard: no such maximum


# --- issue #29.7: what Autopilot accepts per pod ---------------------------------------------------------------------


def test_autopilot_cpu_workers_above_the_general_purpose_maximum_are_refused():
    # autopilot-cost-calculator config.ini: general-purpose at most 30 vCPU and 110,000 MB per pod.
    values = gpu_values(mode="autopilot")
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-64"}]
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:cpuPools[0].machineType: "n2-standard-64": its Ray worker pod, ')
    assert "above the general-purpose class's maximum of 30 vCPU and 110,000 MB per pod (gke-autopilot-class-range)" \
        in problem
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-32"}]  # about 31 vCPU: too many
    assert problems(values)
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-16"}]
    _config(values)
    values["ray-tpu-gke:cluster"]["mode"] = "standard"
    values["ray-tpu-gke:cpuPools"] = [{"name": "data", "machineType": "n2-standard-64", "zone": "us-central1-a"}]
    _config(values)  # Standard: the node pool's own machine


@pytest.mark.parametrize("accelerator, gpus, allowed", [
    ("nvidia-h100-mega-80gb", 4, False), ("nvidia-b200", 8, True), ("nvidia-tesla-t4", 8, False),
    ("nvidia-tesla-a100", 16, True), ("nvidia-a100-80gb", 16, False), ("nvidia-l4", 2, True),
])
def test_autopilot_gpu_counts_are_those_autopilot_offers(accelerator, gpus, allowed):
    from ray_tpu_gke import admission

    problem = admission.autopilot_gpu_count_problem(accelerator, gpus)
    assert (problem is None) == allowed
    if problem:
        assert f"not {gpus}" in problem and "gke-autopilot-gpu-count" in problem


def test_every_catalogued_gpu_machine_has_a_count_autopilot_offers():
    from ray_tpu_gke import admission

    for accelerator, gpu in catalog.GPUS.items():
        for machine in gpu.machines:
            assert admission.autopilot_gpu_count_problem(accelerator, machine.gpus) is None, machine.name


def test_fewer_than_8_h100_per_pod_in_autopilot_need_gke_1_31_4_gke_1072000():
    values = gpu_values(mode="autopilot", accelerator="nvidia-h100-80gb", machineType="a3-highgpu-2g",
                        capacity="spot")
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.31.1-gke.1146000"
    found = [p for p in problems(values) if "1.31.4-gke.1072000" in p]
    assert found and "2 nvidia-h100-80gb per pod in Autopilot" in found[0]
    values["ray-tpu-gke:gpuPools"][0]["machineType"] = "a3-highgpu-8g"
    assert not [p for p in problems(values, refused=False) if "1.31.4-gke.1072000" in p]


