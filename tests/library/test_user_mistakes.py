"""Mistakes a new user made that planned (#29.8): each now ends in one line that names the key and what is meant."""

from __future__ import annotations

import copy

import pytest
from helpers import minimal_values, problems

from plan import yamlfile
from ray_tpu_gke.spec.config import parse_stack_config


def serve_values(tpu: object) -> dict:
    values = minimal_values(tpuSlices=[{"name": "v6e-8", "generation": "v6e", "topology": "2x4", "count": 2}],
                            rayClusters=[])
    values["ray-tpu-gke:rayServices"] = [{
        "name": "llm",
        "serveConfig": {"applications": [{"name": "llm", "import_path": "workloads.serve:app", "deployments": [
            {"name": "JaxModel", "ray_actor_options": {"resources": {"TPU": tpu}}}]}]},
        "workerGroups": [{"name": "v6e-8", "slice": "v6e-8", "replicas": 1}]}]
    return values


def test_a_serve_deployment_asking_for_more_tpu_chips_than_a_host_has_is_refused():
    (problem,) = problems(serve_values(16))
    # Ray gives one process 1, 2, 4 or 8 chips (rule serve-replica-fits-a-node, components/admission/serve.py)
    assert problem == ("ray-tpu-gke:rayServices[0].serveConfig.applications[0].deployments[0]."
                       "ray_actor_options.resources.TPU: 16 is not a number of chips Ray gives one process; allowed: "
                       "one of 1, 2, 4, 8")
    parse_stack_config(serve_values(8), "test")  # one whole v6e 2x4 host


def test_a_serve_deployment_asking_for_gpus_on_tpu_hosts_is_refused():
    values = serve_values(8)
    values["ray-tpu-gke:rayServices"][0]["serveConfig"]["applications"][0]["deployments"][0]["ray_actor_options"] = {
        "num_gpus": 1}
    (problem,) = problems(values)
    assert problem == ("ray-tpu-gke:rayServices[0].serveConfig.applications[0].deployments[0]: asks for 1 GPUs per "
                       "replica, but no worker group of llm runs on a GPU pool")


def test_an_unquoted_version_says_yaml_read_a_number_and_that_it_must_be_quoted():
    values = yamlfile.loads(b"config:\n  ray-tpu-gke:cluster:\n    name: ray-tpu\n    location: us-east5-b\n"
                            b"    minMasterVersion: 1.30\n", "Pulumi.test.yaml")["config"]
    assert values["ray-tpu-gke:cluster"]["minMasterVersion"] == 1.3  # what YAML hands over
    full = minimal_values()
    full["ray-tpu-gke:cluster"] = {**full["ray-tpu-gke:cluster"], **values["ray-tpu-gke:cluster"]}
    (problem,) = problems(full)
    assert problem == ('ray-tpu-gke:cluster.minMasterVersion: YAML read the number 1.3, not text: quote the value as '
                       'you meant it (an unquoted 1.30 is the number 1.3: write "1.30")')


@pytest.mark.parametrize("where, typo, meant", [
    ("ray-tpu-gke:cluster", "locaton", "location"),
    ("ray-tpu-gke:cluster", "minmasterversion", "minMasterVersion"),
    (None, "ray-tpu-gke:tpuSlice", "ray-tpu-gke:tpuSlices"),
])
def test_an_unknown_key_names_the_closest_allowed_one(where, typo, meant):
    values = copy.deepcopy(minimal_values())
    if where is None:
        values[typo] = []
    else:
        values[where][typo] = "x"
    (problem,) = problems(values)
    assert f"unknown key (did you mean {meant}?)" in problem


def test_an_unknown_key_far_from_every_allowed_one_suggests_nothing():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["zzzzzz"] = 1
    (problem,) = problems(values)
    assert "did you mean" not in problem and "unknown key (given 1); allowed: name," in problem


def test_the_rates_date_is_stated_once_and_a_warning_only_comes_past_a_year():
    import datetime

    from helpers import config_of

    from plan import cost
    from ray_tpu_gke.catalog import prices

    config = config_of("dev")
    as_of = cost.estimate(config).estimate.oldest_as_of
    half_a_year = cost.estimate(config, today=as_of + datetime.timedelta(days=200))
    assert not [w for w in half_a_year.warnings if "days old" in w]
    assert "rates as of" in cost.table(half_a_year).title and "a warning past 365" in cost.table(half_a_year).title
    stale = cost.estimate(config, today=as_of + datetime.timedelta(days=prices.STALE_AFTER_DAYS + 1))
    assert [w for w in stale.warnings if f"{prices.STALE_AFTER_DAYS + 1} days old" in w]


def test_training_outside_a_ray_cluster_ends_in_one_line_saying_where_it_runs(tmp_path):
    import subprocess

    from helpers import ROOT, workloads_python

    # Ray's own refusal (Ray 2.55 ray/_private/services.py, no cluster found for address "auto"), raised by ray.init
    # here so that no other Ray instance on this machine is found and joined.
    script = ("import sys, ray\n"
              "def init(*a, **k):\n"
              "    raise ConnectionError('Could not find any running Ray instance. Please specify the one to connect "
              "to by setting `--address` flag or `RAY_ADDRESS` environment variable.')\n"
              "ray.init = init\n"
              "from workloads import train\n"
              "sys.exit(train.main(['--gpus', '1']))\n")
    run = subprocess.run([workloads_python(), "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in __import__("os").environ.items() if k != "RAY_ADDRESS"})
    assert run.returncode == 2, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert lines[0].startswith("workloads.train runs on a Ray cluster: as a RayJob's entrypoint, with RAY_ADDRESS")
    assert "workloads.local_cluster" in lines[0] and "Could not find any running Ray instance" in lines[0]
