"""An LLM service's Ray Serve config and what its pods add, as plain data: one Ray Serve LLM application
(`ray.serve.llm:build_openai_app`, OpenAI-compatible) whose single `LLMConfig` runs the model on vLLM, on a TPU slice
(one replica reserves the whole slice) or on GPUs of a pool. Pure: the plan, the tests and the comparison read it."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .. import admission
from ..spec.llm_models import LlmConfig
from ..spec.ray_models import RayObjectConfig, RayServiceConfig

APP_NAME = "llm"
# vLLM reads VLLM_XLA_CACHE_PATH (vllm/envs.py) and tpu-inference points JAX's persistent compilation cache at it
# (tpu_inference/runner/compilation_manager.py: jax.config.update("jax_compilation_cache_dir", VLLM_XLA_CACHE_PATH)).
# On the host's own disk, as Ray's TPU serving example sets it to a local path (Ray docs serve/llm/user-guides/tpu.md,
# ENV VLLM_XLA_CACHE_PATH=/tmp/vllm_xla_cache): compilation dominates a TPU replica's cold start, and an emptyDir keeps
# the cache across the Ray container's restarts on that host.
XLA_CACHE_VOLUME = "vllm-xla-cache"
XLA_CACHE_PATH = "/var/cache/vllm-xla"
# Ray's TPU serving example (same page) runs the engine with the JAX backend of tpu-inference and, across the hosts of
# a slice, with Ray as the multi-host backend.
TPU_ENGINE_ENV = {"TPU_BACKEND_TYPE": "jax", "TPU_MULTIHOST_BACKEND": "ray"}
# huggingface_hub reads the token from HF_TOKEN (huggingface_hub/constants.py).
HF_TOKEN_ENV = "HF_TOKEN"


def target(obj: RayServiceConfig, targets: Mapping[str, Mapping]) -> tuple[str, Any]:
    """("slice", TpuSliceConfig) or ("gpu_pool", GpuPoolConfig): where the service's replicas run (its first worker
    group on a slice or a GPU pool; the checks require exactly one)."""
    for group in obj.worker_groups:
        kind, name = group.target
        if kind in ("slice", "gpu_pool") and name in targets.get(kind, {}):
            return kind, targets[kind][name]
    raise ValueError(f"RayService {obj.name}: no worker group on a TPU slice or a GPU pool")


def model_source(llm: LlmConfig, mounted: Optional[tuple[str, str]]) -> Any:
    """Ray Serve LLM's model_source: a Hugging Face id, the stack's bucket through its GCS FUSE mount (`mounted`:
    (bucket, mount path); a local path every host reads), or another bucket as Ray Serve LLM's own cloud mirror
    (model_loading_config.model_source: {bucket_uri: gs://...}, downloaded on each replica: Ray docs serve/llm/
    user-guides/model-loading.md)."""
    if llm.hf_repo:
        return llm.hf_repo
    found = llm.gcs_object()
    assert found is not None  # the model validates the source
    name, path = found
    if mounted is not None and mounted[0] == name:
        return f"{mounted[1]}/{path}"
    return {"bucket_uri": llm.source}


def llm_config(obj: RayServiceConfig, targets: Mapping[str, Mapping], mounted: Optional[tuple[str, str]]) -> dict:
    """The one `LLMConfig` (ray.serve.llm.LLMConfig fields: python/ray/llm/_internal/serve/core/configs/
    llm_config.py) of the service."""
    llm = obj.llm
    assert llm is not None
    kind, where = target(obj, targets)
    autoscaling = {"min_replicas": llm.autoscaling.min_replicas, "max_replicas": llm.autoscaling.max_replicas}
    for key in ("initial_replicas", "target_ongoing_requests", "upscale_delay_s", "downscale_delay_s"):
        value = getattr(llm.autoscaling, key)
        if value is not None:
            autoscaling[key] = value
    deployment: dict[str, Any] = {"autoscaling_config": autoscaling}
    if llm.max_ongoing_requests is not None:
        deployment["max_ongoing_requests"] = llm.max_ongoing_requests
    config: dict[str, Any] = {
        "model_loading_config": {
            "model_id": llm.model_id,
            "model_source": model_source(llm, mounted),
        },
        "engine_kwargs": {
            **llm.engine_args,
            "tensor_parallel_size": llm.tensor_parallel_size,
            "max_model_len": llm.max_model_len,
        },
        "deployment_config": deployment,
    }
    if kind == "slice":
        shape = where.shape
        config["accelerator_type"] = admission.ray_accelerator_type("tpu", where.generation)
        # TPUConfig (accelerators.py): with a topology, one replica reserves a whole slice of that shape through
        # ray.util.tpu.slice_placement_group, one bundle per host (Ray docs serve/llm/user-guides/tpu.md).
        config["accelerator_config"] = {"kind": "tpu", "topology": shape.topology}
        config["runtime_env"] = {"env_vars": dict(TPU_ENGINE_ENV)}
    else:
        config["accelerator_type"] = admission.ray_accelerator_type("gpu", where.accelerator)
    return config


def serve_config(obj: RayServiceConfig, targets: Mapping[str, Mapping], mounted: Optional[tuple[str, str]]) -> dict:
    """serveConfigV2: one OpenAI-compatible application at / (Ray docs serve/llm/quick-start.md, Production
    deployment); `mounted`: (the bucket, where the pods mount it), None without a mount."""
    return {
        "applications": [
            {
                "name": APP_NAME,
                "import_path": admission.LLM_APP_IMPORT_PATH,
                "route_prefix": "/",
                "args": {"llm_configs": [llm_config(obj, targets, mounted)]},
            }
        ]
    }


def container_env(obj: RayObjectConfig, on_slice: bool) -> list[dict]:
    """What an LLM service's Ray container adds to its env: the token from its Secret (never its value), and on a
    TPU host the compile cache's path."""
    llm = getattr(obj, "llm", None)
    if llm is None:
        return []
    env = []
    if llm.hf_token_secret is not None:
        secret = llm.hf_token_secret
        env.append(
            {
                "name": HF_TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
            }
        )
    if on_slice:
        env.append({"name": "VLLM_XLA_CACHE_PATH", "value": XLA_CACHE_PATH})
    return env


def cache_volume(obj: RayObjectConfig, on_slice: bool) -> tuple[list[dict], list[dict]]:
    """(volumes, mounts) of the compile cache on a TPU host's local disk; none elsewhere."""
    if getattr(obj, "llm", None) is None or not on_slice:
        return [], []
    return [{"name": XLA_CACHE_VOLUME, "emptyDir": {}}], [{"name": XLA_CACHE_VOLUME, "mountPath": XLA_CACHE_PATH}]


def llm_model_id(serve_config_doc: Any) -> Optional[str]:
    """The model id of a Serve config whose first application is Ray Serve LLM's OpenAI app; None for any other."""
    apps = serve_config_doc.get("applications") if isinstance(serve_config_doc, dict) else None
    app = apps[0] if isinstance(apps, list) and apps and isinstance(apps[0], dict) else {}
    if app.get("import_path") != admission.LLM_APP_IMPORT_PATH:
        return None
    configs = (app.get("args") or {}).get("llm_configs") or [{}]
    first = configs[0] if isinstance(configs[0], dict) else {}
    return (first.get("model_loading_config") or {}).get("model_id")
