"""The RayJobs that run this repository's training workload, checked against the worker group they run on.

`python -m workloads.train` learns its slice from its pod's environment ($SLICE_*, which every Ray pod of a TPU
group gets: ray_tpu_gke.spec.multislice); arguments it is given that contradict the group (`--hosts 2
--chips-per-host 8 --slices 3` on two 4x4 slices) would fail the job after its slices were paid for. The library
cannot import workloads/, so the check runs here, where the repository's tooling reads a stack: the workload's own
parser says what an entrypoint declares (`workloads.train.declared`, no Ray import).
"""

from __future__ import annotations

import importlib
import shlex
from typing import Callable, Optional

from ray_tpu_gke.spec import multislice
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.models import RayJobConfig, RayObjectConfig
from ray_tpu_gke.spec.paths import Paths
from ray_tpu_gke.spec.problems import Problem, show

TRAIN_MODULE = "workloads.train"


def _declarer() -> Optional[Callable[[list[str]], dict]]:
    """The workload's `declared(argv)`, or None where this checkout has no workloads (another project's plan)."""
    try:
        return importlib.import_module(TRAIN_MODULE).declared
    except (ImportError, AttributeError):
        return None


def train_arguments(entrypoint: str) -> Optional[list[str]]:
    """The arguments after `python -m workloads.train` in an entrypoint, or None if it runs something else."""
    try:
        argv = shlex.split(entrypoint)
    except ValueError:
        return None
    for k in range(len(argv) - 2):
        if argv[k].rsplit("/", 1)[-1].startswith("python") and argv[k + 1] == "-m" and argv[k + 2] == TRAIN_MODULE:
            return argv[k + 3:]
    return None


def _runs_on(job: RayJobConfig, config: StackConfig) -> RayObjectConfig:
    """The Ray object whose workers the job's driver uses: its own cluster, or the RayCluster it selects."""
    if job.cluster is None:
        return job
    return next((c for c in config.ray_clusters if (c.namespace, c.name) == (job.namespace, job.cluster)), job)


def problems(config: StackConfig, paths: Paths = Paths("stack")) -> list[Problem]:
    declared = _declarer()
    if declared is None:
        return []
    found = []
    for i, job in enumerate(config.ray_jobs):
        argv = train_arguments(job.entrypoint)
        if argv is None:
            continue
        path = paths("ray_jobs", i, "entrypoint")
        try:
            given = declared(argv)
        except (ValueError, SystemExit) as error:
            found.append(Problem(path, f"{show(job.entrypoint)}: {TRAIN_MODULE} refuses its arguments: {error}"))
            continue
        found += _against_groups(given, job, _runs_on(job, config), config, path)
    return found


def _against_groups(given: dict, job: RayJobConfig, runs_on: RayObjectConfig, config: StackConfig,
                    path: str) -> list[Problem]:
    tpu = [g for g in runs_on.worker_groups if g.slice in config.slices_by_name]
    if given.get("gpus") is not None:
        if tpu and not any(g.gpu_pool for g in runs_on.worker_groups):
            return [Problem(path, f"--gpus {given['gpus']} trains on a GPU node, but {runs_on.name} has only TPU "
                                  f"groups ({', '.join(g.name for g in tpu)}); allowed: the TPU arguments, or none")]
        return []
    if len(tpu) != 1:
        return []  # no TPU group, or several: the job's slice is not the platform's to say
    group = tpu[0]
    entry = config.slice(group.slice)
    shape = entry.shape
    have = {"generation": entry.generation, "topology": shape.topology, "hosts": shape.hosts,
            "chipsPerHost": shape.chips_per_host}
    what = f"group {group.name} on {entry.name} ({entry.generation} {shape.topology}: {shape.hosts} host(s) of " \
           f"{shape.chips_per_host} chips)"
    found = []
    for key, value in have.items():
        if given.get(key) is not None and str(given[key]) != str(value):
            flag = "--" + "".join("-" + c.lower() if c.isupper() else c for c in key)
            found.append(Problem(path, f"{flag} {given[key]} contradicts {what}; allowed: {flag} {value}, or leave it "
                                       f"out (the pods' ${multislice.SLICE_ENV[_env_key(key)]} says it)"))
    available = group.max if runs_on.autoscaling.enabled else group.replicas
    slices = given.get("slices")
    if slices is not None and slices > available:
        bound = "maxReplicas" if runs_on.autoscaling.enabled else "replicas"
        found.append(Problem(path, f"--slices {slices} asks for more slices than {what} has ({bound} {available}); "
                                   f"a multislice job reserves all of them before its first step; allowed: --slices "
                                   f"1 to {available}, or leave it out ($SLICE_COUNT)"))
    return found


def _env_key(key: str) -> str:
    return {"chipsPerHost": "chips_per_host"}.get(key, key)
