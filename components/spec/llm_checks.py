"""The rules of an LLM service (a RayService's `llm` block) against the slice or pool it runs on: the image, the Ray
version, tensor parallelism against the replica's chips or GPUs and the model's heads, the weights and one sequence's
KV cache against the replica's memory, the replicas against the worker group, and vLLM TPU's own status of the
generation and of multi-host replicas (warnings). Pure; the facts and their sources are in admission/llm.py."""

from __future__ import annotations

from .. import admission, catalog
from ..catalog import ray_versions
from .llm_models import LlmConfig
from .operations import is_plain_ray_image
from .paths import Paths
from .problems import Problem
from .ray_models import RayServiceConfig

GB = 10**9


def _gb(n: float) -> str:
    return f"{n / GB:.1f} GB"


def _fit(llm: LlmConfig, base: str, hbm_per_unit: int, unit: str, problems: list[Problem], paths: Paths) -> None:
    """The model's heads against tensor parallelism, and its weights plus one max_model_len sequence's KV cache
    against the share of the replica's memory vLLM takes."""
    arch = llm.architecture
    tp = llm.tensor_parallel_size
    if arch is None:
        return
    if arch.attention_heads % tp:
        problems.append(
            Problem(
                f"{base}.{paths.key('tensor_parallel_size')}",
                f"{tp} does not divide the model's {arch.attention_heads} attention heads; allowed: a divisor of "
                f"{arch.attention_heads} ({admission.LLM_TP_DIVIDES_HEADS.id})",
            )
        )
    weights = arch.parameters * arch.dtype_bytes
    kv = admission.kv_cache_bytes(arch.layers, arch.kv_heads, arch.head_size, arch.dtype_bytes, llm.max_model_len)
    share = llm.memory_utilization or admission.VLLM_DEFAULT_MEMORY_UTILIZATION
    budget = hbm_per_unit * tp * share
    if weights + kv > budget:
        problems.append(
            Problem(
                f"{base}.{paths.key('max_model_len')}",
                f"{llm.max_model_len}: the weights ({_gb(weights)}) plus the KV cache of one {llm.max_model_len}-token "
                f"sequence ({_gb(kv)}) need {_gb(weights + kv)}, more than vLLM's {share:g} of {tp} x "
                f"{_gb(hbm_per_unit)} {unit} ({_gb(budget)}); allowed: a shorter maxModelLen, more "
                f"tensorParallelSize on a larger slice or node, or a smaller model ({admission.LLM_FITS_HBM.id})",
            )
        )


def check_llm_service(obj: RayServiceConfig, i: int, known: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    llm = obj.llm
    if llm is None or not obj.intact("llm", "worker_groups", "image", "ray_version"):
        return []
    base = paths("ray_services", i, "llm")
    problems: list[Problem] = []
    if is_plain_ray_image(obj.image):
        problems.append(
            Problem(
                paths("ray_services", i, "image"),
                f"{obj.image} holds neither vLLM nor Ray Serve LLM; allowed: rayproject/ray-llm:"
                f"{obj.ray_version}-py311-cu128 on GPUs, an image built by workloads/Dockerfile.llm-tpu on TPUs "
                f"({admission.LLM_IMAGE.id})",
            )
        )
    groups = [(j, g) for j, g in enumerate(obj.worker_groups) if g.target[0] in ("slice", "gpu_pool")]
    if len(groups) != 1:
        problems.append(
            Problem(
                paths("ray_services", i, "worker_groups"),
                f"{len(groups)} groups on a TPU slice or a GPU pool; allowed: exactly one, where the model's "
                "replicas run",
            )
        )
        return problems
    j, group = groups[0]
    kind, name = group.target
    if name not in known[kind]:
        return problems  # reported with the group
    try:
        resolved = known[kind][name].shape if kind == "slice" else known[kind][name].machine
    except catalog.CatalogError:
        return problems  # a topology or machine type that is itself invalid: reported with the slice or pool
    tp = llm.tensor_parallel_size
    tp_path = f"{base}.{paths.key('tensor_parallel_size')}"
    most = llm.autoscaling.max_replicas
    if kind == "slice":
        entry, shape = known["slice"][name], resolved
        feature = ray_versions.ray_feature("serve-llm-tpu")
        if not ray_versions.ray_has(obj.ray_version, "serve-llm-tpu"):
            problems.append(
                Problem(
                    paths("ray_services", i, "ray_version"),
                    f"{obj.ray_version}: Ray Serve LLM reserves TPU slices from Ray {feature.since}; allowed: "
                    f"{feature.since} or later ({admission.LLM_RAY_VERSION_TPU.id})",
                )
            )
        if tp > shape.chips or shape.chips % tp:
            problems.append(
                Problem(
                    tp_path,
                    f"{tp} on slice {name} ({shape.topology}, {shape.chips} chips: one replica reserves the whole "
                    f"slice); allowed: {shape.chips} or a divisor of it ({admission.LLM_TP_FITS_REPLICA.id})",
                )
            )
        else:
            hbm = catalog.peak("tpu", entry.generation).hbm_bytes
            _fit(llm, base, hbm, f"{entry.generation} HBM", problems, paths)
        if entry.generation not in admission.VLLM_TPU_RECOMMENDED:
            status = "experimental" if entry.generation in admission.VLLM_TPU_EXPERIMENTAL else "not listed"
            warnings.append(
                f"{base}: TPU {entry.generation} (slice {name}) is {status} for vLLM's TPU backend, which "
                f"recommends v5e, v6e and v7x ({admission.LLM_TPU_GENERATION.id}: {admission.VLLM_TPU_STATUS_SOURCE})"
            )
        if shape.multi_host:
            warnings.append(
                f"{base}: one replica spans the {shape.hosts} hosts of slice {name} ({shape.topology}); vLLM TPU's "
                f"release matrix marks multi-host failing ({admission.LLM_MULTI_HOST.id}: "
                f"{admission.VLLM_TPU_STATUS_SOURCE})"
            )
        room = group.max  # one replica per slice
        unit = f"slice{'s' if room != 1 else ''} of {name}"
    else:
        pool = known["gpu_pool"][name]
        gpus = resolved.gpus
        if tp > gpus or gpus % tp:
            problems.append(
                Problem(
                    tp_path,
                    f"{tp} on pool {name} ({gpus} x {pool.accelerator} per node); allowed: {gpus} or a divisor of it "
                    f"(the tensor-parallel workers share one node: {admission.LLM_TP_FITS_REPLICA.id})",
                )
            )
        else:
            hbm = catalog.peak("gpu", pool.accelerator).hbm_bytes
            _fit(llm, base, hbm, f"{pool.accelerator} memory", problems, paths)
        room = gpus // tp * group.max if tp <= gpus else 0
        unit = f"replicas of {tp} GPUs on {group.max} node(s) of {name}"
    if most > room and not problems:
        problems.append(
            Problem(
                f"{base}.autoscaling.{paths.key('max_replicas')}",
                f"{most} replicas, more than group {group.name} holds at maxReplicas {group.max} ({room} {unit}); "
                f"allowed: at most {room}, or a larger maxReplicas ({admission.SERVE_REPLICAS_FIT_GROUPS.id})",
            )
        )
    return problems


def check_llm_services(services: list, known: dict, paths: Paths, warnings: list[str]) -> list[Problem]:
    return [
        p
        for i, obj in enumerate(services)
        if obj is not None
        for p in check_llm_service(obj, i, known, paths, warnings)
    ]
