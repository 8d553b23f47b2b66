"""What Ray Serve accepts of a RayService's Serve config and what its autoscaler can follow on the service's worker
groups. The facts and the pure checks; components/spec/serve_schema.py and serve_checks.py apply them to a stack's
RayServices."""

from __future__ import annotations

from typing import Any, Optional

from .rules import rule

__all__ = [
    "SERVE_APPLICATIONS",
    "SERVE_ROUTE_PREFIX",
    "SERVE_IMPORT_PATH",
    "SERVE_DEPLOYMENT_NUMBERS",
    "SERVE_AUTOSCALING_BOUNDS",
    "SERVE_REPLICA_FITS",
    "SERVE_REPLICA_FITS_POD",
    "SERVE_REPLICAS_FIT_GROUPS",
    "TPU_CHIPS_PER_REPLICA",
    "RAY_RESOURCE_UNIT",
    "SERVE_REPLICA_RESOURCES",
    "resource_quantity_problem",
    "AUTOSCALING_FIELDS",
    "SERVE_DEFAULT_MIN_REPLICAS",
    "SERVE_DEFAULT_MAX_REPLICAS",
    "SERVE_DEFAULT_APP_NAME",
    "SERVE_DEFAULT_ROUTE_PREFIX",
    "route_prefix_problem",
    "import_path_problem",
]

_SCHEMA = "ray python/ray/serve/schema.py (Ray 2.55.0)"

# Ray 2.55 python/ray/serve/config.py AutoscalingConfig: each field's pydantic type as (number kind, bound, bound
# excluded, may be null): NonNegativeInt, Optional[NonNegativeInt], PositiveInt, PositiveFloat, NonNegativeFloat.
# Serve validates the mapping with pydantic's lax mode, which reads a quoted number ("2", " 2 ", "1e1" for a float)
# as the number: Ray accepts those.
AUTOSCALING_FIELDS: dict[str, tuple[str, float, bool, bool]] = {
    "min_replicas": ("int", 0, False, False),
    "initial_replicas": ("int", 0, False, True),
    "max_replicas": ("int", 0, True, False),
    "target_ongoing_requests": ("float", 0, True, True),
    "metrics_interval_s": ("float", 0, True, False),
    "look_back_period_s": ("float", 0, True, False),
    "smoothing_factor": ("float", 0, True, False),
    "upscale_smoothing_factor": ("float", 0, True, True),
    "downscale_smoothing_factor": ("float", 0, True, True),
    "upscaling_factor": ("float", 0, True, True),
    "downscaling_factor": ("float", 0, True, True),
    "upscale_delay_s": ("float", 0, False, False),
    "downscale_delay_s": ("float", 0, False, False),
    "downscale_to_zero_delay_s": ("float", 0, False, True),
}
SERVE_DEFAULT_MIN_REPLICAS = SERVE_DEFAULT_MAX_REPLICAS = 1  # AutoscalingConfig min_replicas, max_replicas defaults
# schema.py ServeApplicationSchema: name defaults to SERVE_DEFAULT_APP_NAME ("default", serve/_private/constants.py),
# route_prefix to "/".
SERVE_DEFAULT_APP_NAME, SERVE_DEFAULT_ROUTE_PREFIX = "default", "/"
# Ray 2.55 python/ray/_private/accelerators/tpu.py TPU_VALID_CHIP_OPTIONS: the TPU chips one Ray worker process (one
# Serve replica) may hold on a host.
TPU_CHIPS_PER_REPLICA = (1, 2, 4, 8)

SERVE_APPLICATIONS = rule(
    "serve-applications",
    "A RayService's serveConfig is a multi-application Serve config: an `applications` list whose names are "
    'non-empty and unique (unset: "default") and whose route prefixes are unique (unset: "/"); KubeRay PUTs it to '
    "the dashboard's /api/serve/applications/, which refuses any other config, and the service never serves.",
    f"{_SCHEMA} ServeDeploySchema (applications required; application_names_unique, application_routes_unique, "
    "application_names_nonempty); ray dashboard/modules/serve/serve_head.py (ServeDeploySchema.model_validate); "
    "ray-project/kuberay v1.7.0 utils/dashboardclient/dashboard_httpclient.go (DeployPathV2)",
)
SERVE_ROUTE_PREFIX = rule(
    "serve-route-prefix",
    'A Serve application\'s route_prefix starts with "/", does not end with "/" (unless it is "/") and holds no "{" '
    'or "}"; null serves no HTTP route.',
    "ray python/ray/serve/_private/utils.py validate_route_prefix, called by _private/application_state.py "
    "override_deployment_info when the application deploys (Ray 2.55.0)",
)
SERVE_IMPORT_PATH = rule(
    "serve-import-path",
    "A Serve application's import_path is required and names module:attribute (one colon, neither first nor last) "
    "or module.attribute (its last dot neither first nor last).",
    f"{_SCHEMA} ServeApplicationSchema (import_path required; import_path_format_valid)",
)
SERVE_DEPLOYMENT_NUMBERS = rule(
    "serve-deployment-numbers",
    'A Serve deployment has a name; its num_replicas is a whole number of 1 or more or "auto" (a quoted number is '
    "refused) and its max_ongoing_requests a whole number of 1 or more (a quoted one is read as the number).",
    f"{_SCHEMA} DeploymentSchema (name required; num_replicas Optional[Union[PositiveInt, str]] and "
    "validate_num_replicas_and_autoscaling_config; max_ongoing_requests int, gt=0)",
)
SERVE_AUTOSCALING_BOUNDS = rule(
    "serve-autoscaling-bounds",
    "A Serve deployment's autoscaling_config keeps min_replicas <= initial_replicas <= max_replicas, max_replicas "
    ">= 1, target_ongoing_requests, metrics_interval_s, look_back_period_s and the smoothing and scaling factors "
    'above 0, the delays at 0 or more, and sets no whole-number num_replicas beside it; numbers may be quoted ("2"), '
    "as pydantic reads them. Serve refuses the config otherwise and the RayService never deploys.",
    "ray python/ray/serve/config.py AutoscalingConfig (field types; replicas_settings_valid) and "
    "python/ray/serve/schema.py DeploymentSchema (validate_num_replicas_and_autoscaling_config), Ray 2.55.0; "
    "pydantic lax mode (https://docs.pydantic.dev/latest/concepts/conversion_table/)",
)
SERVE_REPLICA_FITS = rule(
    "serve-replica-fits-a-node",
    "One Serve replica's ray_actor_options ask for at most the TPU chips of one host of "
    "its slice (1, 2, 4 or 8 chips: what Ray gives one process) or the GPUs of one node of its pool; a larger replica "
    "stays pending forever.",
    "ray python/ray/_private/accelerators/tpu.py TPU_VALID_CHIP_OPTIONS (Ray 2.55.0); Ray schedules an actor on one "
    "node (https://docs.ray.io/en/latest/ray-core/scheduling/resources.html)",
)
SERVE_REPLICA_FITS_POD = rule(
    "serve-replica-fits-a-pod",
    "One Serve replica's ray_actor_options ask for at most the CPUs (num_cpus) and memory (memory, in bytes) of one "
    "worker pod of a group it can run on: KubeRay starts each worker's Ray with --num-cpus and --memory from the "
    "pod's limits, and an actor that asks for more than any node has stays pending forever.",
    "ray-project/kuberay v1.7.0 ray-operator/controllers/ray/common/pod.go generateRayStartCommand (num-cpus, memory "
    "from the container's limits); Ray schedules an actor on one node "
    "(https://docs.ray.io/en/latest/ray-core/scheduling/resources.html)",
)
# Ray holds every resource quantity in units of 1/10,000 (ray._raylet.RESOURCE_UNIT_SCALING).
RAY_RESOURCE_UNIT = 0.0001
SERVE_REPLICA_RESOURCES = rule(
    "serve-replica-resources",
    "A Serve replica's ray_actor_options ask for resources Ray can hold: resources is a mapping of names to numbers "
    "of 0 or more without CPU or GPU (num_cpus and num_gpus say those), and num_cpus, num_gpus, memory and each of "
    "resources, where not 0, is at least 0.0001, Ray's unit of a resource. Ray refuses the replica's actor otherwise, "
    "and the application never deploys.",
    "ray python/ray/_common/ray_option_utils.py _validate_resources and _validate_resource_quantity (Ray 2.60.0: "
    "\"Use the 'num_cpus' and 'num_gpus' keyword instead of 'CPU' and 'GPU'\", \"The precision of the fractional "
    'quantity of resource ... cannot go beyond 0.0001")',
)


def resource_quantity_problem(quantity: float) -> Optional[str]:
    """What Ray refuses in a resource quantity already known to be a number of 0 or more (SERVE_REPLICA_RESOURCES)."""
    if quantity != 0 and quantity < RAY_RESOURCE_UNIT:
        return f"is finer than Ray's unit of a resource; allowed: 0, or {RAY_RESOURCE_UNIT:g} or more"
    return None


SERVE_REPLICAS_FIT_GROUPS = rule(
    "serve-replicas-fit-groups",
    "The replicas Serve may run at max_replicas fit the service's worker groups at their "
    "maxReplicas (replicas per host or node x hosts x maxReplicas); the rest would stay PENDING_ALLOCATION while the "
    "autoscaler asks for nodes the groups cannot add.",
    "KubeRay autoscaler: a worker group never exceeds maxReplicas "
    "(https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html)",
)


def route_prefix_problem(prefix: Any) -> Optional[str]:
    """What validate_route_prefix refuses in a route prefix (SERVE_ROUTE_PREFIX), or None."""
    if prefix is None:
        return None
    if not isinstance(prefix, str):
        return f"is not a string or null ({SERVE_ROUTE_PREFIX.id})"
    if not prefix.startswith("/"):
        return f'does not start with "/" ({SERVE_ROUTE_PREFIX.id})'
    if prefix != "/" and prefix.endswith("/"):
        return f'ends with "/" ({SERVE_ROUTE_PREFIX.id})'
    if "{" in prefix or "}" in prefix:
        return f'holds a wildcard "{{" or "}}" ({SERVE_ROUTE_PREFIX.id})'
    return None


def import_path_problem(path: Any) -> Optional[str]:
    """What ServeApplicationSchema refuses in an import path (SERVE_IMPORT_PATH), or None."""
    if not isinstance(path, str):
        return f"is required: module:attribute or module.attribute ({SERVE_IMPORT_PATH.id})"
    separator = ":" if ":" in path else "."
    if separator == ":" and path.count(":") > 1:
        return f"has more than one colon ({SERVE_IMPORT_PATH.id})"
    if separator == "." and "." not in path:
        return f"names no module: allowed: module:attribute or module.attribute ({SERVE_IMPORT_PATH.id})"
    if path.rfind(separator) in (0, len(path) - 1):  # its last separator first or last, as Ray tests it
        return f'starts or ends with "{separator}" ({SERVE_IMPORT_PATH.id})'
    return None
