"""The comparison's sides from the compare stack's own plan (plan/compare/sides.py): which RayJobs they are, what they
stand for, their price from the plan's cost, and the entrypoint and RayJob a run gets."""

from __future__ import annotations

import shlex
import shutil

import pytest
import yaml

import kuberay_schema
from compare_runs import RUN, loaded_plan
from helpers import ROOT
from plan import project as projects
from plan.compare import __main__ as compare_cli
from plan.compare import local, sides
from ray_tpu_gke import bench
from workloads import train



def item(plan: dict, name: str) -> dict:
    return next(i for i in plan["cost"]["items"] if i["name"] == name)


def test_the_sides_are_the_rayjobs_on_a_tpu_slice_and_a_gpu_pool():
    plan, values = loaded_plan()
    tpu, a100, h100, gpu = sides.sides(plan, values)
    assert (tpu.name, tpu.kind, tpu.item, tpu.group, tpu.namespace) == ("bench-tpu", "tpu", "v6e-8", "tpu", "compare")
    assert (gpu.name, gpu.kind, gpu.item, gpu.group) == ("bench-l4", "gpu", "l4-8", "gpu")
    assert tpu.accelerator == "v6e 2x4, 8 chips" and (tpu.hosts, tpu.units_per_node) == (1, 8)
    assert gpu.accelerator == "8 x nvidia-l4 on g2-standard-96 (inference-class)"
    # The training-class sides, with the catalogue's machine types for 8 A100 80GB and 8 H100 80GB.
    assert (a100.item, a100.accelerator) == ("a100-8", "8 x nvidia-a100-80gb on a2-ultragpu-8g")
    assert (h100.item, h100.accelerator) == ("h100-8", "8 x nvidia-h100-80gb on a3-highgpu-8g")
    # The price of the side's hardware is the plan's, for its slice or pool and capacity: never a constant here.
    assert tpu.hourly == pytest.approx(item(plan, "v6e-8")["hourly"])
    assert gpu.hourly == pytest.approx(item(plan, "l4-8")["hourly"])
    assert tpu.capacity == item(plan, "v6e-8")["capacity"]
    assert tpu.entrypoint.startswith("python -m workloads.train")


def test_a_plan_without_the_sides_rate_has_no_price_and_says_why():
    plan, values = loaded_plan()
    plan["cost"]["items"] = [i for i in plan["cost"]["items"] if i["name"] != "l4-8"]
    gpu = sides.sides(plan, values)[-1]
    assert gpu.node_hourly is None and gpu.hourly is None
    assert gpu.price_problem == "the plan's cost has no item for l4-8"


def test_a_runs_rayjob_is_fresh_valid_and_released_a_minute_after_the_job():
    plan, values = loaded_plan()
    for side in sides.sides(plan, values):
        job = sides.run_manifest(side, RUN, seed=7)
        for release in kuberay_schema.RELEASES:
            assert kuberay_schema.errors(job, release) == [], release
        assert job["metadata"]["name"] == f"{side.name}-{RUN[-14:]}"
        assert "annotations" not in job["metadata"]  # not a Pulumi-managed object
        assert job["spec"]["shutdownAfterJobFinishes"] is True
        # The stack's template is suspended; the run's copy is not, or it would never start.
        assert side.manifest["spec"]["suspend"] is True and job["spec"]["suspend"] is False
        assert job["spec"]["ttlSecondsAfterFinished"] == sides.TTL_AFTER_FINISHED_S == 60
        # What the run tells the job (its run, side, result folder and seed) is in the RayJob's runtime environment,
        # which Ray gives the entrypoint and every worker; the command line gains only a checkpoint folder of the
        # side's own (the two sides share the run id), a flag of workloads.train itself.
        words = shlex.split(job["spec"]["entrypoint"])
        assert words[:3] == ["python", "-m", "workloads.train"]
        assert not {"--run", "--side", "--result-dir", "--seed"} & set(words)
        told = yaml.safe_load(job["spec"]["runtimeEnvYAML"])["env_vars"]
        assert told == bench.environment(run=RUN, side=side.name, result_dir="/gcs/compare", seed=7)
        _, args = train.parse_args(words[3:], environ=told)
        assert (args.run, args.side, args.result_dir, args.seed) == (RUN, side.name, "/gcs/compare", 7)
        assert args.storage_path == f"/gcs/ray-train/{side.name}" and args.simulate is False
        assert args.steps == train.parse_args(shlex.split(side.entrypoint)[3:], environ={})[1].steps


def test_sides_are_chosen_by_name_and_default_to_the_tpu_and_the_first_gpu():
    plan, values = loaded_plan()
    found = sides.sides(plan, values)
    assert [s.name for s in sides.default_run_sides(found)] == ["bench-tpu", "bench-a100"]
    assert [s.name for s in sides.select(found, "bench-h100,bench-tpu")] == ["bench-h100", "bench-tpu"]
    assert sides.select(found, None) == found
    with pytest.raises(sides.SideError, match="bench-v100 is not a side of the stack; allowed: bench-tpu, bench-a100"):
        sides.select(found, "bench-tpu,bench-v100")
    with pytest.raises(sides.SideError, match="each side once"):
        sides.select(found, "bench-tpu,bench-tpu")


def test_the_local_job_is_simulated_short_and_checkpoints_locally(tmp_path):
    plan, values = loaded_plan()
    tpu, gpu = sides.sides(plan, values)[:2]
    spec = local.side_spec(tpu, RUN, steps=30, report_every=5, inject_step=12, seed=0, result_dir=tmp_path / "r",
                           storage=tmp_path / "c")
    assert (spec["generation"], spec["topology"], spec["hosts"], spec["unitsPerNode"]) == ("v6e", "2x4", 1, 8)
    words = shlex.split(spec["command"])
    assert not {"--run", "--side", "--result-dir", "--seed", "--simulate", "--report-every"} & set(words)
    assert spec["env"] == bench.environment(run=RUN, side="bench-tpu", result_dir=str(tmp_path / "r"), seed=0,
                                            simulated=True, report_every=5)
    _, args = train.parse_args(words[3:], environ=spec["env"])
    assert args.simulate is True and (args.steps, args.report_every) == (30, 5)
    assert args.storage_path == str(tmp_path / "c" / "bench-tpu") and args.result_dir == str(tmp_path / "r")
    assert args.throttle_s == local.THROTTLE_S
    gpu_spec = local.side_spec(gpu, RUN, steps=30, report_every=5, inject_step=12, seed=0, result_dir=tmp_path,
                               storage=tmp_path)
    assert train.parse_args(shlex.split(gpu_spec["command"])[3:], environ={})[1].gpus == 8


@pytest.mark.parametrize("command,flags,expected", [
    ("python -m x --steps 300 --name a", {"--steps": 60}, "python -m x --name a --steps 60"),
    ("python -m x --steps=300", {"--steps": 60}, "python -m x --steps 60"),
    ("python -m x --simulate --steps 3", {"--simulate": True}, "python -m x --steps 3 --simulate"),
    ("python -m x --simulate --steps 3", {"--simulate": None}, "python -m x --steps 3"),
    ("python -m x --note 'two words'", {"--run": "r1"}, "python -m x --note 'two words' --run r1"),
])
def test_set_flags(command, flags, expected):
    assert sides.set_flags(command, flags) == expected


def test_a_stack_without_comparison_jobs_is_refused(capsys, monkeypatch):
    plan, values = loaded_plan()
    plan["steps"] = [s for s in plan["steps"] if s["newState"]["type"] != sides.RAYJOB_TYPE]
    monkeypatch.setattr(compare_cli, "load_plan", lambda stack, config_file=None: (plan, values))
    assert compare_cli.main(["compare", "--local"]) == 2
    assert capsys.readouterr().err == ("error: stack compare has no RayJob whose worker group runs on a TPU slice or a "
                                       "GPU pool: nothing to compare\n")


def test_live_only_options_are_refused_locally_and_the_other_way_round(capsys):
    with pytest.raises(SystemExit) as exit_info:
        compare_cli.parse_args(["compare", "--context", "x", "--steps", "10"])
    assert exit_info.value.code == 2
    assert "--steps and --report-every are for --local" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare_cli.parse_args(["compare"])  # neither --context nor --local


def test_a_program_of_its_own_has_the_same_sides_read_from_what_its_plan_registered(tmp_path, monkeypatch):
    """own-config's bench environment (RayTpuPlatformArgs, no stack file): the sides, their hardware and their price
    come from the RayJobs, pools and cost its plan registered (plan/compare/registered.py)."""
    folder = tmp_path / "own-config"
    shutil.copytree(ROOT / "examples" / "own-config", folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(folder)
    projects.use(projects.load(folder))
    try:
        plan, values = compare_cli.load_plan("bench")
    finally:
        projects.use(None)
    tpu, gpu = sides.sides(plan, values)
    assert (tpu.name, tpu.namespace, tpu.item, tpu.generation, tpu.topology) == (
        "bench-tpu", "compare", "v6e-8", "v6e", "2x4")
    assert (tpu.hosts, tpu.units_per_node, tpu.accelerator) == (1, 8, "v6e 2x4, 8 chips")
    assert (gpu.name, gpu.item, gpu.gpu_accelerator, gpu.units_per_node) == (
        "bench-h100", "h100-8", "nvidia-h100-80gb", 8)
    assert gpu.accelerator == "8 x nvidia-h100-80gb on a3-highgpu-8g"
    # The plan's own cost items: a slice's rate per chip, a GPU pool's per node.
    assert tpu.node_hourly == pytest.approx(8 * item(plan, "v6e-8")["rate"]["hourly"])
    assert gpu.node_hourly == pytest.approx(item(plan, "h100-8")["rate"]["hourly"])
    assert {s.capacity for s in (tpu, gpu)} == {"onDemand"}
    assert sides.runs_train_module(tpu.entrypoint) and "--gpus 8" in gpu.entrypoint
