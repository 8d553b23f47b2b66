"""The RayJobs that run this repository's training workload or TPU smoke test, checked against the worker group
they run on.

`python -m workloads.train` learns its slice from its pod's environment ($SLICE_*, which every Ray pod of a TPU
group gets: ray_tpu_gke.spec.multislice); arguments it is given that contradict the group (`--hosts 2
--chips-per-host 8 --slices 3` on two 4x4 slices) would fail the job after its slices were paid for. The workloads'
own parsers say what an entrypoint declares (`ray_tpu_gke.workload.train_args.declared`, `smoke_args.parse_args`: the
code the workloads run, without Ray).
"""

from __future__ import annotations

import contextlib
import io
import shlex
from typing import Callable, Optional

from ray_tpu_gke.spec import multislice
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.paths import Paths
from ray_tpu_gke.spec.problems import Problem, show
from ray_tpu_gke.spec.ray_models import RayJobConfig, RayObjectConfig
from ray_tpu_gke.workload import smoke_args, train_args

TRAIN_MODULE = train_args.MODULE
SMOKE_MODULE = smoke_args.MODULE


def _smoke_declared(argv: list[str], environ: Optional[dict] = None) -> dict:
    """What a smoke test's arguments declare, from its own parser, in the environment of the head its driver runs on
    (the $SLICE_* of the cluster's one TPU group, where it has one: what it leaves out, the pod says)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            spec, args = smoke_args.parse_args(argv, environ=environ or {})
    except SystemExit:
        raise ValueError(
            stderr.getvalue().strip().splitlines()[-1] if stderr.getvalue().strip() else "refused"
        ) from None
    return {
        "generation": spec.generation,
        "topology": spec.topology,
        "hosts": spec.hosts,
        "chipsPerHost": spec.chips_per_host,
        "slices": args.slices,
        "group": args.group,
    }


# module -> what its arguments declare
DECLARERS: dict[str, Callable[..., dict]] = {TRAIN_MODULE: train_args.declared, SMOKE_MODULE: _smoke_declared}


def workload_arguments(entrypoint: str, modules=(TRAIN_MODULE, SMOKE_MODULE)) -> Optional[tuple[str, list[str]]]:
    """(module, the arguments after `python -m <module>`) of an entrypoint running one of `modules`, else None."""
    try:
        argv = shlex.split(entrypoint)
    except ValueError:
        return None
    for k in range(len(argv) - 2):
        if argv[k].rsplit("/", 1)[-1].startswith("python") and argv[k + 1] == "-m" and argv[k + 2] in modules:
            return argv[k + 2], argv[k + 3 :]
    return None


def train_arguments(entrypoint: str) -> Optional[list[str]]:
    """The arguments after `python -m workloads.train` in an entrypoint, or None if it runs something else."""
    found = workload_arguments(entrypoint, (TRAIN_MODULE,))
    return None if found is None else found[1]


def _runs_on(job: RayJobConfig, config: StackConfig) -> RayObjectConfig:
    """The Ray object whose workers the job's driver uses: its own cluster, or the RayCluster it selects."""
    if job.cluster is None:
        return job
    return next((c for c in config.ray_clusters if (c.namespace, c.name) == (job.namespace, job.cluster)), job)


def problems(config: StackConfig, paths: Paths = Paths("stack")) -> list[Problem]:
    found = []
    for i, job in enumerate(config.ray_jobs):
        runs = workload_arguments(job.entrypoint)
        if runs is None:
            continue
        module, argv = runs
        path = paths("ray_jobs", i, "entrypoint")
        runs_on = _runs_on(job, config)
        try:
            given = (
                DECLARERS[module](argv, _head_env(runs_on, config))
                if module == SMOKE_MODULE
                else DECLARERS[module](argv)
            )
        except (ValueError, SystemExit) as error:
            found.append(Problem(path, f"{show(job.entrypoint)}: {module} refuses its arguments: {error}"))
            continue
        found += _against_groups(given, job, runs_on, config, path)
    return found


def _head_env(runs_on: RayObjectConfig, config: StackConfig) -> dict:
    """The environment of the head of `runs_on`, where the driver runs (multislice.head_env, as the manifests)."""
    return {e["name"]: e["value"] for e in multislice.head_env(runs_on, config.slices_by_name)}


def _against_groups(
    given: dict, job: RayJobConfig, runs_on: RayObjectConfig, config: StackConfig, path: str
) -> list[Problem]:
    tpu = [g for g in runs_on.worker_groups if g.slice in config.slices_by_name]
    if given.get("group") is not None:  # the smoke test names the group it checks
        named = [g for g in tpu if g.name == given["group"]]
        if not named:
            allowed = ", ".join(g.name for g in tpu) or "none"
            return [
                Problem(
                    path, f"--group {given['group']} is not a TPU worker group of {runs_on.name}; allowed: {allowed}"
                )
            ]
        tpu = named
    if given.get("gpus") is not None:
        if tpu and not any(g.gpu_pool for g in runs_on.worker_groups):
            return [
                Problem(
                    path,
                    f"--gpus {given['gpus']} trains on a GPU node, but {runs_on.name} has only TPU "
                    f"groups ({', '.join(g.name for g in tpu)}); allowed: the TPU arguments, or none",
                )
            ]
        return []
    if len(tpu) != 1:
        return []  # no TPU group, or several: the job's slice is not the platform's to say
    group = tpu[0]
    entry = config.slice(group.slice)
    shape = entry.shape
    have = {
        "generation": entry.generation,
        "topology": shape.topology,
        "hosts": shape.hosts,
        "chipsPerHost": shape.chips_per_host,
    }
    what = (
        f"group {group.name} on {entry.name} ({entry.generation} {shape.topology}: {shape.hosts} host(s) of "
        f"{shape.chips_per_host} chips)"
    )
    found = []
    for key, value in have.items():
        if given.get(key) is not None and str(given[key]) != str(value):
            flag = "--" + "".join("-" + c.lower() if c.isupper() else c for c in key)
            found.append(
                Problem(
                    path,
                    f"{flag} {given[key]} contradicts {what}; allowed: {flag} {value}, or leave it "
                    f"out (the pods' ${multislice.SLICE_ENV[_env_key(key)]} says it)",
                )
            )
    available = group.max if runs_on.autoscaling.enabled else group.replicas
    slices = given.get("slices")
    if slices is not None and slices > available:
        bound = "maxReplicas" if runs_on.autoscaling.enabled else "replicas"
        found.append(
            Problem(
                path,
                f"--slices {slices} asks for more slices than {what} has ({bound} {available}); "
                f"a multislice job reserves all of them before its first step; allowed: --slices "
                f"1 to {available}, or leave it out ($SLICE_COUNT)",
            )
        )
    return found


def _env_key(key: str) -> str:
    return {"chipsPerHost": "chips_per_host"}.get(key, key)
