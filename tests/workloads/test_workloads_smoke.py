"""The parts of workloads/ that need neither Ray nor JAX: what a slice looks like to Ray, the smoke test's label and
psum verdicts over ray.nodes()-shaped data, its command line and result format, the training job's bucket.

tests/workloads/test_workloads_ray.py runs the same code against a real local Ray cluster;
tests/workloads/test_workloads_images.py checks the images, tests/workloads/test_workloads_train.py the training job's
command line and result.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from helpers import ROOT
from ray_tpu_gke import catalog
from ray_tpu_gke.workload import ray_labels, smoke_args, train_args
from ray_tpu_gke.workload import slice as slices
from ray_tpu_gke.workload.slice import SliceSpec

from workloads import tpu_smoke

SPEC = SliceSpec("v6e", "4x4", hosts=4, chips_per_host=4)


def all_shapes():
    for generation in catalog.GENERATIONS:
        gen = catalog.generation(generation)
        for topology in catalog.topologies(generation)[:12]:
            for machine in catalog.layouts(gen, topology):
                yield catalog.resolve(generation, topology, machine.name)


def test_every_catalogue_generation_has_a_ray_name_and_the_same_cores_per_chip():
    assert set(slices.RAY_VERSIONS) == set(catalog.GENERATIONS)
    for name, generation in catalog.GENERATIONS.items():
        assert slices.CORES_PER_CHIP[name] == generation.tensorcores_per_chip, name


def test_every_catalogue_shape_is_a_valid_slice_spec():
    for shape in all_shapes():
        spec = SliceSpec(shape.generation.name, shape.topology, shape.hosts, shape.chips_per_host)
        assert spec.chips == shape.chips
        assert spec.pod_type == f"{spec.ray_version}-{shape.tensorcores}"


def test_ray_names_of_a_slice():
    assert (SPEC.pod_type, SPEC.accelerator_type, SPEC.head_resource) == ("v6e-16", "TPU-V6E", "TPU-v6e-16-head")
    v5e = SliceSpec("v5e", "2x4", 2, 4)
    assert (v5e.pod_type, v5e.accelerator_type) == ("v5litepod-8", "TPU-V5LITEPOD")
    ironwood = SliceSpec("tpu7x", "4x4x4", 16, 4)
    assert (ironwood.pod_type, ironwood.accelerator_type) == ("v7x-128", "TPU-V7X")
    assert SliceSpec("v4", "2x2x1", 1, 4).pod_type == "v4-8"


@pytest.mark.parametrize("args, problem", [
    (("v6e", "4x4", 2, 4), "2 hosts of 4 chips are not the 16 chips"),
    (("v9", "4x4", 4, 4), "generation 'v9'"),
    (("v6e", "4by4", 4, 4), "topology '4by4'"),
    (("v6e", "4x4", 0, 16), "at least 1"),
])
def test_inconsistent_slices_are_refused(args, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        SliceSpec(*args)


def node(worker_id, slice_name="v6e-16-0", topology="4x4", pod_type="v6e-16", accelerator="TPU-V6E", tpus=4.0,
         alive=True, node_id=None, **extra):
    labels = {ray_labels.SLICE_NAME: slice_name, ray_labels.WORKER_ID: str(worker_id), ray_labels.TOPOLOGY: topology,
              ray_labels.POD_TYPE: pod_type, ray_labels.ACCELERATOR_TYPE: accelerator, **extra}
    labels = {k: v for k, v in labels.items() if v is not None}
    return {"NodeID": node_id or f"{slice_name}{worker_id}".ljust(16, "0"), "NodeManagerAddress": f"10.0.0.{worker_id}",
            "Alive": alive, "Labels": labels, "Resources": {"TPU": tpus, "CPU": 153.0}}


HEAD = {"NodeID": "head0000", "NodeManagerAddress": "10.0.0.100", "Alive": True, "Labels": {},
        "Resources": {"CPU": 0.0}}


def verdict(nodes, group="v6e-16", slices_wanted=1):
    checks, whole = ray_labels.label_checks(ray_labels.observe(nodes, group), SPEC, slices_wanted)
    return {(c.name, c.slice): (c.status, c.detail) for c in checks}, whole


def failed(checks):
    return sorted(name for (name, _), (status, _) in checks.items() if status == "fail")


def test_a_whole_slice_passes_and_other_groups_dead_and_cpu_nodes_are_ignored():
    nodes = [HEAD, *[node(i) for i in range(4)],
             node(0, slice_name="other-0"),  # another worker group's slice
             node(1, alive=False, node_id="dead"),  # a host that left; its replacement is alive
             node(0, slice_name="v6e-16x-0")]  # a group whose name merely starts the same
    checks, whole = verdict(nodes)
    assert failed(checks) == [] and whole == ["v6e-16-0"]
    assert checks[("slices", None)] == ("pass", "1 whole slices of 1 (v6e-16-0); at least 1 expected")


def test_two_slices_of_a_group_are_checked_each():
    nodes = [node(i) for i in range(4)] + [node(i, slice_name="v6e-16-1") for i in range(3)]
    checks, whole = verdict(nodes, slices_wanted=2)
    assert whole == ["v6e-16-0"]
    assert failed(checks) == ["hosts", "slices", "worker-ids"]
    assert checks[("hosts", "v6e-16-1")] == ("fail", "3 hosts, expected 4")
    assert checks[("hosts", "v6e-16-0")][0] == "pass"


@pytest.mark.parametrize("broken, check, detail", [
    (node(3, topology="2x8"), "topology", "has '2x8'"),
    (node(3, pod_type="v6e-8"), "pod-type", "has 'v6e-8'"),
    (node(3, accelerator="TPU-V5LITEPOD"), "accelerator-type", "has 'TPU-V5LITEPOD'"),
    (node(3, accelerator=None), "accelerator-type", "has none"),
    (node(3, tpus=8.0), "chips-per-host", "has 8 TPU"),
    (node(2), "worker-ids", "duplicate ray.io/tpu-worker-id 2; missing ray.io/tpu-worker-id 3"),
    (node(7), "worker-ids", "missing ray.io/tpu-worker-id 3; unexpected ray.io/tpu-worker-id 7 (0..3 allowed)"),
    (node(3, **{ray_labels.WORKER_ID: None}), "worker-ids",
     "missing ray.io/tpu-worker-id 3; without ray.io/tpu-worker-id: "),
])
def test_each_mislabelled_host_fails_its_check_by_name(broken, check, detail):
    checks, whole = verdict([node(0), node(1), node(2), broken])
    assert failed(checks) == sorted(["slices", check])
    status, text = checks[(check, "v6e-16-0")]
    assert status == "fail" and detail in text
    assert whole == []


def test_a_group_host_without_a_slice_name_fails():
    nameless = node(3, slice_name=None, **{ray_labels.NODE_GROUP: "v6e-16"})
    checks, _ = verdict([node(0), node(1), node(2), nameless])
    assert failed(checks) == ["hosts", "slice-names", "slices", "worker-ids"]
    assert "without ray.io/tpu-slice-name" in checks[("slice-names", None)][1]


def test_no_hosts_at_all_fails_the_slice_count():
    checks, whole = verdict([HEAD])
    assert failed(checks) == ["slices"] and whole == []
    assert checks[("slices", None)][1] == "0 whole slices of 0 (none); at least 1 expected"


def result(worker_id, value=40.0, count=4, devices=16, local=4, platform="tpu", index=None):
    index = worker_id if index is None else index
    return {"worker_id": worker_id, "process_index": index, "process_count": count, "device_count": devices,
            "local_device_count": local, "platform": platform, "value": value, "init_s": 1, "compile_s": 2,
            "run_s": 0.1}


def test_psum_verdicts():
    good = [result(i) for i in range(4)]  # (1 + 2 + 3 + 4) * 4 devices = 40
    assert tpu_smoke.psum_check("s", good, SPEC, "tpu").status == "pass"
    wrong = good[:3] + [result(3, value=36.0)]
    assert "worker 3 got 36, expected 40" in tpu_smoke.psum_check("s", wrong, SPEC, "tpu").detail
    cpu = [result(i, platform="cpu") for i in range(4)]
    assert "JAX platform cpu, expected tpu" in tpu_smoke.psum_check("s", cpu, SPEC, "tpu").detail
    alone = [result(i, count=1, devices=4, value=4.0 * (i + 1), index=0) for i in range(4)]
    check = tpu_smoke.psum_check("s", alone, SPEC, "tpu")
    assert check.status == "fail" and "process counts [1]" in check.detail
    odd = [result(i, local=3, devices=12, value=30.0) for i in range(4)]
    assert "not a multiple of 4 chips" in tpu_smoke.psum_check("s", odd, SPEC, "tpu").detail


def test_the_result_line_is_found_among_rays_own_output():
    line = '{"kind": "ray-tpu-gke/tpu-smoke", "ok": true, "checks": []}'
    log = "\n".join(["2026-11-30 INFO job_manager.py -- Runtime env is setting up.", "{not json", line,
                     '{"kind": "something-else"}', "------------------------------------------",
                     "Job 'raysubmit_1' succeeded"])
    assert smoke_args.parse_result(log) == {"kind": "ray-tpu-gke/tpu-smoke", "ok": True, "checks": []}
    assert smoke_args.parse_result("Job 'raysubmit_1' failed\n") is None


def test_the_entrypoint_command_round_trips_through_the_command_line():
    command = smoke_args.command(SPEC, "v6e-16", slices=2, timeout=600)
    assert command == ("python -m workloads.tpu_smoke --generation v6e --topology 4x4 --hosts 4 --chips-per-host 4 "
                       "--slices 2 --timeout 600 --group v6e-16")
    spec, args = smoke_args.parse_args(command.split()[3:], environ={})
    assert spec == SPEC and (args.group, args.slices, args.timeout, args.platform) == ("v6e-16", 2, 600, "tpu")


def test_the_slice_can_come_from_the_environment():
    environ = {"SLICE_GENERATION": "v6e", "SLICE_TOPOLOGY": "4x4", "SLICE_HOSTS": "4", "SLICE_CHIPS_PER_HOST": "4",
               "SMOKE_GROUP": "v6e-16", "SMOKE_SLICES": "2"}
    spec, args = smoke_args.parse_args([], environ=environ)
    assert spec == SPEC and (args.group, args.slices) == ("v6e-16", 2)
    # Without SMOKE_SLICES, the group's own slice count (SLICE_COUNT, on every pod of the group) is the default.
    del environ["SMOKE_SLICES"]
    assert smoke_args.parse_args([], environ={**environ, "SLICE_COUNT": "3"})[1].slices == 3
    assert smoke_args.parse_args([], environ=environ)[1].slices == 1


@pytest.mark.parametrize("argv, message", [
    ([], "missing --generation (or $SLICE_GENERATION), --topology (or $SLICE_TOPOLOGY)"),
    (["--generation", "v6e", "--topology", "4x4", "--hosts", "2", "--chips-per-host", "4"], "2 hosts of 4 chips"),
    (SPEC.to_args() + ["--slices", "0"], "--slices must be at least 1"),
    (SPEC.to_args() + ["--group", "Bad_Group"], "is not a worker group name"),
])
def test_bad_arguments_exit_2_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        smoke_args.parse_args(argv, environ={})
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_training_arguments():
    spec, args = train_args.parse_args(SPEC.to_args() + ["--steps", "10"])
    assert spec == SPEC and args.storage_path == "/gcs/ray-train" and args.name == "tiny-lm"
    with pytest.raises(SystemExit):
        train_args.parse_args(SPEC.to_args() + ["--batch-size", "6"])  # not a multiple of the 16 chips


def test_training_on_one_gpu_node_needs_no_slice():
    spec, args = train_args.parse_args(["--gpus", "8", "--steps", "300"])
    assert spec is None and args.gpus == 8
    with pytest.raises(SystemExit):
        train_args.parse_args(["--gpus", "0"])


def test_training_checkpoints_and_results_go_to_the_bucket_the_stack_mounts():
    """Every Ray container of the dev stack mounts the bucket where workloads.train writes (`--manifests`)."""
    run = subprocess.run([sys.executable, "-m", "plan", "dev", "--manifests"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    ray_objects = [o for o in yaml.safe_load_all(run.stdout) if o and o.get("apiVersion", "").startswith("ray.io/")]
    assert ray_objects
    mounts = {m["mountPath"] for o in ray_objects for m in _ray_container_mounts(o)}
    assert mounts == {train_args.GCS_MOUNT}
    assert train_args.DEFAULT_STORAGE.startswith(train_args.GCS_MOUNT + "/")
    assert train_args.DEFAULT_RESULT_DIR == "/gcs/compare"


def _ray_container_mounts(obj: dict):
    """The volume mounts of every container of a RayCluster's, RayJob's or RayService's pod templates."""
    spec = obj["spec"]
    cluster = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
    templates = [cluster["headGroupSpec"]["template"]] + [g["template"] for g in cluster.get("workerGroupSpecs", [])]
    for template in templates:
        for container in template["spec"]["containers"]:
            yield from container.get("volumeMounts", [])
