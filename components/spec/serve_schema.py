"""What Ray Serve's own schema refuses in a RayService's serveConfig, each with its key path: the applications list,
their names, route prefixes and import paths, each deployment's name, num_replicas and max_ongoing_requests, and the
string values of every runtime environment's env_vars. Numbers are read as Ray reads them (pydantic's lax mode: a
quoted "2" is 2 where Ray's field is a number). Pure; the rules and their sources are in admission/serve.py and
admission/runtime.py."""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any, Optional

from pydantic import Field, TypeAdapter, ValidationError

from .. import admission
from .problems import Problem, show


@functools.cache
def _adapter(kind: str, bound: float, excluded: bool) -> TypeAdapter:
    limit = Field(gt=bound) if excluded else Field(ge=bound)
    number: Any = Annotated[int, limit] if kind == "int" else Annotated[float, limit]
    return TypeAdapter(number)


def ray_number(value: Any, kind: str, bound: float, excluded: bool) -> Optional[float]:
    """`value` as Ray's pydantic field of this kind and bound reads it (lax mode: quoted numbers too), or None when
    Ray refuses it."""
    try:
        number = _adapter(kind, bound, excluded).validate_python(value)
    except ValidationError:
        return None
    return None if isinstance(number, float) and math.isnan(number) else number


def _allowed(kind: str, bound: float, excluded: bool) -> str:
    if kind == "int":
        return f"a whole number of {bound + 1 if excluded else bound:g} or more"
    return f"a number above {bound:g}" if excluded else f"a number {bound:g} or more"


def autoscaling_numbers(config: dict, path: str) -> tuple[list[Problem], dict[str, float]]:
    """The autoscaling_config's fields as Ray reads them, and a problem for each one Ray refuses
    (admission.SERVE_AUTOSCALING_BOUNDS); fields Ray does not know are left to it."""
    problems, numbers = [], {}
    for key, (kind, bound, excluded, nullable) in admission.AUTOSCALING_FIELDS.items():
        if key not in config or (nullable and config[key] is None):
            continue
        number = ray_number(config[key], kind, bound, excluded)
        if number is None:
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"{show(config[key])} is invalid; allowed: {_allowed(kind, bound, excluded)} (Ray Serve "
                    "AutoscalingConfig)",
                )
            )
        else:
            numbers[key] = number
    return problems, numbers


def _env_vars(runtime_env: Any, path: str) -> list[Problem]:
    if not isinstance(runtime_env, dict):
        return []
    return [
        Problem(f"{path}.env_vars{key}", message)
        for key, message in admission.env_vars_problems(runtime_env.get("env_vars"))
    ]


def _deployment(deployment: Any, path: str) -> list[Problem]:
    if not isinstance(deployment, dict):
        return [Problem(path, f"{show(deployment)} is not a mapping (a Serve deployment's options)")]
    problems = []
    if not isinstance(deployment.get("name"), str):
        problems.append(
            Problem(f"{path}.name", f"is required: the deployment's name ({admission.SERVE_DEPLOYMENT_NUMBERS.id})")
        )
    replicas = deployment.get("num_replicas")
    # DeploymentSchema's before-validator takes an int (a bool is one), "auto" or null; PositiveInt then wants > 0.
    # An int beside an autoscaling_config is refused as such (serve_checks says so).
    with_autoscaling = isinstance(replicas, int) and isinstance(deployment.get("autoscaling_config"), dict)
    if replicas not in (None, "auto") and not (isinstance(replicas, int) and replicas > 0) and not with_autoscaling:
        problems.append(
            Problem(
                f"{path}.num_replicas",
                f'{show(replicas)} is invalid; allowed: a whole number of 1 or more (unquoted), or "auto" '
                f"({admission.SERVE_DEPLOYMENT_NUMBERS.id})",
            )
        )
    if "max_ongoing_requests" in deployment and ray_number(deployment["max_ongoing_requests"], "int", 0, True) is None:
        problems.append(
            Problem(
                f"{path}.max_ongoing_requests",
                f"{show(deployment['max_ongoing_requests'])} is invalid; allowed: a whole number of 1 or more "
                f"({admission.SERVE_DEPLOYMENT_NUMBERS.id})",
            )
        )
    options = deployment.get("ray_actor_options")
    if isinstance(options, dict):
        problems += _env_vars(options.get("runtime_env"), f"{path}.ray_actor_options.runtime_env")
    return problems


def _application(app: Any, path: str) -> list[Problem]:
    if not isinstance(app, dict):
        return [Problem(path, f"{show(app)} is not a mapping (a Serve application)")]
    problems = []
    found = admission.route_prefix_problem(app.get("route_prefix", admission.SERVE_DEFAULT_ROUTE_PREFIX))
    if found:
        problems.append(Problem(f"{path}.route_prefix", f"{show(app.get('route_prefix'))} {found}"))
    found = admission.import_path_problem(app.get("import_path"))
    if found:
        problems.append(Problem(f"{path}.import_path", f"{show(app.get('import_path'))} {found}"))
    problems += _env_vars(app.get("runtime_env"), f"{path}.runtime_env")
    deployments = app.get("deployments", [])
    if not isinstance(deployments, list):
        return problems + [Problem(f"{path}.deployments", f"{show(deployments)} is not a list")]
    for d, deployment in enumerate(deployments):
        problems += _deployment(deployment, f"{path}.deployments[{d}]")
    return problems


def check_schema(config: Any, path: str) -> list[Problem]:
    """What Ray Serve's ServeDeploySchema and the deploy of each application refuse in `config` (a RayService's
    serveConfig), each with its key path under `path`."""
    apps = config.get("applications") if isinstance(config, dict) else None
    if not isinstance(apps, list):
        return [
            Problem(
                f"{path}.applications",
                f"{'is required' if apps is None else show(apps) + ' is not a list'}: the Serve applications, each "
                f"with its import_path ({admission.SERVE_APPLICATIONS.id})",
            )
        ]
    problems: list[Problem] = []
    names: dict[str, int] = {}
    prefixes: dict[str, int] = {}
    for a, app in enumerate(apps):
        apath = f"{path}.applications[{a}]"
        problems += _application(app, apath)
        if not isinstance(app, dict):
            continue
        name = app.get("name", admission.SERVE_DEFAULT_APP_NAME)
        if not isinstance(name, str) or not name:
            problems.append(
                Problem(
                    f"{apath}.name",
                    f"{show(name)} is invalid; allowed: a non-empty name ({admission.SERVE_APPLICATIONS.id})",
                )
            )
        elif name in names:
            problems.append(
                Problem(
                    f"{apath}.name",
                    f"{show(name)} is also applications[{names[name]}]'s name; allowed: a name "
                    f"of its own ({admission.SERVE_APPLICATIONS.id})",
                )
            )
        else:
            names[name] = a
        prefix = app.get("route_prefix", admission.SERVE_DEFAULT_ROUTE_PREFIX)
        if isinstance(prefix, str) and prefix in prefixes:
            problems.append(
                Problem(
                    f"{apath}.route_prefix",
                    f"{show(prefix)}{' (unset)' if 'route_prefix' not in app else ''} is also applications"
                    f"[{prefixes[prefix]}]'s route prefix; allowed: a route prefix of its own, or null "
                    f"({admission.SERVE_APPLICATIONS.id})",
                )
            )
        elif isinstance(prefix, str):
            prefixes[prefix] = a
    return problems
