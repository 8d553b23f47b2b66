"""Configs a service refuses only at deploy or run time, each refused before anything is registered with its
key path and its rule, in a stack file and in the components' own arguments (the library path): a RayJob entrypoint
bash cannot read, runtime-environment variables that are not strings."""

from __future__ import annotations

import pytest
from helpers import minimal_values, problems
from ray_tpu_gke.spec.component_args import validate_ray_args
from ray_tpu_gke.spec.config import parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError
from ray_tpu_gke.spec.ray_models import RayJobConfig

SLICE = {"name": "v6e-4", "generation": "v6e", "topology": "2x2"}


def job_values(**job) -> dict:
    spec = {"name": "job", "entrypoint": "python -m workloads.train", "workerGroups": [{"name": "w", "slice": "v6e-4"}],
            **job}
    return minimal_values(rayClusters=[], rayJobs=[spec])


def job_args_problems(**job) -> list[str]:
    """The RayJob component's validation of its arguments (what `RayJob(name, args)` runs first)."""
    spec = {"name": "job", "entrypoint": "python -m workloads.train",
            "worker_groups": [{"name": "w", "slice": "v6e-4"}], **job}
    args = {"kubernetes_provider": object(), "spec": spec, "tpu_slices": [SLICE]}
    with pytest.raises(ConfigError) as caught:
        validate_ray_args("RayJob", RayJobConfig, args, "job")
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize("entrypoint, quote", [
    ("python -c 'print(1)", "'...'"),
    ('python train.py --name "run 1', '"..."'),
    ("python -c $'print(\\'x\\')", "$'...'"),  # within $'...' a backslash escapes the quote (bash(1) QUOTING)
])
def test_an_entrypoint_with_an_unbalanced_quote_is_refused_as_bash_would(entrypoint, quote):
    # KubeRay v1.7.0 joins `ray job submit ... -- <entrypoint> ;` into one /bin/bash -ce script (common/job.go).
    (found,) = problems(job_values(entrypoint=entrypoint))
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ") and f"opens a {quote} quote it never closes" in found
    assert "(kuberay-entrypoint-shell)" in found
    (found,) = job_args_problems(entrypoint=entrypoint)
    assert found.startswith("RayJob(job).args.spec.entrypoint: ") and "kuberay-entrypoint-shell" in found


def test_an_entrypoint_ending_in_a_backslash_is_refused():
    # KubeRay v1.7.0 common/job.go appends " ;" after the trimmed entrypoint: a final backslash escapes that space
    (found,) = problems(job_values(entrypoint="python -m workloads.train \\"))
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ") and "ends with a backslash" in found
    parse_stack_config(job_values(entrypoint="python -m workloads.train --name a\\\\"), "test")  # an escaped one


@pytest.mark.parametrize("entrypoint, comment", [
    ("python -m workloads.train --name run #1", "#1"),
    ("python train.py;# the last line", "# the last line"),
    ("python train.py # it's a comment: the quote in it opens nothing", "# it's a comment: the quote in it opens nothing"),
])
def test_an_entrypoint_with_a_comment_is_refused(entrypoint, comment):
    # KubeRay v1.7.0 common/job.go: `... -- <entrypoint> ; fi ; ray job logs ...` is one /bin/bash -ce script, and a #
    # that begins a word comments out the rest of its line, `fi` included: bash fails, "unexpected end of file".
    (found,) = problems(job_values(entrypoint=entrypoint))
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ")
    assert "is invalid: has a # that begins a word outside quotes" in found and repr(comment) in found
    assert "(kuberay-entrypoint-shell)" in found and "allowed: the # quoted" in found
    (found,) = job_args_problems(entrypoint=entrypoint)
    assert found.startswith("RayJob(job).args.spec.entrypoint: ") and f"outside quotes ({comment!r})" in found


def test_an_entrypoint_of_two_lines_is_refused():
    # The same script: `ray job submit ... -- <first line>` is the job, and the second line runs in the submitter pod.
    two_lines = "python prepare.py\npython -m workloads.train"
    (found,) = problems(job_values(entrypoint=two_lines))
    assert found.startswith("ray-tpu-gke:rayJobs[0].entrypoint: ")
    assert "has a line break outside quotes after 'python prepare.py'" in found and "(kuberay-entrypoint-shell)" in found
    assert "allowed: one line, with commands joined by && or ;" in found
    (found,) = job_args_problems(entrypoint=two_lines)
    assert found.startswith("RayJob(job).args.spec.entrypoint: ") and "has a line break outside quotes" in found


@pytest.mark.parametrize("entrypoint", [
    "python -c 'print(\"it is\")'", "echo it\\'s", "python -c \"print('x')\"", "python -c $'print(\\'x\\')'",
    # a # inside a word, quoted or escaped is an argument; a line break inside quotes or escaped starts no command
    "python train.py --tag=#1 '#2' \"#3\" \\#4 ${#HOSTNAME} $#", "python -c 'import sys\nprint(sys.argv)'",
    "python train.py \\\n  --steps 10",
])
def test_an_entrypoint_bash_reads_as_one_whole_command_is_admitted(entrypoint):
    parse_stack_config(job_values(entrypoint=entrypoint), "test")


def test_runtime_env_vars_that_are_not_strings_are_refused_each_with_its_key():
    env = {"env_vars": {"STEPS": 100, "DEBUG": True, "NAME": "ok", "EMPTY": None}}
    found = problems(job_values(runtimeEnv=env))
    # Ray 2.55 _private/runtime_env/validation.py parse_and_validate_env_vars: Dict[str, str]
    assert [p.split(":", 2)[1] for p in found] == [f"rayJobs[0].runtimeEnv.env_vars.{k}" for k in
                                                   ("STEPS", "DEBUG", "EMPTY")]
    assert all("is not a string; allowed: a string" in p and "(ray-runtime-env-vars)" in p for p in found)
    found = job_args_problems(runtime_env=env)
    assert [p.split(":")[0] for p in found] == [f"RayJob(job).args.spec.runtime_env.env_vars.{k}" for k in
                                                ("STEPS", "DEBUG", "EMPTY")]


def test_runtime_env_vars_as_strings_or_empty_are_admitted():
    parse_stack_config(job_values(runtimeEnv={"env_vars": {"STEPS": "100", "DEBUG": "true"}}), "test")
    parse_stack_config(job_values(runtimeEnv={"env_vars": {}}), "test")


# --- Serve configs as Ray Serve's schema reads them (Ray 2.55 serve/schema.py, serve/_private/utils.py) --------------

SERVICE = "ray-tpu-gke:rayServices[0].serveConfig"


def service_values(serve_config: dict) -> dict:
    spec = {"name": "svc", "serveConfig": serve_config, "workerGroups": [{"name": "w", "slice": "v6e-4"}]}
    return minimal_values(rayClusters=[], rayServices=[spec], tpuSlices=[{**SLICE, "count": 2}])  # NewCluster: twice


def service_args_problems(serve_config: dict) -> list[str]:
    """The RayService component's validation of its arguments (what `RayService(name, args)` runs first)."""
    from ray_tpu_gke.spec.ray_models import RayServiceConfig

    spec = {"name": "svc", "serve_config": serve_config, "worker_groups": [{"name": "w", "slice": "v6e-4"}]}
    args = {"kubernetes_provider": object(), "spec": spec, "tpu_slices": [{**SLICE, "count": 2}]}
    with pytest.raises(ConfigError) as caught:
        validate_ray_args("RayService", RayServiceConfig, args, "svc")
    return [str(p) for p in caught.value.problems]


def app(**fields) -> dict:
    return {"name": "app", "import_path": "workloads.serve_bench:app", **fields}


@pytest.mark.parametrize("serve_config, key, message", [
    ({"proxy_location": "EveryNode"}, "applications", "is required: the Serve applications"),
    ({"applications": [app(route_prefix="api")]}, "applications[0].route_prefix",
     '"api" does not start with "/" (serve-route-prefix)'),
    ({"applications": [app(route_prefix="/api/")]}, "applications[0].route_prefix", '"/api/" ends with "/"'),
    ({"applications": [app(route_prefix="/{id}")]}, "applications[0].route_prefix", "holds a wildcard"),
    ({"applications": [app(import_path="app")]}, "applications[0].import_path",
     '"app" names no module: allowed: module:attribute or module.attribute (serve-import-path)'),
    ({"applications": [app(import_path="a:b:c")]}, "applications[0].import_path", "has more than one colon"),
    ({"applications": [app(import_path="workloads.")]}, "applications[0].import_path", 'starts or ends with "."'),
    ({"applications": [{"name": "app"}]}, "applications[0].import_path", "is required"),
    ({"applications": [app(route_prefix="/a"), app(route_prefix="/b")]}, "applications[1].name",
     "\"app\" is also applications[0]'s name; allowed: a name of its own (serve-applications)"),
    ({"applications": [app(), app(name="other")]}, "applications[1].route_prefix",
     "\"/\" (unset) is also applications[0]'s route prefix; allowed: a route prefix of its own, or null"),
    ({"applications": [app(name="")]}, "applications[0].name", '"" is invalid; allowed: a non-empty name'),
    ({"applications": [app(deployments=[{"name": "D", "num_replicas": 0}])]},
     "applications[0].deployments[0].num_replicas", "0 is invalid; allowed: a whole number of 1 or more (unquoted)"),
    ({"applications": [app(deployments=[{"name": "D", "num_replicas": "2"}])]},
     "applications[0].deployments[0].num_replicas", '"2" is invalid'),  # Ray: `num_replicas` must be an int or "auto"
    ({"applications": [app(deployments=[{"name": "D", "max_ongoing_requests": 0}])]},
     "applications[0].deployments[0].max_ongoing_requests", "0 is invalid; allowed: a whole number of 1 or more"),
    ({"applications": [app(deployments=[{"num_replicas": 1}])]}, "applications[0].deployments[0].name", "is required"),
    ({"applications": [app(runtime_env={"env_vars": {"WORKERS": 4}})]}, "applications[0].runtime_env.env_vars.WORKERS",
     "4 is not a string"),
    ({"applications": [app(deployments=[{"name": "D", "ray_actor_options": {"runtime_env": {"env_vars": {"X": 1}}}}])]},
     "applications[0].deployments[0].ray_actor_options.runtime_env.env_vars.X", "1 is not a string"),
])
def test_serve_configs_ray_refuses_are_refused_with_their_key_path(serve_config, key, message):
    (found,) = problems(service_values(serve_config))
    assert found.startswith(f"{SERVICE}.{key}: ") and message in found, found
    (found,) = service_args_problems(serve_config)
    assert found.startswith(f"RayService(svc).args.spec.serve_config.{key}: ") and message in found, found


@pytest.mark.parametrize("serve_config", [
    {"applications": [app(route_prefix="/"), app(name="b", route_prefix="/b"), app(name="c", route_prefix=None),
                      app(name="d", route_prefix=None)]},  # null routes serve no HTTP route: never duplicates
    {"applications": [app(import_path="workloads.serve_bench.app")]},
    {"applications": [app(deployments=[{"name": "D", "num_replicas": "auto", "max_ongoing_requests": "8"}])]},
    {"applications": [app(runtime_env={"env_vars": {"WORKERS": "4"}})]},
])
def test_serve_configs_ray_accepts_are_admitted(serve_config):
    parse_stack_config(service_values(serve_config), "test")


# --- Cloud Monitoring's limits on an alert policy (projects.alertPolicies) ------------------------------------------

def test_an_absence_condition_longer_than_23_and_a_half_hours_is_refused():
    from ray_tpu_gke import admission

    absent = {"displayName": "silent", "conditionAbsent": {"filter": "x", "duration": "84660s"}}
    (problem,) = admission.alert_condition_problems(absent)
    assert "longer than 84600 s (23.5 hours) (monitoring-absence-maximum)" in problem
    longest = {**absent, "conditionAbsent": {"filter": "x", "duration": "84600s"}}
    assert admission.alert_condition_problems(longest) == []


@pytest.mark.parametrize("content", ["x" * 8193, "\u00e9" * 5121])  # 8,193 characters; 5,121 characters in 10,242 bytes
def test_documentation_past_the_apis_content_limit_is_refused(content):
    from ray_tpu_gke import admission

    (problem,) = admission.alert_policy_problems({"conditions": [], "documentation": {"content": content}})
    assert problem.endswith("more than 8192 characters or 10240 bytes (monitoring-documentation-size)")
    assert admission.alert_policy_problems({"conditions": [], "documentation": {"content": content[:5120]}}) == []


def test_alert_after_minutes_whose_silence_alert_outlasts_an_absence_condition_is_refused():
    values = minimal_values(monitoring={"sliceHealth": {"alertAfterMinutes": 701}})
    (found,) = problems(values)
    # the */5 check aligns over 10 min: 701 min is 710 in whole windows, and the silence condition waits twice that
    assert found.startswith("ray-tpu-gke:monitoring.sliceHealth: ")
    assert ("makes the alert on a silent slice check wait 1420 minutes, longer than a metric-absence condition may "
            "(1410 minutes, monitoring-absence-maximum); allowed: at most 700 with the schedule '*/5 * * * *'") in found
    parse_stack_config(minimal_values(monitoring={"sliceHealth": {"alertAfterMinutes": 700}}), "test")
    from ray_tpu_gke.spec.config import validate_platform_args

    with pytest.raises(ConfigError) as caught:  # the library path: RayTpuPlatform's own arguments
        validate_platform_args({"project": "acme-ml-test", "region": "us-east5",
                                "cluster": {"name": "ray-tpu", "location": "us-east5-b"},
                                "monitoring": {"slice_health": {"alert_after_minutes": 1440}}})
    assert any(str(p).startswith("RayTpuPlatform(platform).args.monitoring.slice_health: ") and
               "monitoring-absence-maximum" in str(p) for p in caught.value.problems), caught.value.problems


def test_a_runbook_url_that_pushes_an_alerts_documentation_past_the_limit_is_refused_before_anything_registers():
    from helpers import run

    values = minimal_values(monitoring={"runbookBaseUrl": "https://git.example.com/" + "a" * 9000})
    with pytest.raises(ConfigError) as caught:
        run(values)
    (found,) = [str(p) for p in caught.value.problems]
    assert found.startswith("ray-tpu-gke:monitoring.runbookBaseUrl: alert policy ")
    assert found.endswith("(monitoring-documentation-size)")
    run(minimal_values(monitoring={"runbookBaseUrl": "https://git.example.com/acme/ray-tpu-gke/blob/main"}))
