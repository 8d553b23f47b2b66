"""The local comparison (`make compare`): both sides on a local Ray cluster on this machine, CPU standing in for both
accelerators, each side marked simulated; the same report as the live one.

This half runs in the project's virtualenv (it has the plan); the Ray half, `local_run.py`, runs in the workloads
virtualenv ($WORKLOADS_PYTHON, default .venv-workloads/bin/python: `workloads_python`) as a subprocess, with what the
workloads images carry on its path (the workloads package, `ray_tpu_gke.bench` and `ray_tpu_gke.workload`:
`job_path`), from a checkout or from the installed wheel alike. Each side's job is its stack entrypoint (or
--entrypoint's), a shell command line run by bash in the current folder with the workloads interpreter first on PATH
(its `python`), told the run, its side, the seed, that it runs simulated and the checkpoint cadence through the
environment `bench.start()` reads (`ray_tpu_gke.bench.VARIABLES`); a `workloads.train` job is also given fewer steps,
a local checkpoint folder and a short pause after each step (--throttle-s, outside the step's measured time), so that
the failure injected at step K lands while the job still runs. Its nodes are the side's own shape (hosts, chips or
GPUs per node) as simulated Ray nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Union

from .report import Injection, NodeSpan, SideRun
from .sides import SidePlan, bench_environment, entrypoint_for_run, runs_train_module

ROOT = Path(__file__).resolve().parent.parent.parent
TOOLS = Path(__file__).resolve().parent.parent  # plan/ in a checkout, ray_tpu_gke_tools/ installed
# What the workloads images carry of the library (workloads/Dockerfile, tests/workloads/test_workloads_images.py): its
# package file, which imports nothing until asked, the reporting API and the code the workloads share with the
# toolchain.
LIBRARY_IN_IMAGES = ("__init__.py", "bench", "workload")
SCRIPT = Path(__file__).resolve().parent / "local_run.py"
DEFAULT_STEPS = 60
DEFAULT_REPORT_EVERY = 10
DEFAULT_INJECT_STEP = 25
# workloads.train --throttle-s: with it, the steps after K outlast the few tenths of a second Ray takes to bring a
# worker's line to the driver, so the failure is injected mid-run.
THROTTLE_S = 0.05
SIDE_TIMEOUT_S = 600


class LocalError(RuntimeError):
    pass


def is_checkout() -> bool:
    """Run from this repository's checkout (else from an installed wheel, where ROOT is site-packages)."""
    return (ROOT / "workloads" / "__init__.py").exists() and (ROOT / "requirements-workloads.txt").exists()


def workloads_python() -> str:
    """The interpreter with Ray (2.60) and JAX: $WORKLOADS_PYTHON; else, in a checkout, its .venv-workloads (`make
    compare` builds it); else .venv-workloads in the current folder (docs/compare.md "Installed from the wheel")."""
    where = ROOT if is_checkout() else Path.cwd()
    configured = os.environ.get("WORKLOADS_PYTHON") or str(where / ".venv-workloads" / "bin" / "python")
    if not os.access(configured, os.X_OK):
        raise LocalError(
            f"no workloads interpreter at {configured}: set WORKLOADS_PYTHON to a python with Ray 2.60 and JAX, or "
            f"build one there: python3 -m venv {where / '.venv-workloads'} && {where / '.venv-workloads'}/bin/pip "
            "install -r requirements-workloads.txt (ray-tpu-gke's source; `make compare` in a checkout does both)"
        )
    return configured


def workloads_package() -> Path:
    """The workloads' folder, copied onto the workloads interpreter's path as `workloads`: the checkout's, or the one
    the wheel ships inside the toolchain (ray_tpu_gke_tools/workloads, pyproject.toml package-dir). Found by its
    place beside this package, never imported: a project's own `workloads` cannot stand in for it."""
    return ROOT / "workloads" if is_checkout() else TOOLS / "workloads"


def job_path(work_dir: Path) -> Path:
    """What the jobs import, as the workloads images give it (workloads/Dockerfile): the workloads package and
    ray_tpu_gke with nothing but LIBRARY_IN_IMAGES, so the workloads interpreter needs no Pulumi and no install of this
    library."""
    import ray_tpu_gke

    root = work_dir / "jobpath"
    ignore = shutil.ignore_patterns("__pycache__", "Dockerfile*", "cloudbuild.yaml")
    shutil.copytree(workloads_package(), root / "workloads", ignore=ignore)
    (root / "ray_tpu_gke").mkdir()
    library = Path(ray_tpu_gke.__file__).resolve().parent
    for name in LIBRARY_IN_IMAGES:
        if (library / name).is_dir():
            shutil.copytree(library / name, root / "ray_tpu_gke" / name, ignore=ignore)
        else:
            shutil.copy2(library / name, root / "ray_tpu_gke" / name)
    return root


def side_spec(
    side: SidePlan,
    run: str,
    *,
    steps: int,
    report_every: int,
    inject_step: Optional[int],
    seed: int,
    result_dir: Path,
    storage: Path,
) -> dict:
    """What local_run.py needs to stand a side up: its nodes, its job's command line (run by bash, as Ray's job
    supervisor runs a RayJob's entrypoint) and what the comparison tells the job through its environment."""
    extra: dict = {}
    if runs_train_module(side.entrypoint):  # flags of workloads.train beyond the interface every job takes
        extra = {"--steps": steps, "--storage-path": str(storage), "--throttle-s": THROTTLE_S}
    spec = {
        "name": side.name,
        "kind": side.kind,
        "group": side.group,
        "hosts": side.hosts,
        "replicas": side.replicas,
        "unitsPerNode": side.units_per_node,
        "command": entrypoint_for_run(side, extra),
        "env": bench_environment(side, run, str(result_dir), seed, simulated=True, report_every=report_every),
        "injectStep": inject_step,
    }
    if side.kind == "tpu":
        spec.update({"generation": side.generation, "topology": side.topology})
    return spec


def side_run(side: SidePlan, seen: dict, inject_step: Optional[int]) -> SideRun:
    injection = seen.get("injection")
    return SideRun(
        side=side,
        job=f"local driver of {side.name}",
        requested_at=seen.get("requestedAt"),
        nodes=[
            NodeSpan(n["name"], n["createdAt"], n.get("readyAt"), n.get("removedAt")) for n in seen.get("nodes", [])
        ],
        nodes_ready_at=seen.get("nodesReadyAt"),
        log=seen.get("log", ""),
        outcome=seen.get("outcome", "not run"),
        succeeded=seen.get("exitCode") == 0 and seen.get("outcome") == "SUCCEEDED",
        ended_at=seen.get("endedAt"),
        inject_step=inject_step,
        injection=Injection(injection["step"], injection["at"], injection["target"]) if injection else None,
        injection_problem=seen.get("injectionProblem"),
    )


def run(
    sides: list[SidePlan],
    run_id: str,
    *,
    steps: int = DEFAULT_STEPS,
    report_every: int = DEFAULT_REPORT_EVERY,
    inject_step: Union[Optional[int], dict[str, Optional[int]]] = DEFAULT_INJECT_STEP,
    seed: int = 0,
    side_timeout: float = SIDE_TIMEOUT_S,
    quiet: bool = False,
    results: Optional[Path] = None,
    workdir: Optional[Path] = None,
) -> tuple[list[SideRun], float, dict]:
    """Both sides, one after the other, on one local Ray cluster; what was seen of each, the collection time, and
    facts of the local run (the cluster's start time, the jobs' working folder and interpreter). `inject_step`: the
    step at which each side loses a node, or per side name (a job that does not run on Ray, such as a plain program,
    has no node to lose). `results`: the folder the jobs write their result documents into (the report's own, so
    that a failed job's stays; default a temporary one). `workdir`: where each job's command line runs (default the
    current folder)."""
    steps_by_side = inject_step if isinstance(inject_step, dict) else {s.name: inject_step for s in sides}
    python = workloads_python()
    with tempfile.TemporaryDirectory(prefix="compare-") as work:
        work_dir = Path(work)
        jobs = job_path(work_dir)
        # Relative paths in an entrypoint (`python my_job.py`) are the caller's, as in its shell.
        cwd = str((workdir or Path.cwd()).resolve())
        spec = {
            "root": str(jobs),
            "cwd": cwd,
            "bin": str(work_dir / "bin"),
            "sideTimeout": side_timeout,
            "sides": [
                side_spec(
                    s,
                    run_id,
                    steps=steps,
                    report_every=report_every,
                    inject_step=steps_by_side.get(s.name),
                    seed=seed,
                    result_dir=(results or work_dir / "results").resolve(),
                    storage=work_dir / "checkpoints",
                )
                for s in sides
            ],
        }
        spec_path, out_path = work_dir / "spec.json", work_dir / "seen.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        budget = side_timeout * len(sides) + 300  # the cluster's start and shutdown on top of every side
        try:
            done = subprocess.run(
                [python, str(SCRIPT), str(spec_path), str(out_path)],
                cwd=os.getcwd(),
                timeout=budget,
                env={**os.environ, "PYTHONPATH": str(jobs)},
                stderr=subprocess.PIPE if quiet else None,
                text=True,
            )
        except subprocess.TimeoutExpired:
            raise LocalError(f"the local Ray run did not end within {budget:.0f} s") from None
        if done.returncode != 0 or not out_path.exists():
            tail = (done.stderr or "")[-3000:] if quiet else "(its output is above)"
            raise LocalError(f"the local Ray run failed (exit {done.returncode}): {tail}")
        seen = json.loads(out_path.read_text())
    runs = [side_run(s, seen["sides"].get(s.name, {}), steps_by_side.get(s.name)) for s in sides]
    facts = {"clusterStartS": seen.get("clusterStartS"), "workdir": cwd, "python": python}
    return runs, seen["collectedAt"], facts
