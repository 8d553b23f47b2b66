"""`python -m plan` as a user runs it: output, exit codes, errors without tracebacks."""

import json
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("ending, status", [("return 3", 3), ("raise KeyboardInterrupt", 130)])
def test_a_command_exits_with_its_status_its_output_flushed_its_atexit_run_and_its_objects_left_uncollected(
        ending, status):
    # plan.program.run: what a command printed and registered survives skipping the interpreter's last collection.
    script = ("import atexit, gc, sys\n"
              "from plan import program\n"
              "atexit.register(lambda: print('atexit', gc.get_freeze_count() > 0, flush=True))\n"
              f"def main():\n    sys.stdout.write('printed')\n    {ending}\n"
              "program.run(main)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (status, "printedatexit True\n", "")


def test_human_output_has_tree_summary_and_capacity(plan_output):
    result = plan_output("staging")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Previewing update (staging)" in out
    assert "+ gcp:container/nodePool:NodePool v6e-16-0 create" in out
    assert "+ kubernetes:ray.io/v1:RayCluster ray-train create" in out
    assert "to create" in out
    assert "TPU capacity" in out and "ct6e-standard-4t" in out and "ray/train:v6e-16" in out


def test_json_output_is_only_json(plan_output):
    result = plan_output("dev", "--json")
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
def test_manifests_print_every_kubernetes_object_as_a_yaml_stream(plan, plan_output, stack):
    result = plan_output(stack, "--manifests")
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    kinds = [o["kind"] for o in objects]
    assert {"Namespace", "ServiceAccount"} <= set(kinds)
    expected = {"staging": {"RayCluster", "RayJob"}, "sandbox": {"RayCluster", "ComputeClass"}}[stack]
    assert expected <= set(kinds)
    plan_json = json.loads(plan_output(stack, "--json").stdout)
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
    (line,) = result.stderr.strip().splitlines()  # one line, naming what answered offline
    assert line.startswith(
        "error: deploy-time check failed: GKE no longer offers 1.31.2-gke.1115000 in us-east5-b; pin a minor such as "
        "1.31 or leave minMasterVersion unset (GKE versions: offline, from the GKE versions snapshot 2026-09")


# --- the console script's project discovery and help (plan/project.py, plan/cli.py) ---------------------------------

def project_folder(tmp_path, pulumi_yaml: str, program: str = "import pulumi\npulumi.export('ok', 1)\n",
                   where: str = "."):
    (tmp_path / "Pulumi.yaml").write_text(pulumi_yaml)
    folder = tmp_path / where
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__main__.py").write_text(program)
    return tmp_path


def test_project_is_read_as_the_pulumi_cli_reads_it(tmp_path):
    from plan import project

    root = project_folder(tmp_path, "name: team-infra\nruntime: {name: python}\nmain: infra/\n"
                                    "stackConfigDir: envs\n", where="infra")
    (root / "envs").mkdir()
    (root / "envs" / "Pulumi.dev.yaml").write_text("config: {}\n")
    found = project.find(root / "envs")  # from a subfolder, as the Pulumi CLI finds its project
    assert (found.name, found.program, found.stack_file("dev")) == (
        "team-infra", root / "infra" / "__main__.py", root / "envs" / "Pulumi.dev.yaml")
    assert found.stacks() == ["dev"] and not found.reads_stack_files
    assert project.load(project.REPOSITORY).reads_stack_files


@pytest.mark.parametrize("pulumi_yaml, message", [
    ("runtime: python\n", "name: required"),
    ("name: p\nruntime: nodejs\n", "'nodejs' is not python"),
    ("name: p\nruntime: python\nmain: nowhere/\n", "no Python program at"),
])
def test_a_project_file_that_cannot_be_planned_is_named(tmp_path, pulumi_yaml, message):
    from plan import project
    from ray_tpu_gke.spec.problems import ConfigError

    project_folder(tmp_path, pulumi_yaml)
    with pytest.raises(ConfigError) as raised:
        project.load(tmp_path)
    assert message in str(raised.value)


def test_console_script_plans_a_minimal_program_and_its_config(tmp_path, capsys, monkeypatch):
    from plan import cli

    program = ("import pulumi\nconfig = pulumi.Config()\n"
               "pulumi.export('greeting', f\"{pulumi.get_project()}: {config.require('word')} {config.get('x')}\")\n")
    root = project_folder(tmp_path, "name: team\nruntime: python\nconfig:\n  x: {type: string, default: dflt}\n",
                          program)
    (root / "Pulumi.dev.yaml").write_text("config:\n  team:word: hello\n")
    monkeypatch.chdir(root)
    assert cli.main(["plan", "dev", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["project"] == "team" and plan["outputs"] == {"greeting": "team: hello dflt"}
    assert plan["cost"]["items"] == []
    assert cli.main(["plan", "qa"]) == 1
    assert capsys.readouterr().err.strip() == f"error: no stack config {root / 'Pulumi.qa.yaml'}; stacks here: dev"
    # The other commands read what the program registered (nothing here: a cluster it does not create); compare
    # names in one line what a comparison needs that the program lacks.
    assert cli.main(["diagram", "dev"]) == 0
    chart = capsys.readouterr().out
    assert "existing: not created here" in chart and "system pool" not in chart and "worker group" not in chart
    assert cli.main(["compare", "dev", "--local"]) == 2
    refused = capsys.readouterr().err.strip().splitlines()
    assert len(refused) == 1 and refused[0].startswith("error: program team registers no TPU slice (TpuSlicePools")
    assert "no GPU pool (WorkerPool" in refused[0] and "no RayJob on a GPU pool" in refused[0]
    assert cli.main(["nonsense"]) == 2


def test_help_texts_are_whole(capsys):
    from plan import cli

    assert cli.main(["--help"]) == 0
    usage = capsys.readouterr().out
    assert all(f"  {command} " in usage for command in cli.COMMANDS)
    with pytest.raises(SystemExit):
        cli.main(["plan", "--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: ray-tpu-gke plan ")
    assert "What `pulumi up` would create, offline" in text
    assert " ".join(text.split()).endswith("4 a cost increase above --fail-on-cost-increase.")  # wrapped lines
    for option in ("--config-file", "--json", "--manifests", "--diff-against", "--all-stacks", "--format",
                   "--fail-on-risk", "--fail-on-cost-increase", "--policy-pack"):
        assert option in text


def test_path_options_are_the_callers_not_the_programs(tmp_path, monkeypatch):
    from plan import cli

    monkeypatch.chdir(tmp_path)
    assert cli._absolute_paths(["dev", "--config-file", "a.yaml", "--quotas=q.json", "--json"]) == [
        "dev", "--config-file", str(tmp_path / "a.yaml"), f"--quotas={tmp_path / 'q.json'}", "--json"]


# --- a program that configures the library itself: the same toolchain ----------------------------------------------

def _example(tmp_path, name: str, extra: str = "") -> Path:
    import shutil

    folder = tmp_path / name
    shutil.copytree(ROOT / "examples" / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if extra:
        stack = folder / "Pulumi.dev.yaml"
        stack.write_text(stack.read_text() + extra)
    return folder


def test_a_library_program_gets_the_version_set_the_image_warning_and_no_cluster_fee(tmp_path, capsys, monkeypatch):
    from plan import cli

    monkeypatch.chdir(_example(tmp_path, "existing-cluster"))
    assert cli.main(["plan", "dev", "--json"]) == 0
    out, err = capsys.readouterr()
    versions = json.loads(out)["versions"]
    assert versions["rayObjects"]["train"] == {
        "kind": "RayCluster", "namespace": "ray", "rayVersion": "2.60.0", "image": "rayproject/ray:2.60.0-py311",
        "imageRayVersion": "2.60.0", "workloadsImage": False}
    assert versions["gke"]["releaseChannel"] == "the existing cluster's" and versions["gke"]["pin"] is None
    assert "spec.workerGroupSpecs[].numOfHosts" in versions["kuberay"]["fields"]["RayCluster"]
    # The warning a stack file gets for a TPU group on Ray's own image (no JAX), named by the object here.
    assert ("warning: RayCluster ray/train: image: rayproject/ray:2.60.0-py311 has no JAX, which the TPU worker "
            "groups tpu need") in err
    assert cli.main(["plan", "dev"]) == 0
    text = capsys.readouterr().out
    assert "no GKE cluster fee (the program creates no cluster)" in text and "cluster fee ()" not in text
    assert "Version set" in text


def test_a_missing_rate_names_the_rates_file_a_library_program_can_give(tmp_path, capsys, monkeypatch):
    from plan import cli

    monkeypatch.chdir(_example(tmp_path, "own-config"))
    assert cli.main(["plan", "prod", "--json"]) == 0
    out, err = capsys.readouterr()
    (missing,) = json.loads(out)["cost"]["missing"]
    assert missing["problem"].startswith("`rates:` of a rates file given with `--rates FILE`: no rate for tpu v6e "
                                         "reservation in us-east5")
    assert "ray-tpu-gke:pricing.rates" not in err and "--rates FILE" in err
    rates = tmp_path / "rates.yaml"
    rates.write_text("rates:\n  - {kind: tpu, name: v6e, capacity: reservation, region: us-east5, hourly: 1.5}\n"
                     "monthlyBudget: 1000\n")
    assert cli.main(["plan", "prod", "--json", "--rates", str(rates)]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert cost["complete"] is True and cost.get("missing", []) == []
    assert {i["name"]: i["rate"]["hourly"] for i in cost["items"]}["v6e-32"] == 1.5
    rates.write_text("rates:\n  - {kind: tpu, name: v6e, capacity: someday, hourly: 1.5}\n")
    assert cli.main(["plan", "prod", "--rates", str(rates)]) == 2
    assert capsys.readouterr().err.startswith(f"--rates {rates}: rates[0].capacity: Input should be ")


def test_every_component_of_a_library_program_is_checked_in_one_pass(tmp_path, capsys, monkeypatch):
    from plan import cli

    monkeypatch.chdir(_example(tmp_path, "existing-cluster", "  tpu-existing-cluster:topology: 3x3\n"
                                                              "  tpu-existing-cluster:namespace: Bad_NS\n"))
    assert cli.main(["plan", "dev"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no plan
    lines = err.strip().splitlines()
    assert lines[0].startswith('TpuSlicePools(v6e-16).args.slice.topology: "3x3" is not a v6e topology')
    assert lines[1].startswith('RayCluster(train).args.spec.namespace: "Bad_NS" is invalid')
    assert len(lines) == 2 and "Traceback" not in err


def _plain(monkeypatch, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m plan ARGS` in-process with only `env` of COLUMNS and LINES set, its output not a terminal (a
    pipe, as a subprocess's would be); the stack planned once per process (plans.py)."""
    import contextlib
    import io

    from plan import __main__ as plan_cli
    from plans import planned_once

    for name in ("COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), planned_once():
        code = plan_cli.main(list(args))
    assert not out.isatty() and not err.isatty()
    return subprocess.CompletedProcess(["python", "-m", "plan", *args], code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("stack", ["compare"])  # a stack with a warning longer than 90 columns
def test_text_output_follows_columns_and_warnings_wrap_at_words(stack, monkeypatch):
    """Tables fit COLUMNS (their cells wrap), long warnings wrap at words; in JSON mode each stays one line."""
    text = _plain(monkeypatch, stack, COLUMNS="90")
    data = _plain(monkeypatch, stack, "--json")
    assert text.returncode == data.returncode == 0, text.stderr + data.stderr
    lines = text.stdout.splitlines()
    assert max(map(len, lines)) <= 90, max(lines, key=len)
    assert "TPU capacity" in text.stdout and "Cost estimate" in text.stdout
    warnings = [line for line in data.stderr.splitlines() if line.startswith("warning: ")]
    assert any(len(w) > 90 for w in warnings), "a warning longer than the terminal, to wrap"
    flowing = " ".join(text.stdout.split())
    for warning in warnings:
        assert " ".join(warning.split()) in flowing, warning  # every word, in order, wrapped only between words
    off_terminal = _plain(monkeypatch, stack)  # no COLUMNS, not a terminal: 200 columns
    assert max(map(len, off_terminal.stdout.splitlines())) <= 200
