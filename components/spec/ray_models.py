"""The validated forms of the Ray objects (RayCluster, RayService, RayJob) and their worker groups (pydantic, pure:
no Pulumi import), in the spelling rules of `models`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Field, StrictBool, StrictInt, ValidationInfo, field_validator, model_validator

from .. import admission
from ..catalog.ray_versions import DEFAULT_RAY_VERSION
from .llm_models import LlmConfig
from .model_types import (
    Image,
    Model,
    Name,
    Namespace,
    NonNegativeInt,
    PositiveInt,
    Quantity,
    RayVersion,
)
from .operations import check_ray_version_of_image

# The Ray project's own image of this Ray version, as KubeRay's TPU samples use; TPU access comes from the GKE TPU
# device plugin, and JAX/libtpu from a derived image (workloads/) or the job's runtime env. Tagged
# <ray version>-py<python> (Docker Hub rayproject/ray).
DEFAULT_RAY_IMAGE = f"rayproject/ray:{DEFAULT_RAY_VERSION}-py311"

# --- Ray objects ---------------------------------------------------------------------------------------------------


class WorkerGroupConfig(Model):
    """A Ray worker group on exactly one of a TPU slice (replicas count slices), a GPU pool or a CPU pool (replicas
    count pods, one per node)."""

    name: Name
    """Group name (KubeRay groupName)."""
    slice: Optional[str] = None
    """The name of a TPU slice (an entry of `tpu_slices`)."""
    gpu_pool: Optional[str] = None
    """The name of a GPU pool (an entry of `gpu_pools`)."""
    cpu_pool: Optional[str] = None
    """The name of a CPU pool (an entry of `cpu_pools`)."""
    replicas: NonNegativeInt = 1
    """Slices (TPU) or pods (GPU, CPU) the group starts with."""
    min_replicas: NonNegativeInt = 0
    """Fewest the Ray autoscaler keeps."""
    max_replicas: Optional[NonNegativeInt] = None
    """Most the Ray autoscaler may ask for (default: replicas)."""
    # Unset: 60 s on TPU slices, Kubernetes' 30 s elsewhere (admission.RAY_DRAIN_GRACE, spec/multislice.py).
    termination_grace_period_seconds: Optional[Annotated[StrictInt, Field(ge=0, le=86400)]] = None
    """Seconds a worker pod has to drain before it is killed (default: 60 on TPU slices, 30 elsewhere)."""

    @property
    def max(self) -> int:
        return self.replicas if self.max_replicas is None else self.max_replicas

    @property
    def target(self) -> tuple[str, Optional[str]]:
        """Where the group runs: ("slice" | "gpu_pool" | "cpu_pool", name); the first given when several are."""
        for kind in ("slice", "gpu_pool", "cpu_pool"):
            if getattr(self, kind) is not None:
                return kind, getattr(self, kind)
        return "slice", None


class HeadConfig(Model):
    """The Ray head pod's CPU and memory (Kubernetes quantities)."""

    cpu: Quantity = "2"
    """Default 2."""
    memory: Quantity = "8Gi"
    """Default 8Gi."""


class RayAutoscalingConfig(Model):
    """Ray's in-tree autoscaler."""

    enabled: StrictBool = False
    """Run the autoscaler sidecar (default false)."""
    idle_timeout_seconds: NonNegativeInt = 600
    """Idle time before a worker group scales down (default 600)."""


class RayObjectConfig(Model):
    """The Ray cluster a RayCluster, RayService or RayJob runs."""

    name: Name
    """Object name (a DNS label)."""
    namespace: Namespace = "ray"
    """Kubernetes namespace (default ray); never kube-system and the like."""
    image: Image = DEFAULT_RAY_IMAGE
    """Ray container image (default rayproject/ray:2.60.0-py311)."""
    ray_version: RayVersion = DEFAULT_RAY_VERSION
    """Ray version the image runs (default 2.60.0); gates features such as autoscaling of Ironwood groups."""
    head: HeadConfig = HeadConfig()
    """The head pod's resources."""
    worker_groups: list[WorkerGroupConfig]
    """Worker groups, each on one slice, GPU pool or CPU pool."""
    autoscaling: RayAutoscalingConfig = RayAutoscalingConfig()
    """Ray's in-tree autoscaler."""
    gcs_fuse: StrictBool = True
    """Mount the platform's bucket at /gcs through the GCS FUSE CSI driver (needs a bucket)."""
    wait_for_ready: StrictBool = False
    """Let `pulumi up` wait until the object is ready."""
    # Ray Train's, on the head (admission.RAY_TRAIN_START_TIMEOUT); unset: 900 s with TPU groups (spec/multislice.py).
    worker_group_start_timeout_seconds: Optional[Annotated[StrictInt, Field(ge=1, le=86400)]] = None
    """How long Ray Train waits for the worker group to start (default: 900 with TPU groups)."""

    @field_validator("ray_version")
    @classmethod
    def _ray_of_image(cls, value: str, info: ValidationInfo) -> str:
        if isinstance(info.data.get("image"), str):  # the image validated (fields validate in order)
            check_ray_version_of_image(value, info.data["image"])
        return value


class RayClusterConfig(RayObjectConfig):
    """A RayCluster: the Ray cluster alone (args.py spells it RayObjectArgs)."""


class RayServiceConfig(RayObjectConfig):
    """A RayService: a Ray cluster serving a Ray Serve config."""

    serve_config: Optional[dict[str, Any]] = None
    """Ray Serve config (serveConfigV2) as a mapping; exactly one of serve_config and llm."""
    llm: Optional[LlmConfig] = None
    """An LLM on vLLM through Ray Serve LLM (the plan writes its serveConfigV2); exactly one of serve_config and llm."""
    upgrade_strategy: Literal["NewCluster", "None"] = "NewCluster"
    """NewCluster (needs twice the slices during an upgrade) or None."""

    @model_validator(mode="after")
    def _one_application(self) -> "RayServiceConfig":
        if (self.serve_config is None) == (self.llm is None):
            given = "both" if self.llm is not None else "neither"
            raise ValueError(f"{given} of serveConfig and llm given; allowed: exactly one (what the service serves)")
        return self


class RayJobConfig(RayObjectConfig):
    """A RayJob: a job on a Ray cluster of its own, or on an existing RayCluster."""

    entrypoint: str = Field(min_length=1)
    """The command the job runs."""
    # Run on an existing RayCluster of the same namespace (KubeRay `clusterSelector`) instead of a cluster of its own.
    cluster: Optional[Name] = None
    """Run on this existing RayCluster of the same namespace instead of a cluster of its own."""
    worker_groups: list[WorkerGroupConfig] = []
    runtime_env: Optional[dict[str, Any]] = None
    """Ray runtime environment (runtimeEnvYAML) as a mapping."""
    shutdown_after_job_finishes: StrictBool = True
    """Delete the job's own Ray cluster when it ends (default true)."""
    suspend: StrictBool = False
    """Create the job suspended (KubeRay spec.suspend): no Ray cluster, no pods, nothing billed, until it is set to
    false; a template (default false)."""
    ttl_seconds_after_finished: Optional[NonNegativeInt] = None
    """Keep the finished job this long before deleting it (with shutdown_after_job_finishes)."""
    active_deadline_seconds: Optional[PositiveInt] = None
    """Fail the job after this long."""
    submission_mode: Literal["K8sJobMode", "HTTPMode"] = "K8sJobMode"
    """K8sJobMode (default) or HTTPMode."""

    @field_validator("entrypoint")
    @classmethod
    def _entrypoint(cls, value: str) -> str:
        # KubeRay's submitter Job runs `ray job submit ... -- <entrypoint>` (Ray docs, rayjob-quick-start.md), whose
        # command argument is required (Ray 2.55 ray/dashboard/modules/job/cli.py: entrypoint nargs=-1,
        # required=True): a blank entrypoint is no command, and the submitter fails.
        if not value.strip():
            raise ValueError("is blank; allowed: the command the job runs, such as python train.py")
        admission.check_entrypoint(value)  # bash runs it (admission.ENTRYPOINT_SHELL)
        return value
