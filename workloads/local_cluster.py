"""A local Ray cluster on this machine that looks, to Ray and to the workloads, like a GKE cluster's TPU slices and GPU
nodes: for the workload tests and the local comparison (`make compare`), CPU standing in for every accelerator.

Each simulated TPU host is a raylet started with the environment GKE and the Ray Operator add-on's TPU webhook give a
TPU worker pod (TPU_ACCELERATOR_TYPE and TPU_TOPOLOGY from GKE; TPU_NAME = <group>-<replica> and TPU_WORKER_ID from
the webhook), and its chips as Ray's `TPU` resource, so Ray 2.55 derives the slice labels and the slice head
resource itself (ray/_private/accelerators/tpu.py, get_current_node_accelerator_labels and
get_current_node_additional_resources), as on GKE. A simulated GPU node is a raylet with a `GPU` resource. JAX
there runs on the CPU: workloads.train needs --simulate to accept that.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Optional

from ray_tpu_gke.workload.slice import SliceSpec

from .ports import free_port

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """This process's environment for the duration: a raylet that add_node starts inherits it."""
    old = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _niceness(increment: Optional[int]) -> dict[str, str]:
    return {} if increment is None else {"RAY_worker_niceness": str(increment)}


class LocalCluster:
    """`ray.cluster_utils.Cluster` with a head (no accelerator) and hosts added by shape. Use as a context manager.

    `head_niceness` and `node_niceness` set how much lower than this process's priority the workers of the head and of
    the added hosts run: Ray adds $RAY_worker_niceness to its raylet's niceness when it starts a worker (checked: a
    raylet at nice 3 with 5 starts workers at 8), 15 by default (ray_config_def.h worker_niceness)."""

    def __init__(
        self,
        head_cpus: int = 1,
        head_args: Optional[dict] = None,
        head_niceness: Optional[int] = None,
        node_niceness: Optional[int] = None,
    ):
        from ray.cluster_utils import Cluster
        from ray.util import get_node_ip_address

        # Every raylet's workers import this repository's workloads, as the image's .pth file makes them do.
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        # And they name this cluster's GCS in $RAY_ADDRESS, the head's included, so its port is chosen first. Without
        # it, Ray's State API in a worker finds its cluster in /tmp/ray/ray_current_cluster, which names the machine's
        # newest cluster (ray/_private/services.py get_ray_address_from_environment): beside another local cluster
        # (two test modules at once), Ray Train's placement-group cleaner read the other one, took its run's
        # controller for dead and removed the run's placement group.
        port = free_port()
        self._outer_address = os.environ.get("RAY_ADDRESS")  # this process's again after shutdown
        os.environ["RAY_ADDRESS"] = f"{get_node_ip_address()}:{port}"
        # No node of this cluster is ever drained (`remove` kills a raylet, as a lost VM), so Ray Train's preemption
        # watcher, an actor per run polling Ray's drain state, has nothing to see here: off, unless set otherwise (Ray
        # 2.60 ray/train/v2/_internal/constants.py RAY_TRAIN_ENABLE_PREEMPTION_WATCHER, read by the run's controller).
        os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
        # Each raylet's dashboard agent reads every worker's CPU and memory (/proc/PID/smaps among them) for the
        # dashboard's node view every 5 s (Ray 2.60 dashboard/modules/reporter/reporter_consts.py
        # REPORTER_UPDATE_INTERVAL_MS). Here nothing reads them but the dashboard, when it runs: every minute, unless
        # set otherwise. With the memory monitor's interval below, an idle cluster spends a fifth less CPU.
        os.environ.setdefault("REPORTER_UPDATE_INTERVAL_MS", "60000")
        # The head's log monitor, which forwards the workers' output to their drivers, looks for new log files (a glob
        # of the session's log folder) after every 0.1 s poll while the folder holds fewer files than
        # RAY_LOG_MONITOR_MANY_FILES_THRESHOLD (1000), and every 0.5 s beyond that (Ray 2.60 ray/_private/
        # log_monitor.py, LOG_NAME_UPDATE_INTERVAL_S). Every 0.5 s here, unless set otherwise: a new worker's first
        # lines reach its driver up to 0.5 s later, none lost, and an idle cluster's log monitor spends half as much.
        os.environ.setdefault("RAY_LOG_MONITOR_MANY_FILES_THRESHOLD", "0")
        self._node_env = _niceness(node_niceness)
        with environment(**_niceness(head_niceness)):
            self._cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": head_cpus,
                    "include_dashboard": False,
                    "gcs_server_port": port,
                    # Ray's State API finds the dashboard at the address the head records in the GCS, Ray's default
                    # 127.0.0.1:8265 even with no dashboard, where another Ray on the machine may answer: Ray Train's
                    # placement-group cleaner, not finding its run's controller there, would remove the run's
                    # placement group (ray/train/v2/_internal/execution/controller/placement_group_cleaner.py). A port
                    # of this cluster's own instead: with no dashboard nothing answers, and the cleaner waits.
                    "dashboard_port": free_port(),
                    # Ray's own metrics off in every process of the cluster: the head's system config, which each
                    # node, worker and driver reads from the GCS (ray/_private/node.py). Nothing on this machine
                    # scrapes them (on GKE the stack's monitoring does), and recording them cost a test module 4 to
                    # 8 % of its CPU time (docs/benchmarks.md, "Test lanes").
                    # Each raylet's memory monitor reads the machine's memory every 250 ms, to stop a worker before
                    # the node runs out (ray_config_def.h memory_monitor_refresh_ms; 0 turns it off). Here every node
                    # is a raylet on one machine, each reading the same memory: once a second keeps the guard.
                    "_system_config": {"enable_metrics_collection": False, "memory_monitor_refresh_ms": 1000},
                    **(head_args or {}),
                },
            )
        if self._cluster.address != os.environ["RAY_ADDRESS"]:
            raise RuntimeError(f"the head's GCS is at {self._cluster.address}, not {os.environ['RAY_ADDRESS']}")
        self.hosts: dict[tuple[str, int], object] = {}

    @property
    def address(self) -> str:
        return self._cluster.address

    def tpu_host(
        self,
        spec: SliceSpec,
        slice_name: str,
        worker_id: int,
        topology: Optional[str] = None,
        wait: bool = True,
        cpus: int = 1,
        **extra: str,
    ):
        env = {
            "TPU_ACCELERATOR_TYPE": spec.pod_type,
            "TPU_TOPOLOGY": topology or spec.topology,
            "TPU_WORKER_ID": str(worker_id),
            **({"TPU_NAME": slice_name} if slice_name else {}),
            **extra,
        }
        with environment(**env, **self._node_env):
            node = self._cluster.add_node(num_cpus=cpus, resources={"TPU": spec.chips_per_host})
        if wait:
            self._cluster.wait_for_nodes()
        self.hosts[(slice_name, worker_id)] = node
        return node

    def tpu_slice(self, spec: SliceSpec, slice_name: str, **extra: str) -> list:
        """Every host of one slice, named as the TPU webhook names the replicas of a worker group."""
        nodes = [self.tpu_host(spec, slice_name, worker_id, wait=False, **extra) for worker_id in range(spec.hosts)]
        self._cluster.wait_for_nodes()
        return nodes

    def gpu_node(self, gpus: int, cpus: int = 1, wait: bool = True):
        with environment(**self._node_env):
            node = self._cluster.add_node(num_cpus=cpus, num_gpus=gpus)
        if wait:
            self._cluster.wait_for_nodes()
        return node

    def wait_for_nodes(self) -> None:
        """Until every raylet added is registered (ray.cluster_utils: TimeoutError after 30 s)."""
        self._cluster.wait_for_nodes()

    def remove(self, node) -> None:
        """The node's raylet and every worker on it killed at once, as when GKE loses the VM."""
        self._cluster.remove_node(node)
        self.hosts = {key: value for key, value in self.hosts.items() if value is not node}

    def shutdown(self) -> None:
        self._cluster.shutdown()
        if self._outer_address is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = self._outer_address

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
