"""`python -m plan` as a user runs it: output, exit codes, errors without tracebacks."""

import json
import subprocess
import sys

import pytest
import yaml


from helpers import ROOT, minimal_values


def stack_file(tmp_path, values):
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return path


def test_real_subprocess_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "plan", "dev", "--json"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and json.loads(ok.stdout)["stack"] == "dev", ok.stderr
    bad = stack_file(tmp_path, minimal_values(tpuSlices=[{"name": "x", "generation": "v6e", "topology": "3x3"}]))
    invalid = subprocess.run([sys.executable, "-m", "plan", "test", "--config-file", str(bad)], cwd=ROOT,
                             capture_output=True, text=True)
    assert invalid.returncode == 2 and "Traceback" not in invalid.stderr
    assert invalid.stderr.startswith("ray-tpu-gke:tpuSlices[0].topology: \"3x3\" is not a v6e topology")


def test_human_output_has_tree_summary_and_capacity(plan):
    result = plan("staging")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Previewing update (staging)" in out
    assert "+ gcp:container/nodePool:NodePool v6e-16-0 create" in out
    assert "+ kubernetes:ray.io/v1:RayCluster ray-train create" in out
    assert "to create" in out
    assert "TPU capacity" in out and "ct6e-standard-4t" in out and "ray/train:v6e-16" in out


def test_json_output_is_only_json(plan, tmp_path):
    result = plan("dev", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["stack"] == "dev" and document["steps"]


def test_invalid_config_exits_2_with_every_problem_and_no_traceback(plan, tmp_path):
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "4x2", "cnt": 1}])
    values["ray-tpu-gke:cluster"]["mode"] = "serverless"
    result = plan("test", "--config-file", str(stack_file(tmp_path, values)))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert any(line.startswith("ray-tpu-gke:tpuSlices[0].topology: \"4x2\"") for line in lines), lines
    assert any(line.startswith("ray-tpu-gke:tpuSlices[0].cnt: unknown key") for line in lines), lines
    assert any(line.startswith("ray-tpu-gke:cluster.mode: \"serverless\"") for line in lines), lines
    assert "Traceback" not in result.stderr


def test_invalid_yaml_exits_2(plan, tmp_path):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text("config: [unclosed\n")
    result = plan("bad", "--config-file", str(path))
    assert result.returncode == 2 and "not valid YAML" in result.stderr and "Traceback" not in result.stderr


def test_missing_stack_exits_1(plan):
    result = plan("nope")
    assert result.returncode == 1
    assert "no stack config" in result.stderr and "dev" in result.stderr and "Traceback" not in result.stderr


def test_warnings_do_not_block_the_plan(plan, tmp_path):
    values = minimal_values()
    values["gcp:region"] = "europe-west1"
    values["ray-tpu-gke:cluster"]["location"] = "europe-west1-b"
    result = plan("test", "--config-file", str(stack_file(tmp_path, values)))
    assert result.returncode == 0, result.stderr
    assert "not known to offer TPU v6e" in result.stdout


@pytest.mark.parametrize("stack", ["staging", "sandbox"])
def test_manifests_print_every_kubernetes_object_as_a_yaml_stream(plan, stack):
    result = plan(stack, "--manifests")
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    kinds = [o["kind"] for o in objects]
    assert {"Namespace", "ServiceAccount"} <= set(kinds)
    expected = {"staging": {"RayCluster", "RayJob"}, "sandbox": {"RayCluster", "ComputeClass"}}[stack]
    assert expected <= set(kinds)
    plan_json = json.loads(plan(stack, "--json").stdout)
    k8s_steps = [s for s in plan_json["steps"] if s["newState"]["type"].startswith("kubernetes:")
                 and s["newState"]["custom"] and "metadata" in s["newState"]["inputs"]]
    assert len(objects) == len(k8s_steps)
    assert all(list(o)[:3] == ["apiVersion", "kind", "metadata"] for o in objects)
    assert plan(stack, "--manifests").stdout == result.stdout  # deterministic


def test_a_failed_deploy_time_check_is_one_line(plan, tmp_path):
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["minMasterVersion"] = "1.31.2-gke.1115000"  # an exact version GKE no longer offers
    result = plan("test", "--config-file", str(stack_file(tmp_path, values)))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: deploy-time check failed: GKE no longer offers 1.31.2-gke.1115000 in us-east5-b; pin a minor such as "
        "1.31 or leave minMasterVersion unset"]
