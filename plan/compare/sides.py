"""The comparison's sides, read from a stack's offline plan: every RayJob whose worker group runs on a TPU slice or a
GPU pool, what it stands for, what one of its nodes costs an hour, and the fresh RayJob a run creates from it.

Pure: the plan JSON (`python -m plan STACK --json`: `steps` and `cost`) and the stack's config values (the stack file's
`ray-tpu-gke:rayJobs`, `tpuSlices`, `gpuPools`, as `plan.stackfile.load` returns them) in, plain data out.
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from ray_tpu_gke import bench, catalog
from ray_tpu_gke.catalog.resource_types import RAY_KIND_PREFIX
from ray_tpu_gke.render import manifests

from ..steps import states_of_type

RAYJOB_TYPE = RAY_KIND_PREFIX + "RayJob"  # KubeRay RayJobs in the plan's steps (catalog/resource_types.py)
PROJECT = "ray-tpu-gke"
# KubeRay ray-operator/controllers/ray/utils/constant.go MaxRayJobNameLength (53 - 6): the submitter Job and the
# RayCluster derive their names from the RayJob's.
MAX_RAYJOB_NAME = 47
# Kubernetes label values: at most 63 characters, alphanumerics and -_. inside (Kubernetes "Labels and Selectors").
MAX_LABEL_VALUE = 63
RUN_LABEL = "ray-tpu-gke/compare-run"
SIDE_LABEL = "ray-tpu-gke/compare-side"
# What a comparison job leaves behind once it ends: KubeRay deletes the RayCluster (and so releases the TPU host and the
# GPU node) this many seconds after the job finishes (RayJob spec.ttlSecondsAfterFinished with
# shutdownAfterJobFinishes; KubeRay ray-operator/apis/ray/v1/rayjob_types.go).
TTL_AFTER_FINISHED_S = 60
DEFAULT_RESULT_DIR = "/gcs/compare"  # workloads.train --result-dir default: the stack's bucket, GCS FUSE at /gcs
TRAIN_MODULE = "workloads.train"
TRAIN_STORAGE = "/gcs/ray-train"  # workloads.train DEFAULT_STORAGE: checkpoints in the stack's bucket


@dataclass(frozen=True)
class SidePlan:
    """One side of the comparison as the plan has it."""

    name: str  # the RayJob's name in the stack (bench-tpu); the side's name in the report
    namespace: str
    kind: str  # "tpu" or "gpu": what the side stands for
    group: str  # the worker group's name (tpu, gpu)
    item: str  # the tpuSlices or gpuPools entry it runs on (v6e-8, a100-8)
    accelerator: str  # "v6e 2x4, 8 chips", "8 x nvidia-l4 on g2-standard-96"
    hosts: int  # nodes per replica: numOfHosts
    replicas: int  # slices (TPU) or nodes (GPU) the job uses
    units_per_node: int  # google.com/tpu or nvidia.com/gpu per node (the worker container's limit)
    entrypoint: str
    manifest: dict  # the RayJob's inputs in the plan: apiVersion, kind, metadata, spec
    capacity: Optional[str] = None  # onDemand, spot, ... from the cost item
    node_hourly: Optional[float] = None  # USD per node-hour from the plan's cost; None: the plan has no rate
    price_problem: Optional[str] = None  # why there is no node_hourly
    rate: dict = field(default_factory=dict)  # the cost item's rate (kind, name, hourly, capacity, region)
    topology: Optional[str] = None  # TPU: the slice's topology
    generation: Optional[str] = None  # TPU: the slice's generation
    gpu_accelerator: Optional[str] = None  # GPU: the pool's accelerator (nvidia-a100-80gb)

    @property
    def nodes(self) -> int:
        return self.hosts * self.replicas

    @property
    def devices(self) -> int:
        """TPU chips or GPUs the side's job holds: the worker container's limit on each of its nodes."""
        return self.units_per_node * self.nodes

    @property
    def hourly(self) -> Optional[float]:
        """What the side's hardware costs an hour while the job holds it: one node's rate x its nodes."""
        return None if self.node_hourly is None else self.node_hourly * self.nodes

    @property
    def images(self) -> list[str]:
        cluster = self.manifest["spec"].get("rayClusterSpec") or {}
        pods = [cluster.get("headGroupSpec", {})] + list(cluster.get("workerGroupSpecs", []))
        return sorted(
            {
                c.get("image", "")
                for p in pods
                for c in p.get("template", {}).get("spec", {}).get("containers", [])
                if c.get("image")
            }
        )


class SideError(ValueError):
    pass


def _worker_container(group: dict) -> tuple[Optional[str], Optional[dict]]:
    """The kind of accelerator a worker group asks for (by its container's limits) and that container."""
    for container in group.get("template", {}).get("spec", {}).get("containers", []):
        limits = (container.get("resources") or {}).get("limits") or {}
        if catalog.TPU_RESOURCE in limits:
            return "tpu", container
        if catalog.GPU_RESOURCE in limits:
            return "gpu", container
    return None, None


def _config_list(values: dict, key: str) -> list[dict]:
    found = values.get(f"{PROJECT}:{key}") or []
    return found if isinstance(found, list) else []


def _by_name(entries: list[dict], name: Optional[str]) -> dict:
    return next((e for e in entries if isinstance(e, dict) and e.get("name") == name), {})


def _cost_item(plan: dict, kind: str, name: str) -> Optional[dict]:
    wanted = "tpuSlice" if kind == "tpu" else "gpuPool"  # plan cost items: kind and name as in the config (CONTRACTS 5)
    items = (plan.get("cost") or {}).get("items") or []
    return next((i for i in items if i.get("kind") == wanted and i.get("name") == name), None)


def sides(plan: dict, values: dict) -> list[SidePlan]:
    """The plan's RayJobs with a worker group on a TPU slice or a GPU pool, TPU sides first, in plan order."""
    jobs = _config_list(values, "rayJobs")
    found = []
    for state in states_of_type(plan, RAYJOB_TYPE):
        manifest = state["inputs"]
        name, namespace = manifest["metadata"]["name"], manifest["metadata"].get("namespace", "default")
        configured = _by_name(jobs, name)
        for group in (manifest["spec"].get("rayClusterSpec") or {}).get("workerGroupSpecs", []):
            kind, container = _worker_container(group)
            if kind is None:
                continue
            entry = _by_name(configured.get("workerGroups") or [], group["groupName"])
            item = entry.get("slice") if kind == "tpu" else entry.get("gpuPool")
            if not item:
                raise SideError(
                    f"RayJob {namespace}/{name} group {group['groupName']}: the stack names no "
                    f"{'slice' if kind == 'tpu' else 'gpuPool'} for it"
                )
            resource = catalog.TPU_RESOURCE if kind == "tpu" else catalog.GPU_RESOURCE
            units = int(container["resources"]["limits"][resource])
            found.append(_side(plan, values, manifest, name, namespace, kind, group, item, units))
            break  # one side per RayJob: its first accelerator group
    return sorted(found, key=lambda s: s.kind != "tpu")


def default_run_sides(found: list[SidePlan]) -> list[SidePlan]:
    """The sides a run takes without `--sides`: every TPU side and the stack's first GPU side (in the compare stack,
    bench-tpu and bench-a100), so a default run pays for two machines, not every pool the stack offers."""
    gpus = [s for s in found if s.kind == "gpu"]
    return [s for s in found if s.kind == "tpu"] + gpus[:1]


def select(found: list[SidePlan], names: Optional[str]) -> list[SidePlan]:
    """The sides `--sides NAME,...` names, in that order; SideError names the stack's sides for a name it lacks."""
    if names is None:
        return found
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {s.name: s for s in found}
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted or len(set(wanted)) != len(wanted):
        what = f"{', '.join(unknown)} is not a side of the stack" if unknown else "each side once, at least one"
        raise SideError(f"--sides {names!r}: {what}; allowed: {', '.join(known)}")
    return [known[n] for n in wanted]


def _side(plan, values, manifest, name, namespace, kind, group, item, units) -> SidePlan:
    hosts, replicas = int(group.get("numOfHosts", 1)), manifests.group_replicas(group)
    extra: dict[str, Any] = {}
    if kind == "tpu":
        entry = _by_name(_config_list(values, "tpuSlices"), item)
        chips = units * hosts
        accelerator = f"{entry.get('generation')} {entry.get('topology')}, {chips} chips"
        if replicas > 1:
            accelerator = f"{replicas} x {accelerator}"
        extra = {"topology": entry.get("topology"), "generation": entry.get("generation")}
    else:
        entry = _by_name(_config_list(values, "gpuPools"), item)
        accelerator = f"{units * max(replicas, 1)} x {entry.get('accelerator')}"
        if entry.get("machineType"):
            accelerator += f" on {entry['machineType']}"
        if entry.get("accelerator") in catalog.INFERENCE_CLASS:
            accelerator += " (inference-class)"
        extra = {"gpu_accelerator": entry.get("accelerator")}
    cost = _cost_item(plan, kind, item)
    node_hourly, problem, rate, capacity = None, None, {}, None
    if cost is None:
        missing = (plan.get("cost") or {}).get("missing")
        problem = f"the plan's cost has no item for {item}" + (f" (missing rates: {missing})" if missing else "")
    else:
        rate, capacity = dict(cost.get("rate") or {}), cost.get("capacity")
        # A rate is per unit: a chip of a slice (per chip-hour) or a whole node of a pool (render/pricing.py Item).
        per_node = units if cost.get("unit") == "chip" else 1
        node_hourly = float(rate["hourly"]) * per_node if "hourly" in rate else None
        problem = None if node_hourly is not None else f"the plan's cost item {item} has no hourly rate"
    return SidePlan(
        name=name,
        namespace=namespace,
        kind=kind,
        group=group["groupName"],
        item=item,
        accelerator=accelerator,
        hosts=hosts,
        replicas=replicas,
        units_per_node=units,
        entrypoint=manifest["spec"].get("entrypoint", ""),
        manifest=copy.deepcopy(manifest),
        capacity=capacity,
        node_hourly=node_hourly,
        price_problem=problem,
        rate=rate,
        **extra,
    )


# --- a run's RayJob ------------------------------------------------------------------------------------------------


def set_flags(command: str, flags: dict[str, Any]) -> str:
    """The command with each `--flag` set: a value replaces the flag's value (or is appended), True adds a bare flag
    once, None removes the flag."""
    words = shlex.split(command)
    for flag, value in flags.items():
        out, skip = [], False
        for i, word in enumerate(words):
            if skip:
                skip = False
                continue
            if word == flag:
                # The flag's value follows it, unless the next word is another option (a bare flag).
                skip = i + 1 < len(words) and not words[i + 1].startswith("--")
                continue
            if word.startswith(flag + "="):
                continue
            out.append(word)
        if value is True:
            out.append(flag)
        elif value is not None and value is not False:
            out += [flag, str(value)]
        words = out
    return shlex.join(words)


def flag_value(command: str, flag: str) -> Optional[str]:
    words = shlex.split(command)
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None


def runs_train_module(command: str) -> bool:
    words = shlex.split(command)
    return any(words[i] == "-m" and words[i + 1] == TRAIN_MODULE for i in range(len(words) - 1))


def run_suffix(run: str) -> str:
    """A DNS-label-safe tail of the run id for object names: its last 14 characters of letters and digits."""
    return re.sub(r"[^a-z0-9]", "", run.lower())[-14:] or "run"


def label_value(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:MAX_LABEL_VALUE]
    return cleaned.strip("-_.") or "run"


def job_name(side: SidePlan, run: str) -> str:
    suffix = run_suffix(run)
    return f"{side.name[: MAX_RAYJOB_NAME - len(suffix) - 1].rstrip('-')}-{suffix}"


def entrypoint_for_run(side: SidePlan, extra: Optional[dict] = None) -> str:
    """The side's own entrypoint, unchanged but for `workloads.train`'s own flags: what the comparison tells every
    job (run, side, result folder, seed) goes through the environment (`bench_environment`), never its command line.
    `workloads.train` keeps its checkpoints under <storage-path>/<run>: the sides of one run share the run id, so each
    gets a folder of its own, or one would resume from the other's checkpoint; `extra` sets more of its flags."""
    if not runs_train_module(side.entrypoint):
        return side.entrypoint
    flags: dict[str, Any] = dict(extra or {})
    storage = flags.get("--storage-path") or flag_value(side.entrypoint, "--storage-path") or TRAIN_STORAGE
    flags["--storage-path"] = f"{str(storage).rstrip('/')}/{side.name}"
    return set_flags(side.entrypoint, flags)


def bench_environment(side: SidePlan, run: str, result_dir: str, seed: int, **more: Any) -> dict[str, str]:
    """What the comparison tells the side's job, as the environment variables `bench.start()` reads (`more`:
    simulated, report_every). A new run id also means fresh checkpoints (workloads.train keeps them per run), so a
    run never resumes an earlier one."""
    return bench.environment(run=run, side=side.name, result_dir=result_dir, seed=seed, **more)


def with_runtime_env(spec: dict, variables: dict[str, str]) -> None:
    """Adds `variables` to a RayJob's runtime environment (`spec.runtimeEnvYAML`, KubeRay rayjob_types.go), keeping
    what the stack's own sets. Ray applies a job's runtime environment to its entrypoint and to every task and actor
    of the job (Ray docs, "Environment dependencies: Specifying a runtime environment per-job"), so the variables
    reach the driver and each Ray Train worker."""
    import yaml

    runtime_env = yaml.safe_load(spec.get("runtimeEnvYAML") or "") or {}
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **variables}
    spec["runtimeEnvYAML"] = yaml.safe_dump(runtime_env, sort_keys=True)


def run_manifest(side: SidePlan, run: str, seed: int = 0, result_dir: str = DEFAULT_RESULT_DIR) -> dict:
    """A fresh RayJob for one run of the side, from the stack's own spec: named per run, labelled with the run, not
    suspended, its hardware released a minute after the job ends."""
    manifest = copy.deepcopy(side.manifest)
    metadata = manifest["metadata"]
    metadata["name"] = job_name(side, run)
    metadata.pop("annotations", None)  # Pulumi's (pulumi.com/skipAwait): this object is not Pulumi's
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != "app.kubernetes.io/managed-by"}
    labels.update(
        {RUN_LABEL: label_value(run), SIDE_LABEL: label_value(side.name), "app.kubernetes.io/component": "compare"}
    )
    metadata["labels"] = labels
    spec = manifest["spec"]
    spec["entrypoint"] = entrypoint_for_run(side)
    with_runtime_env(spec, bench_environment(side, run, result_dir, seed))
    spec["shutdownAfterJobFinishes"] = True
    spec["ttlSecondsAfterFinished"] = TTL_AFTER_FINISHED_S
    # The stack's RayJob is a template created suspended (so `pulumi up` runs and bills nothing); this run's copy
    # starts at once (KubeRay creates its RayCluster while spec.suspend is false: rayjob_controller.go).
    spec["suspend"] = False
    return manifest
