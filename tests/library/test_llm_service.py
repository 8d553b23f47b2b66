"""An LLM service (a RayService's `llm` block) plans as Ray Serve LLM's OpenAI app on vLLM: the compare stack's pair
renders Ray's own serveConfigV2 and pod specs on the v6e-8 slice and the H100 node; the admission rules refuse a
tensor parallelism the replica cannot hold or the model's heads cannot split, a model that does not fit, a Ray below
2.56 on TPU and an image without vLLM, and warn for a generation vLLM TPU does not recommend and a multi-host replica,
each with its rule; the library's typed arguments are checked the same way."""

from __future__ import annotations

import copy

import pytest
import yaml
from helpers import RAY_SERVICE, minimal_values, plan_of, problems, run, steps_of_type
from ray_tpu_gke import admission
from ray_tpu_gke.render.llm import llm_model_id
from ray_tpu_gke.spec.config import parse_stack_config, validate_platform_args
from ray_tpu_gke.spec.problems import ConfigError

SERVICE = "ray-tpu-gke:rayServices[0]"
LLM = f"{SERVICE}.llm"
QWEN3_4B = {"parameters": 4.0e9, "attentionHeads": 32, "kvHeads": 8, "layers": 36, "hiddenSize": 2560,
            "headDim": 128}
TPU_IMAGE = "us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/llm-tpu:2.60.0"
GPU_IMAGE = "rayproject/ray-llm:2.60.0-py311-cu128"


@pytest.fixture(scope="module")
def compare_llm():
    """The compare stack's plan (once per module): its LLM RayServices by name, with serveConfigV2 parsed."""
    plan = plan_of("compare")
    found = {}
    for step in steps_of_type(plan, RAY_SERVICE):
        manifest = step["newState"]["inputs"]
        config = yaml.safe_load(manifest["spec"]["serveConfigV2"])
        if llm_model_id(config) is not None:
            found[manifest["metadata"]["name"]] = (manifest, config)
    return found


def _worker(manifest: dict) -> dict:
    return manifest["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]


def test_the_compare_stack_plans_one_llm_pair_at_zero(compare_llm):
    assert sorted(compare_llm) == ["llm-gpu", "llm-tpu"]
    for manifest, config in compare_llm.values():
        (app,) = config["applications"]
        assert app["import_path"] == "ray.serve.llm:build_openai_app" and app["route_prefix"] == "/"
        (llm,) = app["args"]["llm_configs"]
        assert llm["model_loading_config"] == {"model_id": "qwen3-4b", "model_source": "Qwen/Qwen3-4B"}
        assert llm["engine_kwargs"] == {"tensor_parallel_size": 8, "max_model_len": 4096}
        scaling = llm["deployment_config"]["autoscaling_config"]
        assert scaling["min_replicas"] == 0 and scaling["max_replicas"] == 1
        group = _worker(manifest)
        assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (0, 0, 1)
        assert manifest["spec"]["rayClusterConfig"]["rayVersion"] == "2.60.0"
        assert manifest["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] is True


def test_the_tpu_side_reserves_the_whole_slice_with_its_compile_cache_on_local_disk(compare_llm):
    manifest, config = compare_llm["llm-tpu"]
    (llm,) = config["applications"][0]["args"]["llm_configs"]
    assert llm["accelerator_type"] == "TPU-V6E"
    assert llm["accelerator_config"] == {"kind": "tpu", "topology": "2x4"}
    assert llm["runtime_env"]["env_vars"]["TPU_BACKEND_TYPE"] == "jax"
    spec = _worker(manifest)["template"]["spec"]
    container = spec["containers"][0]
    assert container["image"].endswith("/ray-tpu-gke/llm-tpu:2.60.0")
    assert container["resources"]["limits"]["google.com/tpu"] == "8"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["VLLM_XLA_CACHE_PATH"] == "/var/cache/vllm-xla" and "JAX_COMPILATION_CACHE_DIR" not in env
    assert {"name": "vllm-xla-cache", "emptyDir": {}} in spec["volumes"]
    assert {"name": "vllm-xla-cache", "mountPath": "/var/cache/vllm-xla"} in container["volumeMounts"]


def test_the_gpu_side_runs_rays_llm_image_on_all_gpus_of_an_h100_node(compare_llm):
    manifest, config = compare_llm["llm-gpu"]
    (llm,) = config["applications"][0]["args"]["llm_configs"]
    assert llm["accelerator_type"] == "H100" and "accelerator_config" not in llm
    container = _worker(manifest)["template"]["spec"]["containers"][0]
    assert container["image"] == GPU_IMAGE and container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert "VLLM_XLA_CACHE_PATH" not in {e["name"] for e in container.get("env", [])}


def test_the_request_serving_comparison_leaves_the_llm_pair_out():
    from plan import stackfile
    from plan.compare.serving.services import services

    values, _ = stackfile.load("compare")
    assert [s.name for s in services(plan_of("compare"), values)] == ["serve-tpu", "serve-gpu"]


# --- admission -----------------------------------------------------------------------------------------------------


def llm_values(llm: dict | None = None, group: dict | None = None, image: str = TPU_IMAGE, ray: str = "2.60.0",
               **extra) -> dict:
    block = {"modelId": "qwen3-4b", "source": "hf://Qwen/Qwen3-4B", "tensorParallelSize": 8, "maxModelLen": 4096,
             "architecture": dict(QWEN3_4B), **(llm or {})}
    service = {"name": "llm", "image": image, "rayVersion": ray, "autoscaling": {"enabled": True}, "llm": block,
               "workerGroups": [{"name": "w", "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
                                 **(group or {"slice": "v6e-8"})}]}
    return minimal_values(
        tpuSlices=[{"name": "v6e-8", "generation": "v6e", "topology": "2x4"},
                   {"name": "v6e-16", "generation": "v6e", "topology": "4x4"},
                   {"name": "v5p-8", "generation": "v5p", "topology": "2x2x1"},
                   {"name": "v5e-8", "generation": "v5e", "topology": "2x4"}],
        gpuPools=[{"name": "h100-8", "accelerator": "nvidia-h100-80gb", "machineType": "a3-highgpu-8g",
                   "autoscaling": True},
                  {"name": "l4-1", "accelerator": "nvidia-l4", "machineType": "g2-standard-8", "autoscaling": True}],
        rayClusters=[], rayServices=[service], **extra)


def llm_warnings(vals) -> list[str]:
    """The warnings about the service's llm block (the test slices draw others: zones, capacity)."""
    return [w for w in parse_stack_config(vals, "test").warnings if w.startswith(f"{LLM}: ")]


def test_a_service_that_fits_is_admitted_on_either_side():
    assert llm_warnings(llm_values()) == []
    parse_stack_config(llm_values(group={"gpuPool": "h100-8"}, image=GPU_IMAGE), "test")


def test_exactly_one_of_serve_config_and_llm():
    vals = llm_values()
    vals["ray-tpu-gke:rayServices"][0]["serveConfig"] = {"applications": []}
    (found,) = problems(vals)
    assert found.startswith(f"{SERVICE}: ") and "both of serveConfig and llm given; allowed: exactly one" in found


def test_a_tensor_parallelism_the_slice_cannot_hold_is_refused():
    (found,) = problems(llm_values({"tensorParallelSize": 16}))
    assert found.startswith(f"{LLM}.tensorParallelSize: 16 on slice v6e-8 (2x4, 8 chips")
    assert found.endswith(f"allowed: 8 or a divisor of it ({admission.LLM_TP_FITS_REPLICA.id})")
    (found,) = problems(llm_values({"tensorParallelSize": 3}, group={"gpuPool": "h100-8"}, image=GPU_IMAGE))
    assert found.startswith(f"{LLM}.tensorParallelSize: 3 on pool h100-8 (8 x nvidia-h100-80gb per node)")


def test_a_tensor_parallelism_that_does_not_split_the_heads_is_refused():
    arch = {**QWEN3_4B, "attentionHeads": 12, "kvHeads": 2, "hiddenSize": 1536, "headDim": None}
    (found,) = problems(llm_values({"architecture": arch}))
    assert found == (f"{LLM}.tensorParallelSize: 8 does not divide the model's 12 attention heads; allowed: a "
                     f"divisor of 12 ({admission.LLM_TP_DIVIDES_HEADS.id})")


def test_a_model_that_does_not_fit_is_refused_with_its_numbers():
    # 70e9 parameters in bf16 are 140 GB; one L4 has 24 GB, of which vLLM takes 0.9.
    arch = {**QWEN3_4B, "parameters": 70e9}
    (found,) = problems(llm_values({"architecture": arch, "tensorParallelSize": 1}, group={"gpuPool": "l4-1"},
                                   image=GPU_IMAGE))
    assert found.startswith(f"{LLM}.maxModelLen: 4096: the weights (140.0 GB) plus the KV cache of one 4096-token "
                            "sequence (0.6 GB) need 140.6 GB, more than vLLM's 0.9 of 1 x 24.0 GB")
    assert found.endswith(f"({admission.LLM_FITS_HBM.id})")
    # The KV cache alone: 2 x 36 layers x 8 KV heads x 128 x 2 bytes = 147,456 bytes a token.
    assert admission.kv_cache_bytes(36, 8, 128, 2, 1) == 147456
    # A long enough sequence does not fit one v6e-8 slice (8 x 32 GB) either, and a lower utilisation counts.
    (found,) = problems(llm_values({"maxModelLen": 1_600_000}))
    assert "more than vLLM's 0.9 of 8 x 32.0 GB v6e HBM (230.4 GB)" in found
    (found,) = problems(llm_values({"maxModelLen": 1_000_000, "engineArgs": {"gpu_memory_utilization": 0.5}}))
    assert "vLLM's 0.5 of 8 x 32.0 GB" in found


def test_ray_below_2_56_on_tpu_is_refused():
    (found,) = problems(llm_values(image="us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/llm-tpu:2.55.0",
                                   ray="2.55.0"))
    assert found == (f"{SERVICE}.rayVersion: 2.55.0: Ray Serve LLM reserves TPU slices from Ray 2.56.0; allowed: "
                     f"2.56.0 or later ({admission.LLM_RAY_VERSION_TPU.id})")
    # On GPUs the rule does not apply.
    parse_stack_config(llm_values(group={"gpuPool": "h100-8"}, image="rayproject/ray-llm:2.55.0-py311-cu128",
                                  ray="2.55.0"), "test")


def test_an_image_without_vllm_is_refused():
    (found,) = problems(llm_values(image="rayproject/ray:2.60.0-py311"))
    assert found.startswith(f"{SERVICE}.image: rayproject/ray:2.60.0-py311 holds neither vLLM nor Ray Serve LLM")
    assert found.endswith(f"({admission.LLM_IMAGE.id})")


def test_more_replicas_than_the_group_holds_are_refused():
    (found,) = problems(llm_values({"autoscaling": {"maxReplicas": 2}}))
    assert found.startswith(f"{LLM}.autoscaling.maxReplicas: 2 replicas, more than group w holds at maxReplicas 1")
    assert found.endswith(f"({admission.SERVE_REPLICAS_FIT_GROUPS.id})")
    # Two replicas of 4 GPUs share one 8-GPU node.
    parse_stack_config(llm_values({"tensorParallelSize": 4, "autoscaling": {"maxReplicas": 2}},
                                  group={"gpuPool": "h100-8"}, image=GPU_IMAGE), "test")


def test_an_experimental_generation_and_a_multi_host_replica_warn_with_the_upstream_status():
    (warning,) = llm_warnings(llm_values({"tensorParallelSize": 4}, group={"slice": "v5p-8"}))
    assert warning.startswith(f"{LLM}: TPU v5p (slice v5p-8) is experimental for vLLM's TPU backend")
    assert admission.LLM_TPU_GENERATION.id in warning and "tpu-inference README.md" in warning
    multi = llm_warnings(llm_values({"tensorParallelSize": 16}, group={"slice": "v6e-16"}))
    assert len(multi) == 1 and multi[0].startswith(f"{LLM}: one replica spans the 4 hosts of slice v6e-16 (4x4)")
    assert "multi-host failing" in multi[0]
    assert llm_warnings(llm_values(group={"slice": "v5e-8"})) == []


def test_bad_llm_keys_name_their_path():
    found = problems(llm_values({"source": "s3://bucket/model", "engineArgs": {"max_model_len": 8}}))
    assert any(p.startswith(f"{LLM}.source: ") and "allowed: gs://<bucket>/<path> or hf://<owner>/<name>" in p
               for p in found)
    assert any(p.startswith(f"{LLM}.engineArgs: ") and "allowed: the llm block's own key (maxModelLen)" in p
               for p in found)


def test_the_token_comes_from_a_secret_and_the_stacks_bucket_through_its_mount():
    vals = llm_values({"source": "gs://acme-ml-test-ray-tpu-ray/models/qwen3-4b",
                       "hfTokenSecret": {"name": "hf-token", "key": "token"}})
    plan = run(vals)
    (manifest,) = [s["newState"]["inputs"] for s in steps_of_type(plan, RAY_SERVICE)]
    (llm,) = yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"][0]["args"]["llm_configs"]
    assert llm["model_loading_config"]["model_source"] == "/gcs/models/qwen3-4b"
    token = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}
    assert token in _worker(manifest)["template"]["spec"]["containers"][0]["env"]
    assert token in manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    # Another bucket is Ray Serve LLM's own download.
    other = copy.deepcopy(vals)
    other["ray-tpu-gke:rayServices"][0]["llm"]["source"] = "gs://weights-elsewhere/qwen3-4b"
    (manifest,) = [s["newState"]["inputs"] for s in steps_of_type(run(other), RAY_SERVICE)]
    (llm,) = yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"][0]["args"]["llm_configs"]
    assert llm["model_loading_config"]["model_source"] == {"bucket_uri": "gs://weights-elsewhere/qwen3-4b"}


def test_the_librarys_arguments_are_checked_by_the_same_rules():
    args = parse_stack_config(llm_values(), "test").to_args()
    args["ray_services"][0]["llm"]["tensor_parallel_size"] = 16
    with pytest.raises(ConfigError) as error:
        validate_platform_args(args, "p")
    (found,) = [str(p) for p in error.value.problems]
    assert found.startswith("RayTpuPlatform(p).args.ray_services[0].llm.tensor_parallel_size: 16 on slice v6e-8")


def test_the_version_set_says_where_each_side_takes_vllm_from():
    from plan.version_set import vllm_of

    assert vllm_of(TPU_IMAGE) == "vllm/vllm-tpu:v0.27.0 (workloads/Dockerfile.llm-tpu)"
    assert vllm_of(GPU_IMAGE) == "the vLLM Ray pins in rayproject/ray-llm"
    assert vllm_of("example.com/team/own-vllm:1") == "example.com/team/own-vllm:1"


def test_a_service_without_a_group_on_a_slice_or_gpu_pool_is_refused():
    vals = llm_values(group={"slice": "v6e-8"}, cpuPools=[{"name": "cpu", "machineType": "n2-standard-8"}])
    vals["ray-tpu-gke:rayServices"][0]["workerGroups"] = [{"name": "c", "cpuPool": "cpu"}]
    found = problems(vals)
    assert f"{SERVICE}.workerGroups: 0 groups on a TPU slice or a GPU pool; allowed: exactly one, where the model's " \
           "replicas run" in found


def test_the_rayservice_components_arguments_are_checked_by_the_same_rules():
    from ray_tpu_gke.spec.component_args import validate_ray_args
    from ray_tpu_gke.spec.ray_models import RayServiceConfig

    spec = {"name": "llm", "image": GPU_IMAGE, "ray_version": "2.60.0", "autoscaling": {"enabled": True},
            "llm": {"model_id": "qwen3-4b", "source": "hf://Qwen/Qwen3-4B", "tensor_parallel_size": 16,
                    "max_model_len": 4096},
            "worker_groups": [{"name": "g", "gpu_pool": "h100-8", "replicas": 0, "max_replicas": 1}]}
    pool = {"name": "h100-8", "accelerator": "nvidia-h100-80gb", "machine_type": "a3-highgpu-8g"}
    args = {"kubernetes_provider": object(), "spec": spec, "gpu_pools": [pool]}  # the provider is only passed on
    with pytest.raises(ConfigError) as error:
        validate_ray_args("RayService", RayServiceConfig, args, "llm")
    assert [str(p) for p in error.value.problems] == [
        "RayService(llm).args.spec.llm.tensor_parallel_size: 16 on pool h100-8 (8 x nvidia-h100-80gb per node); "
        "allowed: 8 or a divisor of it (the tensor-parallel workers share one node: llm-tensor-parallel-fits-replica)"]
    spec["llm"]["tensor_parallel_size"] = 8
    assert validate_ray_args("RayService", RayServiceConfig, args, "llm").obj.llm.tensor_parallel_size == 8


@pytest.mark.parametrize("group, image, entry, key, value", [
    ({"slice": "v6e-8"}, TPU_IMAGE, ("tpuSlices", 0), "topology", "3x3"),
    ({"gpuPool": "h100-8"}, GPU_IMAGE, ("gpuPools", 0), "machineType", "g2-standard-8"),
])
def test_a_service_on_a_slice_or_pool_of_an_invalid_shape_gets_that_entrys_problem_not_a_traceback(
        group, image, entry, key, value):
    vals = llm_values(group=group, image=image)
    section, index = entry
    vals[f"ray-tpu-gke:{section}"][index][key] = value
    found = problems(vals)  # once a CatalogError out of the LLM service's check
    assert any(line.startswith(f"ray-tpu-gke:{section}[{index}].{key}: ") and value in line for line in found), found
    assert not any(line.startswith(LLM) for line in found), found
