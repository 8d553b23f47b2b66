"""The Serve config checks agree with Ray itself: each config below is judged by Ray 2.55's own validation in the
workloads interpreter (ServeDeploySchema, AutoscalingConfig, validate_route_prefix and parse_and_validate_env_vars,
what the dashboard and the deploy of each application run) and by components/spec/serve_schema.py and
serve_checks.py; both must refuse it or both accept it."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import ROOT, workloads_python
from ray_tpu_gke.spec import serve_checks, serve_schema


def app(**fields) -> dict:
    return {"name": "a", "import_path": "m:app", **fields}


def deployed(**fields) -> dict:
    return {"applications": [app(deployments=[{"name": "D", **fields}])]}


def scaled(**fields) -> dict:
    return deployed(autoscaling_config=fields)


CONFIGS = [
    {"applications": [app()]},
    {},
    {"applications": "a"},
    {"applications": [app(route_prefix="x")]},
    {"applications": [app(route_prefix="/x/")]},
    {"applications": [app(route_prefix="/")]},
    {"applications": [app(route_prefix="/{x}")]},
    {"applications": [app(route_prefix=None), app(name="b", route_prefix=None)]},
    {"applications": [app(), app(name="b")]},
    {"applications": [app(route_prefix="/a"), app(route_prefix="/b")]},
    {"applications": [app(name="")]},
    {"applications": [{"import_path": "m:app"}]},  # the name defaults to "default"
    {"applications": [app(import_path="app")]},
    {"applications": [app(import_path="a:b:c")]},
    {"applications": [app(import_path=":a")]},
    {"applications": [app(import_path="a:")]},
    {"applications": [app(import_path="a.")]},
    {"applications": [app(import_path=".a")]},
    {"applications": [app(import_path=".a.b")]},  # Ray tests the last dot only
    {"applications": [app(import_path="a.b.c")]},
    {"applications": [{"name": "a"}]},
    deployed(num_replicas=0),
    deployed(num_replicas=1),
    deployed(num_replicas="2"),
    deployed(num_replicas="auto"),
    deployed(num_replicas=1.0),
    deployed(num_replicas=None),
    deployed(max_ongoing_requests=0),
    deployed(max_ongoing_requests="5"),
    deployed(max_ongoing_requests=2.0),
    deployed(max_ongoing_requests=1.5),
    deployed(num_replicas=2, autoscaling_config={"max_replicas": 2}),
    deployed(num_replicas="auto", autoscaling_config={"max_replicas": 2}),
    {"applications": [app(deployments=[{"num_replicas": 1}])]},
    scaled(min_replicas="0", max_replicas="2", target_ongoing_requests="2", upscale_delay_s="5"),
    scaled(max_replicas=0),
    scaled(max_replicas="0"),
    scaled(max_replicas="1.0"),
    scaled(max_replicas=2.5),
    scaled(max_replicas=None),
    scaled(min_replicas=3, max_replicas=2),
    scaled(min_replicas="3", max_replicas="2"),
    scaled(initial_replicas="1", max_replicas=2),
    scaled(initial_replicas=5, max_replicas=2),
    scaled(target_ongoing_requests=0),
    scaled(target_ongoing_requests=None),
    scaled(target_ongoing_requests="1e1"),
    scaled(metrics_interval_s=0),
    scaled(look_back_period_s=0),
    scaled(smoothing_factor="0"),
    scaled(upscaling_factor=0),
    scaled(downscaling_factor=0),
    scaled(upscale_delay_s=-1),
    scaled(downscale_to_zero_delay_s=0),
    scaled(min_replicas=" 1 ", max_replicas=2),
    scaled(min_replicas="0x1"),
    {"applications": [app(runtime_env={"env_vars": {"A": 1}})]},
    {"applications": [app(runtime_env={"env_vars": {"A": "1"}})]},
    {"applications": [app(runtime_env={"env_vars": {}})]},
    deployed(ray_actor_options={"runtime_env": {"env_vars": {"B": True}}}),
    deployed(ray_actor_options={"runtime_env": {"env_vars": {"B": "true"}}}),
]

# Ray's verdict on each config (stdin: the configs as JSON; stdout: one error or null per config).
RAY_VERDICTS = r"""
import json, sys
from ray._private.runtime_env.validation import parse_and_validate_env_vars
from ray.serve.config import AutoscalingConfig
from ray.serve._private.utils import validate_route_prefix
from ray.serve.schema import ServeDeploySchema

def verdict(config):
    try:
        ServeDeploySchema.model_validate(config)
        for app in config["applications"]:
            validate_route_prefix(app.get("route_prefix", "/"))
            envs = [app.get("runtime_env", {})]
            for deployment in app.get("deployments", []):
                if isinstance(deployment.get("autoscaling_config"), dict):
                    AutoscalingConfig.model_validate(deployment["autoscaling_config"])
                envs.append(deployment.get("ray_actor_options", {}).get("runtime_env", {}))
            for env in envs:
                if env.get("env_vars") is not None:
                    parse_and_validate_env_vars(env["env_vars"])
    except Exception as error:
        return f"{type(error).__name__}: {str(error)[:200]}"
    return None

print(json.dumps([verdict(c) for c in json.load(sys.stdin)]))
"""


@pytest.fixture(scope="module")
def ray_verdicts() -> list:
    run = subprocess.run([workloads_python(), "-c", RAY_VERDICTS], input=json.dumps(CONFIGS), capture_output=True,
                         text=True, cwd=ROOT, timeout=300)  # a hang guard: importing Ray takes seconds
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def ours(config: dict) -> list[str]:
    """What the stack's checks refuse in one serveConfig: Serve's schema, and each autoscaling_config's bounds."""
    problems = serve_schema.check_schema(config, "serveConfig")
    for app_config in config.get("applications", []) if isinstance(config.get("applications"), list) else []:
        for deployment in app_config.get("deployments", []):
            scaling = deployment.get("autoscaling_config")
            if isinstance(scaling, dict):
                problems += serve_checks._autoscaling(scaling, "autoscaling_config")[0]
                if isinstance(deployment.get("num_replicas"), int):
                    problems.append(deployment["num_replicas"])  # refused beside an autoscaling_config
    return [str(p) for p in problems]


def test_each_serve_config_is_refused_exactly_where_ray_refuses_it(ray_verdicts):
    assert len(ray_verdicts) == len(CONFIGS)
    disagree = [(config, ray, ours(config)) for config, ray in zip(CONFIGS, ray_verdicts)
                if (ray is None) != (not ours(config))]
    assert not disagree, "\n".join(f"{c}: Ray {r!r}, ours {o!r}" for c, r, o in disagree)
    assert sum(v is None for v in ray_verdicts) >= 15 and sum(v is not None for v in ray_verdicts) >= 30
