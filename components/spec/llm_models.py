"""The validated form of an LLM service: a RayService's `llm` block, which the plan renders as a Ray Serve LLM
application on vLLM (components/render/llm.py). Pure pydantic, in the spelling rules of `models`."""

from __future__ import annotations

import re
from typing import Annotated, Any, Optional

from pydantic import Field, StrictFloat, StrictInt, field_validator, model_validator

from .model_types import Model, NonNegativeInt, PositiveInt, SecretName

# Kubernetes Secret keys: alphanumerics, '-', '_' or '.' (k8s.io/apimachinery validation IsConfigMapKey).
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]{1,253}")
# A Hugging Face repository id: <owner>/<name> of letters, digits, '-', '_' and '.' (huggingface_hub
# utils/_validators.py validate_repo_id, REPO_ID_REGEX).
_HF_REPO = re.compile(r"[A-Za-z0-9][-._A-Za-z0-9]{0,95}/[A-Za-z0-9][-._A-Za-z0-9]{0,95}")
# A Cloud Storage object path: gs://<bucket>/<path> (bucket names: 3-63 lowercase letters, digits, '-', '_', '.').
_GCS_PATH = re.compile(r"gs://([a-z0-9][-_.a-z0-9]{1,61}[a-z0-9])/(\S+)")
Number = Annotated[StrictFloat, Field(gt=0, allow_inf_nan=False)]
NonNegativeNumber = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]


class SecretKeyRef(Model):
    """A key of a Kubernetes Secret in the service's namespace."""

    name: SecretName
    """The Secret's name."""
    key: str = "token"
    """The key that holds the value (default token)."""

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _SECRET_KEY.fullmatch(value):
            raise ValueError("is no Secret key; allowed: letters, digits, '-', '_' or '.' (1 to 253)")
        return value


class ModelArchitecture(Model):
    """What the admission checks need of the model (its config.json on the Hugging Face Hub)."""

    parameters: Number
    """Parameters, e.g. 4.0e9."""
    attention_heads: PositiveInt
    """num_attention_heads."""
    kv_heads: PositiveInt
    """num_key_value_heads (equal to attention_heads without grouped-query attention)."""
    layers: PositiveInt
    """num_hidden_layers."""
    hidden_size: PositiveInt
    """hidden_size."""
    head_dim: Optional[PositiveInt] = None
    """head_dim where the config sets it (default hidden_size / attention_heads)."""
    dtype_bytes: Annotated[StrictInt, Field(ge=1, le=4)] = 2
    """Bytes per weight and KV value (default 2: bf16)."""

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.attention_heads

    @model_validator(mode="after")
    def _grouped(self) -> "ModelArchitecture":
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"kvHeads {self.kv_heads} does not divide attentionHeads {self.attention_heads}; allowed: a divisor "
                "(grouped-query attention shares each KV head among a whole number of query heads)"
            )
        return self


class LlmAutoscaling(Model):
    """Ray Serve's autoscaling of the model's replicas (Serve AutoscalingConfig)."""

    min_replicas: NonNegativeInt = 0
    """Fewest replicas (default 0: nothing runs until a request comes)."""
    max_replicas: PositiveInt = 1
    """Most replicas (default 1)."""
    initial_replicas: Optional[NonNegativeInt] = None
    """Replicas Serve starts with (default min_replicas)."""
    target_ongoing_requests: Optional[Number] = None
    """Requests per replica Serve scales to (default Serve's own)."""
    upscale_delay_s: Optional[NonNegativeNumber] = None
    """Seconds above target before Serve adds a replica (default Serve's own)."""
    downscale_delay_s: Optional[NonNegativeNumber] = None
    """Seconds below target before Serve removes one (default Serve's own)."""

    @model_validator(mode="after")
    def _bounds(self) -> "LlmAutoscaling":
        # Ray Serve AutoscalingConfig.replicas_settings_valid (python/ray/serve/config.py).
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}")
        if self.initial_replicas is not None and not self.min_replicas <= self.initial_replicas <= self.max_replicas:
            raise ValueError(
                f"initialReplicas {self.initial_replicas} is outside minReplicas {self.min_replicas} to "
                f"maxReplicas {self.max_replicas}"
            )
        return self


class LlmConfig(Model):
    """An LLM served by Ray Serve LLM on vLLM, OpenAI-compatible (one model per RayService)."""

    model_id: str = Field(min_length=1, max_length=200)
    """The name clients send as "model" (Ray Serve LLM model_loading_config.model_id)."""
    source: str
    """Where the weights are: gs://<bucket>/<path> (the stack's bucket is read through its /gcs mount, another
    bucket is downloaded by Ray Serve LLM) or hf://<owner>/<name> (a Hugging Face repository)."""
    hf_token_secret: Optional[SecretKeyRef] = None
    """The Kubernetes Secret whose key holds the Hugging Face token (HF_TOKEN), never the token itself."""
    tensor_parallel_size: PositiveInt = 1
    """vLLM tensor parallelism: chips or GPUs one replica shards the model over (default 1)."""
    max_model_len: PositiveInt
    """The longest sequence (prompt plus output tokens) vLLM accepts."""
    engine_args: dict[str, Any] = {}
    """Further vLLM engine arguments (snake_case, as vLLM's EngineArgs), e.g. gpu_memory_utilization."""
    architecture: Optional[ModelArchitecture] = None
    """The model's shape; when given, the plan checks tensor parallelism against its heads and that it fits."""
    autoscaling: LlmAutoscaling = LlmAutoscaling()
    """Serve's autoscaling of the replicas."""
    max_ongoing_requests: Optional[PositiveInt] = None
    """Requests one replica takes at once (default Ray Serve LLM's own)."""

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not value.strip() or any(c.isspace() for c in value):
            raise ValueError("holds blanks; allowed: a name without spaces, such as qwen3-4b")
        return value

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith("hf://") and _HF_REPO.fullmatch(value[5:]):
            return value
        if _GCS_PATH.fullmatch(value):
            return value
        raise ValueError(
            "is no model source; allowed: gs://<bucket>/<path> or hf://<owner>/<name> (a Hugging Face repository)"
        )

    @field_validator("engine_args")
    @classmethod
    def _engine_args(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Those the block has its own keys for: one place for each fact.
        own = {"tensor_parallel_size": "tensorParallelSize", "max_model_len": "maxModelLen", "model": "source"}
        taken = sorted(set(value) & set(own))
        if taken:
            raise ValueError(
                f"sets {', '.join(taken)}; allowed: the llm block's own key ({', '.join(own[k] for k in taken)})"
            )
        utilisation = value.get("gpu_memory_utilization")
        if utilisation is not None and not (
            isinstance(utilisation, (int, float)) and not isinstance(utilisation, bool) and 0 < utilisation <= 1
        ):
            raise ValueError(f"gpu_memory_utilization {utilisation!r} is invalid; allowed: a number above 0, at most 1")
        return value

    @property
    def memory_utilization(self) -> Optional[float]:
        value = self.engine_args.get("gpu_memory_utilization")
        return float(value) if value is not None else None

    def gcs_object(self) -> Optional[tuple[str, str]]:
        """(bucket, path) of a gs:// source; None for a Hugging Face one."""
        found = _GCS_PATH.fullmatch(self.source)
        return (found.group(1), found.group(2)) if found else None

    @property
    def hf_repo(self) -> Optional[str]:
        return self.source[5:] if self.source.startswith("hf://") else None


__all__ = ["LlmConfig", "LlmAutoscaling", "ModelArchitecture", "SecretKeyRef"]
