"""What Ray Serve LLM and vLLM accept of an LLM service (a RayService's `llm` block), and what vLLM's TPU backend
(tpu-inference) says of the hardware. The facts only; components/spec/llm_checks.py applies them to a stack's
RayServices and components/render/llm.py writes the Serve config from them."""

from __future__ import annotations

from typing import Optional

from .rules import rule

__all__ = [
    "LLM_APP_IMPORT_PATH",
    "LLM_TP_FITS_REPLICA",
    "LLM_TP_DIVIDES_HEADS",
    "LLM_FITS_HBM",
    "LLM_TPU_GENERATION",
    "LLM_MULTI_HOST",
    "LLM_RAY_VERSION_TPU",
    "LLM_IMAGE",
    "VLLM_TPU_RECOMMENDED",
    "VLLM_TPU_EXPERIMENTAL",
    "VLLM_TPU_STATUS_SOURCE",
    "VLLM_DEFAULT_MEMORY_UTILIZATION",
    "RAY_TPU_ACCELERATOR_TYPES",
    "RAY_GPU_ACCELERATOR_TYPES",
    "kv_cache_bytes",
    "ray_accelerator_type",
]

# Ray Serve LLM's OpenAI-compatible application builder, as a Serve config names it (Ray docs serve/llm/
# quick-start.md "Production deployment": `import_path: ray.serve.llm:build_openai_app`, `args: {llm_configs: [...]}`).
LLM_APP_IMPORT_PATH = "ray.serve.llm:build_openai_app"

# tpu-inference README.md "Compatible TPU Generations" (vllm-project/tpu-inference, main of 2026-08-22, v0.27.0):
# "Recommended: v7x, v5e, v6e", "Experimental: v3, v4, v5p". Keys are the catalogue's generation names.
VLLM_TPU_RECOMMENDED = frozenset({"v5e", "v6e", "tpu7x"})
VLLM_TPU_EXPERIMENTAL = frozenset({"v4", "v5p"})
VLLM_TPU_STATUS_SOURCE = (
    "vllm-project/tpu-inference README.md (v0.27.0, 2026-08): Compatible TPU Generations; release core-features "
    "matrix row multi-host: Failing"
)

# vLLM vllm/config/cache.py CacheConfig.gpu_memory_utilization: float = 0.9 (the share of each device's memory the
# engine takes for weights, activations and KV cache; tpu-inference reads the same engine argument on TPU).
VLLM_DEFAULT_MEMORY_UTILIZATION = 0.9

# Ray's accelerator type names (python/ray/util/accelerators/accelerators.py: GOOGLE_TPU_V4 = "TPU-V4", ...
# GOOGLE_TPU_V6E = "TPU-V6E"; Ray Serve LLM's own TPU placement tests under python/ray/llm/tests/ use "TPU-V7X" for
# Ironwood). Ray Serve LLM adds {"accelerator_type:<name>": 0.001} to each bundle, so the name must be one
# a host advertises.
RAY_TPU_ACCELERATOR_TYPES = {
    "v4": "TPU-V4",
    "v5e": "TPU-V5LITEPOD",
    "v5p": "TPU-V5P",
    "v6e": "TPU-V6E",
    "tpu7x": "TPU-V7X",
}
# GPUs: the names Ray detects from the device (A100 of either size is "A100"; "A100-80G" is never added to a node by
# itself, accelerators.py: "these labels are not auto-added to nodes"). Keys are GKE accelerator names.
RAY_GPU_ACCELERATOR_TYPES = {
    "nvidia-l4": "L4",
    "nvidia-tesla-a100": "A100",
    "nvidia-a100-80gb": "A100",
    "nvidia-h100-80gb": "H100",
    "nvidia-h100-mega-80gb": "H100",
    "nvidia-h200-141gb": "H200",
    "nvidia-b200": "B200",
}


def ray_accelerator_type(kind: str, name: str) -> Optional[str]:
    """Ray's accelerator type for a TPU generation (`kind` "tpu") or a GKE GPU accelerator (`kind` "gpu")."""
    return (RAY_TPU_ACCELERATOR_TYPES if kind == "tpu" else RAY_GPU_ACCELERATOR_TYPES).get(name)


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int, tokens: int) -> int:
    """The KV cache of `tokens` tokens: a key and a value vector per layer and KV head (vLLM's full-attention page
    size, vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes: 2 * block_size * num_kv_heads * head_size *
    dtype size, per layer)."""
    return 2 * layers * kv_heads * head_dim * dtype_bytes * tokens


LLM_TP_FITS_REPLICA = rule(
    "llm-tensor-parallel-fits-replica",
    "An LLM service's tensor parallelism equals or divides the accelerators one replica holds: on a TPU slice the "
    "replica reserves the whole slice (its chips), on a GPU pool the tensor-parallel workers are GPUs of one node.",
    "Ray docs serve/llm/user-guides/tpu.md (tensor_parallel_size x pipeline_parallel_size TPU chips per replica; "
    "with a topology one bundle per host of the slice); vLLM docs serving/parallelism_scaling.md (tensor parallel "
    "size = GPUs per node)",
)
LLM_TP_DIVIDES_HEADS = rule(
    "llm-tensor-parallel-divides-heads",
    "Where the model's architecture is declared, its attention heads are divisible by the tensor parallelism; vLLM "
    "refuses the model otherwise and the replica never starts.",
    "vllm ModelConfig.verify_with_parallel_config: 'Total number of attention heads (...) must be divisible by "
    "tensor parallel size (...)'",
)
LLM_FITS_HBM = rule(
    "llm-fits-replica-memory",
    "Where the model's architecture is declared, its weights plus the KV cache of one max_model_len sequence fit the "
    "share of the replica's accelerator memory vLLM takes (gpu_memory_utilization, default 0.9, of HBM per chip or "
    "GPU from the catalogue x tensor parallelism); vLLM stops at start-up otherwise.",
    "vllm vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory ('To serve at least one request with the "
    "models's max seq len ...'); vllm/config/cache.py gpu_memory_utilization; catalogue HBM "
    "(components/catalog/peaks.py)",
)
LLM_TPU_GENERATION = rule(
    "llm-tpu-generation-recommended",
    "vLLM's TPU backend recommends v5e, v6e and v7x; v4 and v5p are experimental, so an LLM service on them plans "
    "with a warning.",
    VLLM_TPU_STATUS_SOURCE,
)
LLM_MULTI_HOST = rule(
    "llm-multi-host-replica",
    "A replica that spans the hosts of a multi-host slice plans with a warning: tpu-inference's release matrix marks "
    "multi-host failing, and GKE's vLLM-on-TPU tutorial serves single-host.",
    VLLM_TPU_STATUS_SOURCE + "; https://cloud.google.com/kubernetes-engine/docs/tutorials/serve-vllm-tpu",
)
LLM_RAY_VERSION_TPU = rule(
    "llm-ray-version-tpu",
    "An LLM service on a TPU slice runs Ray 2.56 or later: the first release whose Serve LLM takes a TPU "
    "accelerator_config and reserves the slice (components/catalog/ray_versions.py serve-llm-tpu).",
    "ray python/ray/llm/_internal/serve/core/configs/accelerators.py TPUConfig; Ray docs serve/llm/user-guides/tpu.md",
)
LLM_IMAGE = rule(
    "llm-image-has-vllm",
    "An LLM service runs an image with vLLM and Ray Serve LLM at its rayVersion: Ray's own rayproject/ray images hold "
    "neither; on GPUs Ray's rayproject/ray-llm image, on TPUs an image built from vllm/vllm-tpu with ray[llm] "
    "(workloads/Dockerfile.llm-tpu).",
    "Ray docs serve/llm/user-guides/tpu.md (Example: FROM vllm/vllm-tpu, pip install ray[llm]); Docker Hub "
    "rayproject/ray-llm (Ray with vLLM's CUDA build, tags <ray>-py311-cu128)",
)
