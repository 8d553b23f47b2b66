"""The Ray programs of workloads/ against a real local Ray 2.60 cluster that looks like a multi-host TPU slice.

Ray and JAX live in their own virtualenv (.venv-workloads, requirements-workloads.txt; `make test` builds it and
sets $WORKLOADS_PYTHON to its interpreter), so this module works in two halves:

- run by that interpreter as a script (`python tests/workloads/test_workloads_ray.py OUT.json`), it starts a Ray cluster with
  workloads.local_cluster (over `ray.cluster_utils.Cluster`): a head and two 4-chip hosts of one v6e 2x4 slice (the
  ct6e-standard-4t layout). Each host's raylet starts with the environment GKE and the TPU webhook give a TPU worker
  pod (TPU_NAME, TPU_WORKER_ID, TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY), so Ray 2.55 derives the node labels and the slice
  head resource itself, as on GKE. JAX runs on CPU with 4 devices per host (XLA_FLAGS), one process per host, joined
  by jax.distributed. It runs the smoke test on the whole slice, then breaks the slice (a busy host, a missing host, a
  duplicate worker id, a wrong topology, a host without a slice name) and runs it again each time, builds the GPU
  form of the JaxTrainer (its training runs are tests/workloads/test_workloads_train.py's), and serves the model
  with Ray Serve; it writes what it saw to OUT.json;
- collected by pytest in the project's virtualenv, the tests below run that script once (about a minute) and assert on
  what it saw. They are skipped, saying so, only when there is no workloads interpreter: neither $WORKLOADS_PYTHON nor
  .venv-workloads/bin/python.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATIONS_PROBED = [("v4", "2x2x4"), ("v5e", "4x4"), ("v5p", "4x4x4"), ("v6e", "2x4"), ("v6e", "16x16"),
                      ("tpu7x", "4x4x8")]

if __name__ != "__main__":  # pytest exists only in the project's virtualenv, not in the workloads one
    import pytest

    pytestmark = pytest.mark.local_ray


# --------------------------------------------------------------------------------------------------------------------
# Script half: runs under the workloads interpreter.
# --------------------------------------------------------------------------------------------------------------------

def _simulate(out: Path) -> None:
    import socket
    import tempfile
    import urllib.error
    import urllib.request

    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # 4 CPU devices per host, as 4 TPU chips
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(ROOT))

    import ray
    from ray._private.accelerators.tpu import infer_tpu_pod_type_from_topology

    from workloads import model, serve as serve_module, tpu_smoke, train
    from workloads.local_cluster import LocalCluster
    from ray_tpu_gke.workload import ray_labels
    from ray_tpu_gke.workload.slice import SliceSpec

    spec = SliceSpec("v6e", "2x4", hosts=2, chips_per_host=4)
    seen: dict = {"timings": {}}
    started = time.monotonic()

    def tpu_host(cluster, worker_id: int, name: str = "tpu-0", topology: str = "2x4", **extra):
        # A raylet with what GKE and the TPU webhook put in a worker pod of a v6e 2x4 slice (workloads.local_cluster).
        return cluster.tpu_host(spec, name, worker_id, topology=topology, **extra)

    def smoke(name: str, **options):
        began = time.monotonic()
        seen[name] = tpu_smoke.smoke(spec, group="tpu", platform=options.pop("platform", "cpu"), poll=0.2, **options)
        seen["timings"][name] = round(time.monotonic() - began, 1)

    cluster = LocalCluster(head_niceness=10)  # the hosts' workers at Ray's default
    try:
        hosts = [tpu_host(cluster, 0), tpu_host(cluster, 1)]
        ray.init(address=cluster.address, log_to_driver=False)

        def niceness_on(resources: dict) -> int:
            return ray.get(ray.remote(num_cpus=0, resources=resources)(lambda: os.nice(0)).remote())

        seen["niceness"] = {"driver": os.nice(0), "head": niceness_on({"node:__internal_head__": 0.01}),
                            "host": niceness_on({"TPU": 1})}
        seen["system_config"] = ray._private.state.state.get_system_config()  # what every node reads from the GCS
        # Imported only now: Ray reads the interval from the environment at import, as each raylet's agent does from
        # the environment the cluster started it with (this process's, set by LocalCluster).
        from ray.dashboard.modules.reporter import reporter_consts

        seen["reporter_interval_ms"] = reporter_consts.REPORTER_UPDATE_INTERVAL_MS
        from ray._private import log_monitor  # likewise, as the head's log monitor reads its threshold

        seen["log_monitor_many_files_threshold"] = log_monitor.RAY_LOG_MONITOR_MANY_FILES_THRESHOLD
        from ray.dashboard.utils import get_address_for_submission_client

        seen["state_api_url"] = get_address_for_submission_client(None)  # as a worker's State API finds it
        seen["timings"]["cluster"] = round(time.monotonic() - started, 1)
        seen["labels"] = sorted((n["Labels"] for n in ray.nodes() if n["Resources"].get("TPU")),
                                key=lambda labels: labels.get(ray_labels.WORKER_ID, ""))
        seen["head_resources"] = sorted(k for n in ray.nodes() for k in n["Resources"] if k.endswith("-head"))
        seen["ray_pod_types"] = {
            f"{generation} {topology}": infer_tpu_pod_type_from_topology(
                topology, f"TPU-{SliceSpec(generation, topology, 1, _chips(topology)).ray_version.upper()}")
            for generation, topology in GENERATIONS_PROBED}

        smoke("whole", timeout=120)
        smoke("platform", timeout=120, platform="tpu")  # CPU devices where TPUs are expected

        # A host whose chips another program holds: the reservation cannot complete.
        holder = ray.remote(num_cpus=0, resources={"TPU": spec.chips_per_host})(_Holder)
        held = holder.options(label_selector={ray_labels.WORKER_ID: "1"}).remote()
        ray.get(held.ready.remote())
        smoke("busy", timeout=5)
        smoke("labels-only", timeout=5, labels_only=True)  # leaves the chips alone: passes all the same
        ray.kill(held)

        # The GPU form of the trainer (stacks/compare): one worker asking Ray for every GPU of its node. Its runs, and
        # the slice's, are tests/workloads/test_workloads_train.py's, through the job's command line.
        gpu = train.make_trainer(None, gpus=8, steps=1, storage_path=tempfile.mkdtemp(prefix="ray-train-"))
        seen["gpu_scaling"] = {"num_workers": gpu.scaling_config.num_workers, "use_gpu": gpu.scaling_config.use_gpu,
                               "resources": gpu.scaling_config.resources_per_worker,
                               "max_failures": gpu.run_config.failure_config.max_failures}

        began = time.monotonic()
        from ray import serve

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        handle = serve.run(serve_module.app, name="jax-model", route_prefix="/")
        rows = [[0.5] * model.FEATURES, [-1.0] * model.FEATURES, [0.0] * model.FEATURES]

        def post(body: bytes):
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=body,
                                             headers={"content-type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())

        seen["serve"] = {"handle": handle.predict.remote(rows).result(timeout_s=60),
                         "http": post(json.dumps({"inputs": rows}).encode()),
                         "bad_shape": post(json.dumps({"inputs": [[1.0, 2.0]]}).encode()),
                         "no_inputs": post(b'{"x": 1}')}
        serve.shutdown()
        seen["timings"]["serve"] = round(time.monotonic() - began, 1)

        # Break the slice, one way at a time.
        cluster.remove(hosts[1])
        smoke("missing", timeout=3)
        duplicate = tpu_host(cluster, 0)
        smoke("duplicate", timeout=3)
        cluster.remove(duplicate)
        wrong = tpu_host(cluster, 1, topology="4x4")
        smoke("topology", timeout=3)
        cluster.remove(wrong)
        tpu_host(cluster, 1, name="", RAY_NODE_TYPE_NAME="tpu")  # no TPU_NAME: KubeRay's group label only
        smoke("unnamed", timeout=3)
    finally:
        ray.shutdown()
        cluster.shutdown()
    seen["timings"]["all"] = round(time.monotonic() - started, 1)
    out.write_text(json.dumps(seen, indent=1, sort_keys=True))


def _chips(topology: str) -> int:
    count = 1
    for dim in topology.split("x"):
        count *= int(dim)
    return count


class _Holder:
    def ready(self) -> bool:
        return True


# --------------------------------------------------------------------------------------------------------------------
# Test half: runs under pytest in the project's virtualenv.
# --------------------------------------------------------------------------------------------------------------------

if __name__ != "__main__":

    SCRIPT_HALF = ("the local Ray cluster run", 1200)  # workloads/conftest.py `seen` runs this file's script half once


def failing(result: dict) -> list[str]:
    return [c["name"] for c in result["checks"] if c["status"] == "fail"]


def check(result: dict, name: str) -> dict:
    return next(c for c in result["checks"] if c["name"] == name)


def test_ray_derives_the_labels_the_smoke_test_expects_from_the_gke_environment(seen):
    from ray_tpu_gke.workload.slice import SliceSpec

    spec = SliceSpec("v6e", "2x4", 2, 4)
    assert [labels["ray.io/tpu-worker-id"] for labels in seen["labels"]] == ["0", "1"]
    for labels in seen["labels"]:
        assert labels["ray.io/tpu-slice-name"] == "tpu-0"
        assert labels["ray.io/tpu-topology"] == spec.topology
        assert labels["ray.io/tpu-pod-type"] == spec.pod_type == "v6e-8"
        assert labels["ray.io/accelerator-type"] == spec.accelerator_type == "TPU-V6E"
    assert seen["head_resources"] == [spec.head_resource]  # worker 0 only


def test_a_local_clusters_workers_run_at_the_niceness_asked_for_the_head_and_ray_s_default_elsewhere(seen):
    """$RAY_worker_niceness is an increment on the raylet's own niceness (LocalCluster), 15 by default (Ray 2.55
    ray_config_def.h worker_niceness): what orders Serve's controller before the replicas in make compare-serve."""
    nice = seen["niceness"]
    assert (nice["head"], nice["host"]) == (min(nice["driver"] + 10, 19), min(nice["driver"] + 15, 19))


def test_a_local_cluster_records_none_of_rays_own_metrics_and_reads_memory_processes_and_log_files_less_often(seen):
    """Nothing on the machine scrapes them (workloads.local_cluster): the head's system config turns them off for
    every node, worker and driver of the cluster (Ray 2.60 ray_config_def.h enable_metrics_collection), and sets the
    interval at which each raylet's memory monitor reads the machine's memory (memory_monitor_refresh_ms); the
    dashboard agents' reports come every minute, as Ray reads $REPORTER_UPDATE_INTERVAL_MS where every raylet starts;
    the log monitor looks for new log files every 0.5 s, as past $RAY_LOG_MONITOR_MANY_FILES_THRESHOLD files."""
    assert seen["system_config"]["enable_metrics_collection"] is False
    assert seen["system_config"]["memory_monitor_refresh_ms"] == 1000
    assert seen["reporter_interval_ms"] == 60000
    assert seen["log_monitor_many_files_threshold"] == 0


def test_a_local_clusters_state_api_is_its_own_not_rays_default_dashboard(seen):
    """With no dashboard, Ray's State API would still go to 127.0.0.1:8265, where another Ray on the machine may
    answer and Ray Train's placement-group cleaner take its run's controller for gone (workloads.local_cluster)."""
    from urllib.parse import urlsplit

    url = urlsplit(seen["state_api_url"])
    assert url.scheme == "http" and url.hostname == "127.0.0.1" and url.port not in (None, 8265), seen["state_api_url"]


def test_pod_types_agree_with_rays_own_inference(seen):
    from ray_tpu_gke.workload.slice import SliceSpec

    for generation, topology in GENERATIONS_PROBED:
        chips = _chips(topology)
        assert SliceSpec(generation, topology, 1, chips).pod_type == seen["ray_pod_types"][f"{generation} {topology}"]


def test_whole_slice_passes_every_check(seen):
    result = seen["whole"]
    assert result["ok"] is True, result["checks"]
    assert {c["status"] for c in result["checks"]} == {"pass"}
    names = [c["name"] for c in result["checks"]]
    assert names == ["slices", "slice-names", "hosts", "worker-ids", "topology", "pod-type", "accelerator-type",
                     "chips-per-host", "reservation", "psum"]
    # 2 hosts x 4 devices; process 0 adds 1 per device, process 1 adds 2.
    assert check(result, "psum")["detail"] == "psum over 2 hosts, 8 devices = 12 on cpu"
    assert set(result["timings"]) >= {"wait_s", "reservation_s", "jax_init_s", "compile_s", "psum_s", "total_s"}
    assert result["timings"]["compile_s"] > 0
    assert result["expected"]["pod_type"] == "v6e-8"
    assert [h["ray.io/tpu-worker-id"] for h in result["slices"]["tpu-0"]] == ["0", "1"]


def test_hosts_computing_on_the_wrong_platform_fail_the_psum(seen):
    result = seen["platform"]
    assert result["ok"] is False
    assert failing(result) == ["psum"]
    assert "JAX platform cpu, expected tpu" in check(result, "psum")["detail"]


def test_a_busy_host_fails_the_reservation(seen):
    result = seen["busy"]
    assert failing(result) == ["reservation"]
    assert "not ready" in check(result, "reservation")["detail"]
    assert check(result, "psum")["status"] == "skip"


def test_labels_only_leaves_busy_chips_alone(seen):
    result = seen["labels-only"]
    assert result["ok"] is True and failing(result) == []
    assert [check(result, n)["detail"] for n in ("reservation", "psum")] == ["not run: --labels-only"] * 2


def test_a_missing_host_fails_and_is_named(seen):
    result = seen["missing"]
    assert result["ok"] is False
    assert failing(result) == ["slices", "hosts", "worker-ids"]
    assert check(result, "hosts")["detail"] == "1 hosts, expected 2"
    assert check(result, "worker-ids")["detail"] == "missing ray.io/tpu-worker-id 1"
    assert [check(result, n)["status"] for n in ("reservation", "psum")] == ["skip", "skip"]


def test_a_duplicate_worker_id_fails(seen):
    result = seen["duplicate"]
    assert failing(result) == ["slices", "worker-ids"]
    assert check(result, "worker-ids")["detail"] == ("duplicate ray.io/tpu-worker-id 0; "
                                                     "missing ray.io/tpu-worker-id 1")


def test_a_wrong_topology_label_fails(seen):
    result = seen["topology"]
    assert failing(result) == ["slices", "topology"]
    assert "has '4x4'" in check(result, "topology")["detail"]


def test_a_host_without_a_slice_name_fails(seen):
    result = seen["unnamed"]
    assert "slice-names" in failing(result)
    assert "without ray.io/tpu-slice-name" in check(result, "slice-names")["detail"]


def test_the_gpu_trainer_asks_for_every_gpu_of_one_node(seen):
    assert seen["gpu_scaling"] == {"num_workers": 1, "use_gpu": True, "resources": {"GPU": 8}, "max_failures": 2}


def test_serve_app_answers_through_a_handle_and_http(seen):
    served = seen["serve"]
    assert len(served["handle"]) == 3
    status, body = served["http"]
    assert status == 200 and len(body["outputs"]) == 3
    assert body["model"]["platform"] == "cpu" and body["model"]["step"] == 0
    assert body["outputs"] == pytest.approx(served["handle"], abs=1e-5)
    assert served["bad_shape"][0] == 400 and "16 numbers" in served["bad_shape"][1]["error"]
    assert served["no_inputs"][0] == 400 and "KeyError" in served["no_inputs"][1]["error"]



if __name__ == "__main__":
    _simulate(Path(sys.argv[1]))
