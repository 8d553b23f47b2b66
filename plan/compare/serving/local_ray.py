"""The local serving comparison's Ray half, run by the workloads interpreter (Ray 2.55 with Serve) as a script:
`python plan/compare/serving/local_ray.py ROOT`; `plan/compare/serving/local.py` drives it through stdin and stdout,
one JSON object per line.

It starts one local Ray cluster (workloads.local_cluster.LocalCluster, its dashboard on: the Serve REST API
/api/serve/applications/ that KubeRay itself uses to deploy and read a RayService's applications), then follows
Ray's own pending resource demand, as the autoscaler does: when the GCS reports a demand for the active side's
accelerator (`TPU` or `GPU`, Serve replicas waiting for a node) and no node of the side is being added, it adds one of
the side's shape (up to the worker group's maximum); a node of the side that the GCS reports idle for longer than the
side's idle timeout is removed (Ray autoscaler's idleTimeoutSeconds). Each request, addition and removal is written to
stdout with this machine's time. Commands on stdin: `{"cmd": "side", ...}` sets the active side, `{"cmd": "end"}`
removes its remaining nodes, `{"cmd": "stop"}` (or stdin closed) shuts the cluster down.

Run by path, never imported from the `plan` package (whose library needs Pulumi, which this interpreter lacks).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run by path, this folder would come first on sys.path, and its modules would shadow top-level ones Ray imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import json  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

POLL_S = 0.5  # how often the demand and idleness are read (Ray's autoscaler: every 5 s, AUTOSCALER_UPDATE_INTERVAL_S)
_lock = threading.Lock()  # one line at a time on stdout


def say(**event) -> None:
    with _lock:
        print(json.dumps(event, sort_keys=True), flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scaler:
    """Adds and removes the active side's simulated nodes as Ray's pending demand and idleness ask."""

    def __init__(self, cluster, gcs_address: str):
        self.cluster, self.gcs = cluster, gcs_address
        self.side: dict | None = None
        self.nodes: dict[str, dict] = {}  # Ray node id -> {"name", "node", ...}
        self.count = 0

    def _resource(self) -> str:
        return "TPU" if self.side["kind"] == "tpu" else "GPU"

    def _add(self, demand) -> None:
        from workloads.slice import SliceSpec

        side, self.count = self.side, self.count + 1
        name = f"{side['name']}-{side['group']}-{self.count}"
        requested = time.time()
        say(event="node", action="requested", name=name, at=requested, demand=demand)
        try:
            if side["kind"] == "tpu":
                shape = SliceSpec(side["generation"], side["topology"], side["hosts"], side["unitsPerNode"])
                node = self.cluster.tpu_host(shape, f"{side['group']}-{self.count}", 0, cpus=side["cpusPerNode"])
            else:
                node = self.cluster.gpu_node(side["unitsPerNode"], cpus=side["cpusPerNode"])
        except Exception as error:  # a raylet that did not register in time: the next poll asks again
            say(event="node", action="failed", name=name, at=time.time(), why=f"{type(error).__name__}: {error}")
            return
        node_id = node.node_id
        self.nodes[node_id] = {"name": name, "node": node, "side": side["name"]}
        say(event="node", action="ready", name=name, at=time.time(), requestedAt=requested, nodeId=node_id)

    def _remove(self, node_id: str, why: str) -> None:
        entry = self.nodes.pop(node_id)
        self.cluster.remove(entry["node"])
        say(event="node", action="removed", name=entry["name"], at=time.time(), why=why, nodeId=node_id)

    def step(self) -> None:
        from ray.autoscaler.v2.sdk import get_cluster_status

        if self.side is None:
            return
        status = get_cluster_status(self.gcs)
        resource = self._resource()
        wanted = [dict(b.bundle) for d in status.resource_demands.ray_task_actor_demand for b in d.bundles_by_count
                  if b.bundle.get(resource, 0) > 0]
        mine = [n for n in self.nodes.values() if n["side"] == self.side["name"]]
        if wanted and len(mine) < self.side["maxNodes"]:
            self._add(wanted)
            return
        idle_limit_ms = self.side["idleTimeoutS"] * 1000
        for info in status.idle_nodes:
            usage = info.resource_usage
            if info.node_id in self.nodes and usage is not None and usage.idle_time_ms >= idle_limit_ms:
                self._remove(info.node_id, f"idle {usage.idle_time_ms / 1000:.1f} s")

    def end_side(self) -> None:
        for node_id in list(self.nodes):
            self._remove(node_id, "side ended")
        self.side = None


def _commands(into: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        into.put(json.loads(line))
    into.put({"cmd": "stop"})  # stdin closed: the driver is gone


def _start(local_cluster, attempts: int = 3):
    """The cluster, its head given a few tries: Ray waits a fixed 30 s for a raylet to register (ray/_private/node.py
    raylet_start_wait_time_s), which a busy two-core machine can miss."""
    for attempt in range(1, attempts + 1):
        dashboard_port = free_port()
        try:
            return local_cluster(head_args={"include_dashboard": True, "dashboard_host": "127.0.0.1",
                                            "dashboard_port": dashboard_port}), dashboard_port
        except Exception as error:
            say(event="warning", message=f"cluster start {attempt}: {type(error).__name__}: {error}"[:500],
                at=time.time())
            if attempt == attempts:
                raise


def main(root: str) -> int:
    sys.path.insert(0, root)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # every raylet's workers inherit it: JAX on the CPU stand-in
    # Replicas and handles push their ongoing-request counts to Serve's autoscaler every 10 s by default (Ray 2.55
    # python/ray/serve/_private/constants.py RAY_SERVE_{REPLICA,HANDLE}_AUTOSCALING_METRIC_PUSH_INTERVAL_S): locally,
    # where the delays are seconds, every second.
    os.environ.update({"RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
                       "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
                       # The dashboard gives each of its modules 30 s to start (ray/dashboard/consts.py
                       # SUBPROCESS_MODULE_WAIT_READY_TIMEOUT) and Ray waits 60 s for it (ray/_private/ray_constants.py
                       # RAY_DASHBOARD_STARTUP_TIMEOUT_S): too short on a busy two-core machine.
                       "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "300",
                       "RAY_DASHBOARD_STARTUP_TIMEOUT_S": "300"})
    from workloads.local_cluster import LocalCluster

    started = time.time()
    commands: "queue.Queue[dict]" = queue.Queue()
    # Nodes are added on this, the main thread (Ray's node start installs signal handlers); commands arrive on another.
    threading.Thread(target=_commands, args=(commands,), daemon=True).start()
    cluster, dashboard_port = _start(LocalCluster)
    with cluster:
        scaler = Scaler(cluster, cluster.address)
        say(event="cluster", dashboard=f"http://127.0.0.1:{dashboard_port}", startS=time.time() - started,
            at=time.time(), servePort=free_port())
        while True:
            try:
                command = commands.get(timeout=POLL_S)
            except queue.Empty:
                command = None
            if command is None:
                try:
                    scaler.step()
                except Exception as error:  # a failed read or start is retried at the next poll, and said
                    say(event="warning", message=f"{type(error).__name__}: {error}", at=time.time())
            elif command["cmd"] == "side":
                scaler.side = command["side"]
                say(event="side", name=command["side"]["name"], at=time.time())
            elif command["cmd"] == "end":
                scaler.end_side()
                say(event="ended", at=time.time())
            elif command["cmd"] == "stop":
                scaler.end_side()
                break
    say(event="stopped", at=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
