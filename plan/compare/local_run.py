"""The local comparison's Ray half: run by the workloads interpreter (Ray 2.55 and JAX, .venv-workloads) as a script,
`python plan/compare/local_cluster.py SPEC.json OUT.json`; `plan/compare/local.py` writes SPEC and reads OUT.

One local Ray cluster (`ray.cluster_utils.Cluster`: a head, then each side's simulated nodes), the sides one after the
other, each as it would run on GKE scaled from zero: its nodes are added (a TPU host with the environment GKE and the TPU
webhook give a TPU worker pod, from which Ray derives its TPU resources and labels; a GPU node with a `GPU` resource),
its job's driver runs against the cluster, and when the job reports step K one of its nodes is removed and a
replacement added (the lost host, and the new one the node pool would bring), so Ray Train restarts from the
checkpoint for real. The nodes go when the job ends. JAX runs on this machine's CPU with one device per chip or GPU.
OUT holds, per side, what this machine saw: when each node was asked for, up and removed, the driver's whole output
(event lines and the result document), its exit status, and when and where the failure was injected.

Standard library and Ray only: this file is run by path, never imported from the `plan` package.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

_DECODER = json.JSONDecoder()


def progress(message: str) -> None:
    print(f"compare: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def environment(values: dict):
    """The environment a raylet `add_node` starts inherits (and so every Ray worker on that node)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def node_environment(side: dict, worker: int, replica: int) -> dict:
    # One CPU device per chip or GPU, as the accelerator's devices (XLA's host platform device count).
    env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"--xla_force_host_platform_device_count={side['unitsPerNode']}"}
    if side["kind"] == "tpu":
        # What GKE (TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY) and the TPU webhook (TPU_NAME = <group>-<replica>,
        # TPU_WORKER_ID) put in a TPU worker pod; Ray 2.55 reads them (ray/_private/accelerators/tpu.py).
        env.update({"TPU_ACCELERATOR_TYPE": side["podType"], "TPU_TOPOLOGY": side["topology"],
                    "TPU_WORKER_ID": str(worker), "TPU_NAME": f"{side['group']}-{replica}"})
    return env


def add_node(cluster, side: dict, worker: int, replica: int, spans: list) -> object:
    created = time.time()
    resources = {"TPU": side["unitsPerNode"]} if side["kind"] == "tpu" else {}
    gpus = side["unitsPerNode"] if side["kind"] == "gpu" else 0
    with environment(node_environment(side, worker, replica)):
        node = cluster.add_node(num_cpus=1, num_gpus=gpus, resources=resources)
    cluster.wait_for_nodes()
    spans.append({"name": f"{side['name']}-{side['group']}-{replica}-{worker}-{len(spans)}", "createdAt": created,
                  "readyAt": time.time(), "removedAt": None, "node": node})
    return node


def remove(cluster, span: dict) -> None:
    cluster.remove_node(span["node"])  # graceful: the raylet tells the GCS its node is gone
    span["removedAt"] = time.time()


def _event(line: str):
    start = line.find("{")
    if start < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(line, start)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "event" in value else None


def run_side(cluster, side: dict, spec: dict) -> dict:
    progress(f"{side['name']}: adding {side['hosts'] * side['replicas']} simulated {side['kind'].upper()} node(s)")
    spans: list = []
    seen: dict = {"requestedAt": time.time()}
    for replica in range(side["replicas"]):
        for worker in range(side["hosts"]):
            add_node(cluster, side, worker, replica, spans)
    seen["nodesReadyAt"] = max(s["readyAt"] for s in spans)
    env = {**os.environ, "RAY_ADDRESS": cluster.address, "PYTHONPATH": spec["root"], "JAX_PLATFORMS": "cpu"}
    command = [sys.executable if word == "python" and i == 0 else word for i, word in enumerate(side["command"])]
    progress(f"{side['name']}: {' '.join(side['command'])}")
    driver = subprocess.Popen(command, cwd=spec["root"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, bufsize=1)
    seen["driverStartedAt"] = time.time()
    timed_out = threading.Event()

    def stop():  # a hung job must not hang the comparison
        timed_out.set()
        driver.kill()

    timer = threading.Timer(spec["sideTimeout"], stop)
    timer.start()
    lines, inject = [], side.get("injectStep")
    last_step = None
    try:
        for line in driver.stdout:
            lines.append(line)
            event = _event(line)
            if event and event.get("event") == "step" and isinstance(event.get("step"), int):
                last_step = max(last_step or 0, event["step"])
            if inject and "injection" not in seen and last_step is not None and last_step >= inject:
                target = spans[0]  # the first host of the first replica: the one that holds rank 0
                seen["injection"] = {"step": last_step, "at": time.time(), "target": f"node {target['name']}"}
                progress(f"{side['name']}: step {last_step} reported: removing {target['name']}, adding a replacement")
                remove(cluster, target)
                add_node(cluster, side, 0, 0, spans)
        driver.wait()
    finally:
        timer.cancel()
    seen["endedAt"] = time.time()
    seen["exitCode"] = driver.returncode
    seen["outcome"] = ("SUCCEEDED" if driver.returncode == 0 and not timed_out.is_set() else
                       f"timeout: not finished within {spec['sideTimeout']:.0f} s" if timed_out.is_set() else
                       f"FAILED (exit {driver.returncode})")
    if inject and "injection" not in seen:
        seen["injectionProblem"] = (f"the job ended at step {last_step} before step {inject} was reported"
                                    if last_step is not None else "the job ended before any step was reported")
    for span in spans:
        if span["removedAt"] is None:
            remove(cluster, span)
    seen["nodes"] = [{k: v for k, v in s.items() if k != "node"} for s in spans]
    seen["log"] = "".join(lines)
    progress(f"{side['name']}: {seen['outcome']} in {seen['endedAt'] - seen['requestedAt']:.1f} s")
    return seen


def main(spec_path: Path, out_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    os.environ["PYTHONPATH"] = spec["root"]  # every raylet's workers import workloads
    from ray.cluster_utils import Cluster

    started = time.time()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    seen = {"clusterStartS": time.time() - started, "sides": {}}
    try:
        for side in spec["sides"]:
            seen["sides"][side["name"]] = run_side(cluster, side, spec)
    finally:
        cluster.shutdown()
    seen["collectedAt"] = time.time()
    out_path.write_text(json.dumps(seen, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
