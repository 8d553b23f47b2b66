"""What Ray Serve accepts of a RayService's Serve config and what its autoscaler can follow on the service's worker
groups. The facts only; components/spec/serve_checks.py applies them to a stack's RayServices."""

from __future__ import annotations

from .rules import rule

__all__ = [
    "SERVE_AUTOSCALING_BOUNDS",
    "SERVE_REPLICA_FITS",
    "SERVE_REPLICAS_FIT_GROUPS",
    "TPU_CHIPS_PER_REPLICA",
    "AUTOSCALING_INTS",
    "AUTOSCALING_FLOATS",
    "SERVE_DEFAULT_MIN_REPLICAS",
    "SERVE_DEFAULT_MAX_REPLICAS",
]

# Ray 2.55 python/ray/serve/config.py AutoscalingConfig: min_replicas NonNegativeInt (default 1), initial_replicas
# Optional[NonNegativeInt], max_replicas PositiveInt (default 1), target_ongoing_requests PositiveFloat,
# upscale_delay_s / downscale_delay_s / downscale_to_zero_delay_s NonNegativeFloat.
AUTOSCALING_INTS = {"min_replicas": 0, "initial_replicas": 0, "max_replicas": 1}
AUTOSCALING_FLOATS = {
    "target_ongoing_requests": "above 0",
    "upscale_delay_s": "0 or more",
    "downscale_delay_s": "0 or more",
    "downscale_to_zero_delay_s": "0 or more",
}
SERVE_DEFAULT_MIN_REPLICAS = SERVE_DEFAULT_MAX_REPLICAS = 1
# Ray 2.55 python/ray/_private/accelerators/tpu.py TPU_VALID_CHIP_OPTIONS: the TPU chips one Ray worker process (one
# Serve replica) may hold on a host.
TPU_CHIPS_PER_REPLICA = (1, 2, 4, 8)

SERVE_AUTOSCALING_BOUNDS = rule(
    "serve-autoscaling-bounds",
    "A Serve deployment's autoscaling_config keeps min_replicas <= initial_replicas <= "
    "max_replicas, max_replicas >= 1, target_ongoing_requests > 0 and non-negative delays, and sets no integer "
    "num_replicas beside it; Serve refuses the config otherwise and the RayService never deploys.",
    "ray python/ray/serve/config.py AutoscalingConfig (replicas_settings_valid) and python/ray/serve/schema.py "
    "DeploymentSchema (validate_num_replicas_and_autoscaling_config), Ray 2.55.0",
)
SERVE_REPLICA_FITS = rule(
    "serve-replica-fits-a-node",
    "One Serve replica's ray_actor_options ask for at most the TPU chips of one host of "
    "its slice (1, 2, 4 or 8 chips: what Ray gives one process) or the GPUs of one node of its pool; a larger replica "
    "stays pending forever.",
    "ray python/ray/_private/accelerators/tpu.py TPU_VALID_CHIP_OPTIONS (Ray 2.55.0); Ray schedules an actor on one "
    "node (https://docs.ray.io/en/latest/ray-core/scheduling/resources.html)",
)
SERVE_REPLICAS_FIT_GROUPS = rule(
    "serve-replicas-fit-groups",
    "The replicas Serve may run at max_replicas fit the service's worker groups at their "
    "maxReplicas (replicas per host or node x hosts x maxReplicas); the rest would stay PENDING_ALLOCATION while the "
    "autoscaler asks for nodes the groups cannot add.",
    "KubeRay autoscaler: a worker group never exceeds maxReplicas "
    "(https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html)",
)
