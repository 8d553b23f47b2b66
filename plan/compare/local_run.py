"""The local comparison's Ray half: run by the workloads interpreter (Ray 2.60 and JAX, .venv-workloads) as a script,
`python plan/compare/local_run.py SPEC.json OUT.json`; `plan/compare/local.py` writes SPEC and reads OUT.

One local Ray cluster (workloads.local_cluster.LocalCluster: simulated TPU hosts with the environment GKE and the TPU
webhook give a TPU worker pod, simulated GPU nodes with a `GPU` resource), the sides one after the other, each as it
would run on GKE scaled from zero: its nodes are added, its job's driver runs against the cluster, and when the job
reports step K one of its nodes is removed and a replacement added (the lost host, and the one the node pool brings
back), so Ray Train restarts from the checkpoint for real; the nodes go when the job ends. OUT holds, per side, what
this machine saw: when each node was asked for, up and removed, the driver's whole output (event lines and the
result document), its exit status, and when and where the failure was injected.

Run by path, never imported from the `plan` package (whose library needs Pulumi, which this interpreter lacks).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run by path, this folder would come first on sys.path, and its modules (events, report, markdown, ...) would shadow
# any top-level module of the same name that Ray or JAX imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402


def progress(message: str) -> None:
    print(f"compare: {message}", file=sys.stderr, flush=True)


class SideNodes:
    """The simulated nodes of one side, each with the times this machine saw."""

    def __init__(self, cluster, side: dict):
        from ray_tpu_gke.workload.slice import SliceSpec

        self.cluster, self.side, self.spans = cluster, side, []
        if side["kind"] == "tpu":
            self.shape = SliceSpec(side["generation"], side["topology"], side["hosts"], side["unitsPerNode"])

    def add(self, replica: int, worker: int) -> dict:
        side, created = self.side, time.time()
        if side["kind"] == "tpu":  # TPU_NAME = <group>-<replica>, as the TPU webhook names a slice
            node = self.cluster.tpu_host(self.shape, f"{side['group']}-{replica}", worker)
        else:
            node = self.cluster.gpu_node(side["unitsPerNode"])
        span = {
            "name": f"{side['name']}-{side['group']}-{replica}-{worker}-{len(self.spans)}",
            "createdAt": created,
            "readyAt": time.time(),
            "removedAt": None,
            "replica": replica,
            "worker": worker,
            "node": node,
        }
        self.spans.append(span)
        return span

    def remove(self, span: dict) -> None:
        self.cluster.remove(span["node"])
        span["removedAt"] = time.time()

    def seen(self) -> list[dict]:
        return [{k: v for k, v in s.items() if k != "node"} for s in self.spans]


def interpreter_bin(folder: Path) -> Path:
    """A folder whose `python` and `python3` run this interpreter: small scripts that exec it (a symlink would not
    do: a virtualenv's interpreter finds its environment by the path it was started from)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
    return folder


def _step(line: str):
    """The step a line reports, or None: read by `ray_tpu_gke.bench.read`, the parser of every collector."""
    from ray_tpu_gke import bench

    return bench.read([line]).last_step


def run_side(cluster, side: dict, spec: dict) -> dict:
    nodes = SideNodes(cluster, side)
    progress(f"{side['name']}: adding {side['hosts'] * side['replicas']} simulated {side['kind'].upper()} node(s)")
    seen: dict = {"requestedAt": time.time()}
    for replica in range(side["replicas"]):
        for worker in range(side["hosts"]):
            nodes.add(replica, worker)
    seen["nodesReadyAt"] = max(s["readyAt"] for s in nodes.spans)
    env = {
        **os.environ,
        "RAY_ADDRESS": cluster.address,
        "PYTHONPATH": spec["root"],
        "JAX_PLATFORMS": "cpu",
        # The steps are read from the driver's output as it prints them (the failure injection waits on one). Ray's
        # driver prints its workers' lines without a flush (ray/_private/worker.py print_worker_logs), so into a pipe
        # they would arrive a buffer at a time, or at exit, unless Python writes unbuffered.
        "PYTHONUNBUFFERED": "1",
        # A busy machine may start the workers slower than Ray Train's 60 s default (Ray 2.55
        # ray/train/v2/_internal/constants.py DEFAULT_WORKER_GROUP_START_TIMEOUT_S; propagated from the driver to
        # the controller, ENV_VARS_TO_PROPAGATE): wait as long as the plan lets a TPU training head wait.
        "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "900",
    }
    env.update(side.get("env") or {})  # what the comparison tells the job: bench.start() reads it
    # `python` and `python3` in the command line are this interpreter (the workloads one: Ray and JAX), as the
    # image's `python` is on a cluster; the rest of PATH is the caller's.
    env["PATH"] = f"{interpreter_bin(Path(spec['bin']))}{os.pathsep}{env.get('PATH', '')}"
    progress(f"{side['name']}: {side['command']}")
    driver = subprocess.Popen(
        ["bash", "-c", side["command"]],  # a shell command line, as Ray's job supervisor runs an entrypoint
        cwd=spec["cwd"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    seen["driverStartedAt"] = time.time()
    timed_out = threading.Event()

    def stop():  # a hung job must not hang the comparison
        timed_out.set()
        driver.kill()

    timer = threading.Timer(spec["sideTimeout"], stop)
    timer.start()
    lines, inject, last = [], side.get("injectStep"), None
    try:
        for line in driver.stdout:
            lines.append(line)
            step = _step(line)
            last = max(last or 0, step) if step is not None else last
            if inject and "injection" not in seen and last is not None and last >= inject:
                target = nodes.spans[0]  # the first host of the first replica: the one that holds rank 0
                seen["injection"] = {"step": last, "at": time.time(), "target": f"node {target['name']}"}
                progress(f"{side['name']}: step {last} reported: removing {target['name']}, adding a replacement")
                nodes.remove(target)
                nodes.add(target["replica"], target["worker"])
        driver.wait()
    finally:
        timer.cancel()
    seen["endedAt"] = time.time()
    seen["exitCode"] = driver.returncode
    if timed_out.is_set():
        seen["outcome"] = f"timeout: not finished within {spec['sideTimeout']:.0f} s"
    else:
        seen["outcome"] = "SUCCEEDED" if driver.returncode == 0 else f"FAILED (exit {driver.returncode})"
    if inject and "injection" not in seen:
        seen["injectionProblem"] = (
            f"the job ended at step {last} before step {inject} was reported"
            if last is not None
            else "the job ended before any step was reported"
        )
    for span in nodes.spans:
        if span["removedAt"] is None:
            nodes.remove(span)
    seen["nodes"] = nodes.seen()
    seen["log"] = "".join(lines)
    progress(f"{side['name']}: {seen['outcome']} after {seen['endedAt'] - seen['requestedAt']:.1f} s")
    return seen


def main(spec_path: Path, out_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    sys.path.insert(0, spec["root"])
    from workloads.local_cluster import LocalCluster

    started = time.time()
    seen: dict = {"sides": {}}
    with LocalCluster() as cluster:
        seen["clusterStartS"] = time.time() - started
        for side in spec["sides"]:
            seen["sides"][side["name"]] = run_side(cluster, side, spec)
    seen["collectedAt"] = time.time()
    out_path.write_text(json.dumps(seen, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
