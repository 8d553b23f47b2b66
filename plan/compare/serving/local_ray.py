"""The local serving comparison's Ray half, run by the workloads interpreter (Ray 2.60 with Serve) as a script:
`python plan/compare/serving/local_ray.py ROOT`; `plan/compare/serving/local.py` drives it through stdin and stdout,
one JSON object per line.

It starts one local Ray cluster (workloads.local_cluster.LocalCluster, its dashboard on: the Serve REST API
/api/serve/applications/ that KubeRay itself uses to deploy and read a RayService's applications), then follows
Ray's own pending resource demand, as the autoscaler does: when the GCS reports a demand for an active side's
accelerator (`TPU` or `GPU`, Serve replicas waiting for a node) and that side is below its worker group's maximum,
it adds one worker-group replica of the side's shape (a GPU node, or every host of a TPU slice); a replica whose
nodes the GCS all reports idle for longer than the side's idle timeout is removed (Ray autoscaler's
idleTimeoutSeconds). Sides run at once only when their accelerators differ, so that a
demand names its side, as a pending pod's resource request names its node pool on GKE. Each request, addition and
removal is written to stdout with this machine's time and the side's name. Commands on stdin: `{"cmd": "side",
"side": {...}}` makes a side active, `{"cmd": "end", "name": ...}` removes that side's remaining nodes, `{"cmd":
"stop"}` (or stdin closed) shuts the cluster down.

Run by path, never imported from the `plan` package (whose library needs Pulumi, which this interpreter lacks).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run by path, this folder would come first on sys.path, and its modules would shadow top-level ones Ray imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

# The replicas' workers run this much below the head's (a niceness increment), not at Ray's default 15: still behind
# Serve's controller and proxy (a weight of 335 to 1024 under Linux's scheduler, sched_prio_to_weight), and ahead of
# other Ray programs' default workers on the machine (36 each). At 15, beside a multislice JAX training (four workers
# of many threads each, tests/workloads/test_workloads_multislice.py), a replica of the tiny model answered the steady
# pattern's 2 requests a second in 0.6 to 9.8 s (p50 to p99 of both sides), and Serve scaled up before the burst.
REPLICA_NICENESS = 5
POLL_S = 0.5  # how often the demand and idleness are read (Ray's autoscaler: every 5 s, AUTOSCALER_UPDATE_INTERVAL_S)
_lock = threading.Lock()  # one line at a time on stdout


def say(**event) -> None:
    with _lock:
        print(json.dumps(event, sort_keys=True), flush=True)


class Scaler:
    """Adds and removes the active sides' simulated nodes as Ray's pending demand and idleness ask."""

    def __init__(self, cluster, gcs_address: str):
        self.cluster, self.gcs = cluster, gcs_address
        self.sides: dict[str, dict] = {}  # the accelerator resource ("TPU", "GPU") -> the active side asking for it
        self.nodes: dict[str, dict] = {}  # Ray node id -> {"name", "node", "side"}
        self.count = 0

    @staticmethod
    def resource(side: dict) -> str:
        return "TPU" if side["kind"] == "tpu" else "GPU"

    def activate(self, side: dict) -> None:
        taken = self.sides.get(self.resource(side))
        if taken is not None and taken["name"] != side["name"]:
            raise ValueError(f"side {side['name']}: {taken['name']} already asks for {self.resource(side)}")
        self.sides[self.resource(side)] = side

    def _add(self, asked: list[tuple[dict, list]]) -> None:
        """One worker-group replica for each (side, its demand): a GPU node, or every host of a TPU slice (a slice
        comes whole, as KubeRay creates numOfHosts pods per replica); their raylets started together and then waited
        for, so that one side's node does not wait for another's to register."""
        from ray_tpu_gke.workload.slice import SliceSpec

        planned = []  # (side, the replica's name, host names, when asked)
        for side, demand in asked:
            self.count += 1
            replica, requested = f"{side['group']}-{self.count}", time.time()  # replica: a TPU slice's TPU_NAME
            hosts = side["hosts"] if side["kind"] == "tpu" else 1
            base = f"{side['name']}-{replica}"
            names = [base] if hosts == 1 else [f"{base}-{i}" for i in range(hosts)]
            planned.append((side, replica, names, requested))
            for name in names:
                say(event="node", action="requested", side=side["name"], name=name, at=requested, demand=demand)
        started = []
        try:
            for side, replica, names, _ in planned:
                if side["kind"] == "tpu":
                    shape = SliceSpec(side["generation"], side["topology"], side["hosts"], side["unitsPerNode"])
                    for worker in range(len(names)):
                        started.append(
                            self.cluster.tpu_host(shape, replica, worker, cpus=side["cpusPerNode"], wait=False)
                        )
                else:
                    started.append(self.cluster.gpu_node(side["unitsPerNode"], cpus=side["cpusPerNode"], wait=False))
            self.cluster.wait_for_nodes()
        except Exception as error:  # a raylet that did not register in time: gone, and the next poll asks again
            for node in started:
                with contextlib.suppress(Exception):
                    self.cluster.remove(node)
            for side, _, names, _ in planned:
                for name in names:
                    why = f"{type(error).__name__}: {error}"
                    say(event="node", action="failed", side=side["name"], name=name, at=time.time(), why=why)
            return
        hosts = iter(started)
        for side, replica, names, requested in planned:
            for name in names:
                node = next(hosts)
                self.nodes[node.node_id] = {"name": name, "node": node, "side": side, "replica": replica}
                say(
                    event="node",
                    action="ready",
                    side=side["name"],
                    name=name,
                    at=time.time(),
                    requestedAt=requested,
                    nodeId=node.node_id,
                )

    def _remove(self, node_id: str, why: str) -> None:
        entry = self.nodes.pop(node_id)
        self.cluster.remove(entry["node"])
        say(
            event="node",
            action="removed",
            side=entry["side"]["name"],
            name=entry["name"],
            at=time.time(),
            why=why,
            nodeId=node_id,
        )

    def step(self) -> None:
        from ray.autoscaler.v2.sdk import get_cluster_status

        if not self.sides:
            return
        status = get_cluster_status(self.gcs)
        asked = []
        for resource, side in self.sides.items():
            wanted = [
                dict(b.bundle)
                for d in status.resource_demands.ray_task_actor_demand
                for b in d.bundles_by_count
                if b.bundle.get(resource, 0) > 0
            ]
            mine = [n for n in self.nodes.values() if n["side"]["name"] == side["name"]]
            hosts = side["hosts"] if side["kind"] == "tpu" else 1
            if wanted and len(mine) + hosts <= side["maxNodes"]:
                asked.append((side, wanted))  # one replica per side and poll: the next poll reads the demand left
        if asked:
            self._add(asked)
        idle = {
            info.node_id: info.resource_usage.idle_time_ms / 1000
            for info in status.idle_nodes
            if info.node_id in self.nodes and info.resource_usage is not None
        }
        replicas: dict[str, list[str]] = {}
        for node_id, entry in self.nodes.items():
            replicas.setdefault(entry["replica"], []).append(node_id)
        for node_ids in replicas.values():  # a replica goes when every node of it is idle long enough, as one
            limit = self.nodes[node_ids[0]]["side"]["idleTimeoutS"]
            if all(idle.get(n, -1.0) >= limit for n in node_ids):
                for node_id in node_ids:
                    self._remove(node_id, f"idle {idle[node_id]:.1f} s")

    def end_side(self, name: str | None = None) -> None:
        """Remove the named side's nodes (every side's: None) and make it inactive."""
        for node_id, entry in list(self.nodes.items()):
            if name is None or entry["side"]["name"] == name:
                self._remove(node_id, "side ended")
        self.sides = {r: s for r, s in self.sides.items() if name is not None and s["name"] != name}


def _commands(into: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        into.put(json.loads(line))
    into.put({"cmd": "stop"})  # stdin closed: the driver is gone


def _start(local_cluster, attempts: int = 3):
    """The cluster (`local_cluster`: the workloads.local_cluster module), its head given a few tries: Ray waits a
    fixed 30 s for a raylet to register (ray/_private/node.py raylet_start_wait_time_s), which a busy two-core machine
    can miss.

    The head's workers (Serve's controller and its HTTP proxy) run at this process's priority and the replicas
    REPLICA_NICENESS below it: on GKE the head pod has CPUs of its own, here it shares two cores with every replica,
    and a starved controller or proxy reads a busy replica's ongoing requests late or not at all (a replica scaled to
    zero in a burst)."""
    for attempt in range(1, attempts + 1):
        dashboard_port = local_cluster.free_port()
        try:
            cluster = local_cluster.LocalCluster(
                head_args={
                    "include_dashboard": True,
                    "dashboard_host": "127.0.0.1",
                    "dashboard_port": dashboard_port,
                },
                head_niceness=0,
                node_niceness=REPLICA_NICENESS,
            )
            return cluster, dashboard_port
        except Exception as error:
            say(
                event="warning",
                message=f"cluster start {attempt}: {type(error).__name__}: {error}"[:500],
                at=time.time(),
            )
            if attempt == attempts:
                raise


def main(root: str) -> int:
    sys.path.insert(0, root)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # every raylet's workers inherit it: JAX on the CPU stand-in
    os.environ.update(
        {
            # The dashboard gives each of its modules 30 s to start (ray/dashboard/consts.py
            # SUBPROCESS_MODULE_WAIT_READY_TIMEOUT) and Ray waits 60 s for it (ray/_private/ray_constants.py
            # RAY_DASHBOARD_STARTUP_TIMEOUT_S): too short on a busy two-core machine.
            "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "300",
            "RAY_DASHBOARD_STARTUP_TIMEOUT_S": "300",
        }
    )
    from workloads import local_cluster

    started = time.time()
    commands: "queue.Queue[dict]" = queue.Queue()
    # Nodes are added on this, the main thread (Ray's node start installs signal handlers); commands arrive on another.
    threading.Thread(target=_commands, args=(commands,), daemon=True).start()
    cluster, dashboard_port = _start(local_cluster)
    with cluster:
        scaler = Scaler(cluster, cluster.address)
        say(
            event="cluster",
            dashboard=f"http://127.0.0.1:{dashboard_port}",
            startS=time.time() - started,
            at=time.time(),
            servePort=local_cluster.free_port(),
        )
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
                try:
                    scaler.activate(command["side"])
                except ValueError as error:
                    say(event="refused", name=command["side"]["name"], message=str(error), at=time.time())
                else:
                    say(event="side", name=command["side"]["name"], at=time.time())
            elif command["cmd"] == "end":
                scaler.end_side(command["name"])
                say(event="ended", name=command["name"], at=time.time())
            elif command["cmd"] == "stop":
                scaler.end_side()
                break
    say(event="stopped", at=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
