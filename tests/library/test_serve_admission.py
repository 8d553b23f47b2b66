"""A RayService's Serve autoscaling config is checked against its worker groups before anything is registered: the
bounds Ray Serve itself refuses, a replica larger than a host of its slice or a node of its pool, and more replicas
than the groups hold at their maximum, each with its key path. The compare stack plans its serving pair at zero."""

from __future__ import annotations

import copy

import pytest
import yaml

from helpers import minimal_values, plan_of, problems, steps_of_type
from ray_tpu_gke.render.llm import llm_model_id
from ray_tpu_gke.spec.config import parse_stack_config

SERVICE = "ray-tpu-gke:rayServices[0]"
DEPLOYMENT = f"{SERVICE}.serveConfig.applications[0].deployments[0]"


def service(actor_options: dict, autoscaling: dict, group: dict) -> dict:
    return {"name": "scorer", "autoscaling": {"enabled": True},
            "serveConfig": {"applications": [{"name": "scorer", "import_path": "workloads.serve_bench:app",
                                              "deployments": [{"name": "Scorer", "ray_actor_options": actor_options,
                                                               "autoscaling_config": autoscaling}]}]},
            "workerGroups": [{"name": "w", "replicas": 0, "minReplicas": 0, **group}]}


def values(actor_options, autoscaling, group, **extra):
    base = minimal_values(tpuSlices=[{"name": "v6e-8", "generation": "v6e", "topology": "2x4"},
                                     {"name": "v6e-4", "generation": "v6e", "topology": "2x2"}],
                          gpuPools=[{"name": "l4-8", "accelerator": "nvidia-l4", "machineType": "g2-standard-96",
                                     "autoscaling": True}],
                          rayClusters=[], rayServices=[service(actor_options, autoscaling, group)])
    base.update(extra)
    return base


TPU4, GPU4 = {"resources": {"TPU": 4}}, {"num_gpus": 4}
SCALE = {"min_replicas": 0, "max_replicas": 2, "target_ongoing_requests": 2, "upscale_delay_s": 5,
         "downscale_delay_s": 60}


@pytest.mark.parametrize("options, group", [(TPU4, {"slice": "v6e-8", "maxReplicas": 1}),
                                            (GPU4, {"gpuPool": "l4-8", "maxReplicas": 1})])
def test_a_service_that_scales_from_zero_within_its_groups_is_admitted(options, group):
    parse_stack_config(values(options, SCALE, group), "test")


def test_minimum_above_maximum_is_refused():
    found = problems(values(TPU4, {**SCALE, "min_replicas": 3}, {"slice": "v6e-8", "maxReplicas": 2}))
    assert found == [f"{DEPLOYMENT}.autoscaling_config.min_replicas: 3 is above max_replicas 2; allowed: at most 2 "
                     "(Ray Serve refuses the config)"]


@pytest.mark.parametrize("key, value, allowed", [
    ("max_replicas", 0, "a whole number of 1 or more"), ("min_replicas", -1, "a whole number of 0 or more"),
    ("target_ongoing_requests", 0, "a number above 0"), ("downscale_delay_s", -5, "a number 0 or more"),
])
def test_autoscaling_fields_keep_serves_bounds(key, value, allowed):
    found = problems(values(TPU4, {**SCALE, key: value}, {"slice": "v6e-8", "maxReplicas": 1}))
    assert found == [f"{DEPLOYMENT}.autoscaling_config.{key}: {value} is invalid; allowed: {allowed} (Ray Serve "
                     "AutoscalingConfig)"]


def test_a_replica_with_more_tpu_chips_than_a_host_of_its_slice_is_refused():
    found = problems(values({"resources": {"TPU": 8}}, SCALE, {"slice": "v6e-4", "maxReplicas": 4}))
    assert len(found) == 1 and found[0].startswith(f"{DEPLOYMENT}.ray_actor_options.resources.TPU: 8 TPU chips per "
                                                   "replica, more than a host or node has")
    assert "slice v6e-4: 4 chips per host" in found[0] and found[0].endswith("allowed: at most 4")


def test_a_replica_with_more_gpus_than_a_node_of_its_pool_is_refused():
    found = problems(values({"num_gpus": 16}, SCALE, {"gpuPool": "l4-8", "maxReplicas": 1}))
    assert len(found) == 1 and found[0].startswith(f"{DEPLOYMENT}.ray_actor_options.num_gpus: 16 GPUs per replica")
    assert found[0].endswith("allowed: at most 8")


@pytest.mark.parametrize("options, group, most, room", [
    (TPU4, {"slice": "v6e-8", "maxReplicas": 1}, 3, 2),  # two 4-chip replicas per 8-chip host, one host at most
    (GPU4, {"gpuPool": "l4-8", "maxReplicas": 2}, 5, 4),
])
def test_more_replicas_than_the_groups_hold_at_their_maximum_is_refused(options, group, most, room):
    found = problems(values(options, {**SCALE, "max_replicas": most}, group))
    assert len(found) == 1 and found[0].startswith(f"{SERVICE}.serveConfig.applications: {most} replicas at most "
                                                   f"(Scorer: {most} x 4 ")
    assert f"({room} of 4 " in found[0]


def test_a_tpu_replica_on_a_service_without_a_slice_group_is_refused():
    found = problems(values(TPU4, SCALE, {"gpuPool": "l4-8", "maxReplicas": 1}))
    assert found == [f"{DEPLOYMENT}: asks for 4 TPU chips per replica, but no worker group of scorer runs on a TPU "
                     "slice"]


def test_num_replicas_beside_an_autoscaling_config_is_refused():
    vals = values(TPU4, SCALE, {"slice": "v6e-8", "maxReplicas": 1})
    vals["ray-tpu-gke:rayServices"][0]["serveConfig"]["applications"][0]["deployments"][0]["num_replicas"] = 2
    assert problems(vals) == [f"{DEPLOYMENT}.num_replicas: 2 with an autoscaling_config; allowed: unset or \"auto\" "
                              "(Ray Serve DeploymentSchema refuses both)"]


def test_the_compare_stack_plans_its_serving_pair_at_zero_with_serves_autoscaling():
    services = {s["newState"]["inputs"]["metadata"]["name"]: s["newState"]["inputs"]
                for s in steps_of_type(plan_of("compare"), "kubernetes:ray.io/v1:RayService")
                if llm_model_id(yaml.safe_load(s["newState"]["inputs"]["spec"]["serveConfigV2"])) is None}
    # (the LLM pair beside them: tests/library/test_llm_service.py)
    assert sorted(services) == ["serve-gpu", "serve-tpu"]
    configs = {name: yaml.safe_load(s["spec"]["serveConfigV2"]) for name, s in services.items()}
    tpu, gpu = (copy.deepcopy(configs[n]["applications"][0]) for n in ("serve-tpu", "serve-gpu"))
    assert tpu["import_path"] == gpu["import_path"] == "workloads.serve_bench:app"  # the same application
    for app in (tpu, gpu):
        scaling = app["deployments"][0]["autoscaling_config"]
        assert scaling["min_replicas"] == 0 and scaling["max_replicas"] >= 1
        assert {"target_ongoing_requests", "upscale_delay_s", "downscale_delay_s"} <= set(scaling)
    assert tpu["deployments"][0]["ray_actor_options"] == {"resources": {"TPU": 4}}
    assert gpu["deployments"][0]["ray_actor_options"] == {"num_gpus": 4}
    for spec in services.values():  # at zero: no worker pod until Serve asks for a replica
        cluster = spec["spec"]["rayClusterConfig"]
        assert cluster["enableInTreeAutoscaling"] is True
        assert [(g["replicas"], g["minReplicas"]) for g in cluster["workerGroupSpecs"]] == [(0, 0)]


@pytest.mark.parametrize("options, group, bad_key, broken", [
    (TPU4, {"slice": "v6e-8", "maxReplicas": 1}, "ray-tpu-gke:tpuSlices[0].topology",
     {"tpuSlices": [{"name": "v6e-8", "generation": "v6e", "topology": "3x3"}]}),
    (GPU4, {"gpuPool": "l4-8", "maxReplicas": 1}, "ray-tpu-gke:gpuPools[0].machineType",
     {"gpuPools": [{"name": "l4-8", "accelerator": "nvidia-l4", "machineType": "n2-standard-8"}]}),
])
def test_a_replica_on_a_slice_or_pool_whose_shape_is_invalid_reports_the_shape_not_a_traceback(options, group,
                                                                                                bad_key, broken):
    vals = values(options, SCALE, group)
    for key, entries in broken.items():
        vals[f"ray-tpu-gke:{key}"] = entries
    found = problems(vals)
    assert [p for p in found if p.startswith(f"{bad_key}:")], found
    assert not [p for p in found if "serveConfig" in p], found  # the group's capacity is unknown: nothing said of it


def test_quoted_autoscaling_numbers_are_read_as_ray_reads_them():
    # Ray 2.55 serve/config.py AutoscalingConfig is a pydantic model in lax mode: "0" is 0, "2" is 2.0.
    quoted = {key: str(value) for key, value in SCALE.items()}
    parse_stack_config(values(TPU4, quoted, {"slice": "v6e-8", "maxReplicas": 1}), "test")
    found = problems(values(TPU4, {**quoted, "max_replicas": "3"}, {"slice": "v6e-8", "maxReplicas": 1}))
    assert len(found) == 1 and found[0].startswith(f"{SERVICE}.serveConfig.applications: 3 replicas at most")
    found = problems(values(TPU4, {**quoted, "max_replicas": "0", "smoothing_factor": "x"},
                            {"slice": "v6e-8", "maxReplicas": 1}))
    assert found == [f'{DEPLOYMENT}.autoscaling_config.max_replicas: "0" is invalid; allowed: a whole number of 1 or '
                     "more (Ray Serve AutoscalingConfig)",
                     f'{DEPLOYMENT}.autoscaling_config.smoothing_factor: "x" is invalid; allowed: a number above 0 '
                     "(Ray Serve AutoscalingConfig)"]


@pytest.mark.parametrize("key", ["metrics_interval_s", "look_back_period_s", "smoothing_factor", "upscaling_factor",
                                 "downscaling_factor"])
def test_every_autoscaling_number_ray_wants_positive_is_refused_at_zero(key):
    found = problems(values(TPU4, {**SCALE, key: 0}, {"slice": "v6e-8", "maxReplicas": 1}))
    assert found == [f"{DEPLOYMENT}.autoscaling_config.{key}: 0 is invalid; allowed: a number above 0 (Ray Serve "
                     "AutoscalingConfig)"]


@pytest.mark.parametrize("options, key, message", [
    ({**TPU4, "num_cpus": 500}, "num_cpus", "500 CPUs per replica, more than any worker pod it can run on has "
                                            "(group w: 177 CPUs, 1402 GiB)"),
    ({**GPU4, "memory": 2 * 2**40}, "memory", "2048.0 GiB (2199023255552 bytes) of memory per replica"),
])
def test_a_replica_asking_for_more_cpu_or_memory_than_its_worker_pod_has_is_refused(options, key, message):
    group = {"slice": "v6e-8", "maxReplicas": 1} if "resources" in options else {"gpuPool": "l4-8", "maxReplicas": 1}
    (found,) = problems(values(options, SCALE, group))
    assert found.startswith(f"{DEPLOYMENT}.ray_actor_options.{key}: {message}")
    assert found.endswith("(serve-replica-fits-a-pod)")
    parse_stack_config(values({**options, key: 1}, SCALE, group), "test")  # one CPU, or one byte, fits


@pytest.mark.parametrize("options, key, expected", [
    # Below Ray's unit of a resource (1/10,000): once a traceback dividing a host's GPUs by it, with an autoscaling
    # config beside it.
    ({"num_gpus": 1e-320}, "num_gpus", "1e-320 is finer than Ray's unit of a resource; allowed: 0, or 0.0001 or more"),
    ({"num_gpus": 0.00005}, "num_gpus", "5e-05 is finer than Ray's unit"),
    ({"num_cpus": 0.00001, **GPU4}, "num_cpus", "1e-05 is finer than Ray's unit"),
    ({"memory": 0.00001, **GPU4}, "memory", "1e-05 is finer than Ray's unit"),
    ({"resources": {"TPU": 4, "ssd": 1e-9}}, "resources.ssd", "1e-09 is finer than Ray's unit"),
    ({"resources": {"TPU": 4, "ssd": "lots"}}, "resources.ssd", "\"lots\" is invalid; allowed: a number of 0 or more"),
    ({"resources": {"CPU": 2}, **GPU4}, "resources.CPU", "is refused by Ray; allowed: ray_actor_options.num_cpus"),
    ({"resources": {"GPU": 2}}, "resources.GPU", "is refused by Ray; allowed: ray_actor_options.num_gpus"),
    ({"resources": ["TPU", 4]}, "resources", '["TPU", 4] is not a mapping of resource names to numbers'),
])
def test_a_replica_asking_for_what_ray_cannot_hold_is_refused_with_its_key(options, key, expected):
    group = {"slice": "v6e-8", "maxReplicas": 1} if "TPU" in str(options) else {"gpuPool": "l4-8", "maxReplicas": 1}
    found = problems(values(options, SCALE, group))
    assert len(found) == 1 and found[0].startswith(f"{DEPLOYMENT}.ray_actor_options.{key}: {expected}"), found


@pytest.mark.parametrize("options", [{"num_gpus": 0.0001}, {"num_gpus": 0.5, "num_cpus": 0, "memory": 2**30},
                                     {**TPU4, "resources": {"TPU": 4, "ssd": 0.25}}])
def test_fractions_of_ray_resources_down_to_its_unit_are_admitted(options):
    group = {"slice": "v6e-8", "maxReplicas": 1} if "TPU" in str(options) else {"gpuPool": "l4-8", "maxReplicas": 1}
    parse_stack_config(values(options, SCALE, group), "test")
