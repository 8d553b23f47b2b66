"""Which Ray release first brings each behaviour the stacks rely on, read from the released wheels (PyPI `ray==X`).

One table, pure data: the admission rules (Ray's autoscaler and TPU generations), the multislice warnings, the
drain-before-shutdown grace period and the docs (docs/admission.md) all read it. Each row names the first release
that has the behaviour, the file of the wheel where it is, and the pull request that brought it where one is known.
Versions before the first release checked for a row are taken not to have it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "RayFeature",
    "RAY_FEATURES",
    "DEFAULT_RAY_VERSION",
    "KUBERAY_MINIMUM",
    "ray_feature",
    "ray_lacks",
    "ray_has",
    "ray_version_key",
    "RAY_AUTOSCALER_TPU_GENERATIONS",
    "autoscaler_tpu_generations",
    "DRAIN_TIMEOUT_S",
    "DEFAULT_WORKER_GROUP_START_TIMEOUT_S",
    "SLICE_RESERVATION_TIMEOUT_S",
    "markdown",
]


@dataclass(frozen=True)
class RayFeature:
    key: str
    since: str  # the first Ray release that has it
    what: str
    source: str  # where in the released wheel, and the pull request


RAY_FEATURES: tuple[RayFeature, ...] = (
    RayFeature(
        "label-selector",
        "2.45.0",
        "task and actor `label_selector` option",
        "ray/_private/ray_option_utils.py (absent in 2.44.1)",
    ),
    RayFeature(
        "bundle-label-selector",
        "2.47.0",
        "`bundle_label_selector` of placement groups",
        "ray/util/placement_group.py (absent in 2.46.0)",
    ),
    RayFeature(
        "tpu-node-labels",
        "2.49.0",
        "TPU hosts labelled ray.io/tpu-slice-name, tpu-worker-id, tpu-topology, tpu-pod-type",
        "ray/_private/accelerators/tpu.py get_current_node_accelerator_labels (absent 2.48.0)",
    ),
    RayFeature("jax-trainer", "2.49.0", "Ray Train JaxTrainer", "ray/train/v2/jax/jax_trainer.py (absent 2.48.0)"),
    RayFeature(
        "autoscaler-group-labels",
        "2.50.0",
        "the KubeRay autoscaler reads a worker group's top-level labels",
        "ray/autoscaler/_private/kuberay/autoscaling_config.py _get_labels_from_group_spec (absent 2.49.2)",
    ),
    RayFeature(
        "slice-placement-group",
        "2.52.0",
        "ray.util.tpu SlicePlacementGroup (whole slices for one job)",
        "ray/util/tpu.py (absent 2.51.2)",
    ),
    RayFeature(
        "jax-multislice",
        "2.54.0",
        "JaxTrainer over several slices: slice placement groups and MEGASCALE_*",
        "ray/train/v2/jax/config.py get_tpu_coordinator_env_vars (absent 2.53.0)",
    ),
    RayFeature(
        "autoscaler-tpu7x",
        "2.56.0",
        "the KubeRay autoscaler maps GKE's tpu7x (Ironwood); 2.55 raises KeyError: 'tpu7x' for the whole cluster",
        "ray/autoscaler/_private/kuberay/utils.py gke_tpu_accelerator_to_generation; ray-project/ray#62786",
    ),
    RayFeature(
        "autoscaler-v5litepod",
        "2.56.0",
        "the autoscaler names v5e head resources TPU-v5litepod-N-head, as "
        "the hosts do (2.55 writes TPU-v5e-N-head, which no host advertises)",
        "ray/autoscaler/_private/kuberay/utils.py; ray-project/ray#62786",
    ),
    RayFeature(
        "multislice-megascale-refresh",
        "2.56.0",
        "JaxTrainer overwrites stale MEGASCALE_COORDINATOR_ADDRESS, "
        "MEGASCALE_NUM_SLICES and MEGASCALE_SLICE_ID after a slice is replaced (2.55 keeps them and hangs)",
        "ray/train/v2/jax/config.py _JAX_MULTISLICE_OVERRIDE_KEYS; ray-project/ray#62893",
    ),
    RayFeature(
        "serve-llm-tpu",
        "2.56.0",
        "Ray Serve LLM on TPU: the `TPUConfig` accelerator config of an LLM deployment",
        "ray/llm/_internal/serve/core/configs/accelerators.py TPUConfig (absent 2.55.0)",
    ),
    RayFeature(
        "data-iter-jax-batches",
        "2.56.0",
        "Ray Data `iter_jax_batches`: batches as JAX arrays sharded over the job's devices",
        "ray/data/iterator.py DataIterator.iter_jax_batches, ray/data/util/jax_util.py (absent 2.55.0)",
    ),
    RayFeature(
        "slice-reservation-timeout",
        "2.56.0",
        "a TPU slice reservation waits "
        "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S and a timeout is retried (2.55: a hard-coded 100 s, and the "
        "run fails)",
        "ray/train/v2/_internal/execution/worker_group/worker_group.py head_reservation_timeout_s"
        "; 2.55 ray/_private/accelerators/tpu.py reserve_tpu_slice (timeout = 100); ray-project/ray#62893",
    ),
    RayFeature(
        "serve-llm-tpu",
        "2.56.0",
        "Ray Serve LLM on TPUs: LLMConfig accelerator_config {kind: tpu, topology} reserves a whole slice per "
        "replica through SlicePlacementGroup",
        "ray/llm/_internal/serve/core/configs/accelerators.py TPUConfig, TPUAccelerator; Ray docs serve/llm/"
        "user-guides/tpu.md (TPU serving)",
    ),
    RayFeature(
        "drain-on-sigterm",
        "2.57.0",
        "`ray start --block` drains its node for RAY_GRACEFUL_SHUTDOWN_DRAIN_"
        "TIMEOUT_S (30 s) on SIGTERM before it stops",
        "ray/_private/ray_constants.py, ray/_private/node.py _drain_node_before_shutdown; ray-project/ray#64454",
    ),
    RayFeature(
        "data-iter-blocked-stages",
        "2.57.0",
        "Ray Data splits the training loop's blocked time by stage (gauges data_iter_blocked_<stage>_seconds: "
        "production wait, data transfer, batching, format, collate, finalize); 2.55 has only the total",
        "ray/data/_internal/stats.py iter_blocked_production_wait_s ... (absent 2.56.0)",
    ),
    RayFeature(
        "train-preemption-watcher",
        "2.57.0",
        "Ray Train logs draining (preempted) nodes",
        "ray/train/v2/_internal/execution/preemption.py; ray-project/ray#63807",
    ),
    RayFeature(
        "max-preemption-failures",
        "2.58.0",
        "FailureConfig.max_preemption_failures: preemptions counted apart from max_failures",
        "ray/train/v2/api/config.py FailureConfig; ray-project/ray#64360",
    ),
)

_BY_KEY = {feature.key: feature for feature in RAY_FEATURES}

# The Ray release the stacks, the workloads images and requirements-workloads.txt use unless a stack pins another
# (PyPI ray 2.60.0). 2.55.0 is the oldest the project plans for TPUs: the release the rows above start from.
DEFAULT_RAY_VERSION = "2.60.0"
# The oldest KubeRay the version set asks of the Ray Operator add-on: KubeRay v1.3.x and v1.4.x "support Ray 2.38.0 and
# later" (docs.ray.io, KubeRay upgrade guide, "KubeRay / Ray compatibility"), so 2.55.0 to 2.60.0 alike; the stacks'
# KubeRay fields are checked against the CRDs of v1.3.2 and v1.7.0 (tests/kuberay_schema.py), and plan.verify reads
# the live cluster's.
KUBERAY_MINIMUM = ("v1.3", "KubeRay v1.3 and later support Ray 2.38.0 and later (docs.ray.io KubeRay upgrade guide)")


def ray_version_key(version: str) -> tuple[int, ...]:
    """2.56.1 -> (2, 56, 1); a release candidate or dev suffix counts as its release."""
    return tuple(int(part) for part in re.findall(r"[0-9]+", version)[:3])


def ray_feature(key: str) -> RayFeature:
    return _BY_KEY[key]


def ray_has(ray_version: str, key: str) -> bool:
    return ray_version_key(ray_version) >= ray_version_key(_BY_KEY[key].since)


def ray_lacks(ray_version: str, than: str = DEFAULT_RAY_VERSION) -> list[RayFeature]:
    """The rows a Ray release lacks that `than` has, oldest first."""
    return [f for f in RAY_FEATURES if ray_version_key(ray_version) < ray_version_key(f.since) <= ray_version_key(than)]


# GKE accelerator label values the KubeRay autoscaler maps to a TPU generation (`gke_tpu_accelerator_to_generation`
# in ray/autoscaler/_private/kuberay/utils.py of each wheel; unchanged 2.49 -> 2.55 and 2.56 -> 2.60).
_AUTOSCALER_MAP_2_55 = {
    "tpu-v4-podslice": "v4",
    "tpu-v5-lite-device": "v5e",
    "tpu-v5-lite-podslice": "v5e",
    "tpu-v5p-slice": "v5p",
    "tpu-v6e-slice": "v6e",
}
_AUTOSCALER_MAP_2_56 = {
    "tpu-v4-podslice": "v4",
    "tpu-v5-lite-device": "v5litepod",
    "tpu-v5-lite-podslice": "v5litepod",
    "tpu-v5p-slice": "v5p",
    "tpu-v6e-slice": "v6e",
    "tpu7x": "v7x",
}
RAY_AUTOSCALER_TPU_GENERATIONS: dict[str, dict[str, str]] = {
    "2.55.0": _AUTOSCALER_MAP_2_55,
    _BY_KEY["autoscaler-tpu7x"].since: _AUTOSCALER_MAP_2_56,
}


def autoscaler_tpu_generations(ray_version: str) -> dict[str, str]:
    """GKE accelerator -> the generation name Ray's autoscaler puts in TPU-<generation>-<cores>-head."""
    known = [v for v in RAY_AUTOSCALER_TPU_GENERATIONS if ray_version_key(v) <= ray_version_key(ray_version)]
    return RAY_AUTOSCALER_TPU_GENERATIONS[max(known or ["2.55.0"], key=ray_version_key)]


# Ray 2.57.0 ray/_private/ray_constants.py: RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S = env_float(..., 30.0).
DRAIN_TIMEOUT_S = 30
# Ray 2.55 ray/train/v2/_internal/constants.py: DEFAULT_WORKER_GROUP_START_TIMEOUT_S: float = 60.0 (ray-project/ray
# #60376), read from RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S.
DEFAULT_WORKER_GROUP_START_TIMEOUT_S = 60
# Ray 2.55 ray/_private/accelerators/tpu.py reserve_tpu_slice: `timeout = 100` (seconds), not configurable.
SLICE_RESERVATION_TIMEOUT_S = 100


def markdown() -> str:
    """The table as docs/admission.md lists it (tests/library/test_multislice_plan.py keeps the page equal to this)."""
    lines = ["| Ray behaviour | first release | where (released wheel) |", "| --- | --- | --- |"]
    lines += [f"| `{f.key}`: {f.what} | {f.since} | {f.source} |" for f in RAY_FEATURES]
    return "\n".join(lines) + "\n"
