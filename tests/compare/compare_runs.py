"""What the comparison's tests share: side runs built by hand around the job log in tests/data/compare/ (a TPU job of
20 steps that lost a worker at step 12 and resumed from the checkpoint of step 10, and a GPU side beside it), and the
plans `plan.compare` loads, each loaded once in the session, the stand-in clusters' timestamps, and the local
rehearsals' command."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import ROOT

from plan.compare import __main__ as compare_cli
from plan.compare.report import Injection, NodeSpan, SideRun
from plan.compare.sides import SidePlan

DATA = ROOT / "tests" / "data" / "compare"
T = 1_800_000_000.0  # the fixture's time origin: the RayJob's creation
RUN = "compare-20270115080000"
LOG = (DATA / "train.log").read_text()
RESULT = json.loads((DATA / "result.json").read_text())


def side_plan(name="bench-tpu", kind="tpu", node_hourly=21.6, hosts=1, problem=None) -> SidePlan:
    return SidePlan(name=name, namespace="compare", kind=kind, group=kind, item="v6e-8" if kind == "tpu" else "l4-8",
                    accelerator="v6e 2x4, 8 chips" if kind == "tpu" else "8 x nvidia-l4 on g2-standard-96",
                    hosts=hosts, replicas=1, units_per_node=8, entrypoint="python -m workloads.train", manifest={},
                    capacity="onDemand", node_hourly=node_hourly, price_problem=problem,
                    generation="v6e" if kind == "tpu" else None, gpu_accelerator="nvidia-l4" if kind == "gpu" else None)


def job_log(**changes) -> str:
    """The fixture log with its result document changed (None removes a field; `drop=True` removes the result)."""
    lines = LOG.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('{"schema"'))
    if changes.pop("drop", False):
        del lines[index]
        return "\n".join(lines)
    result = copy.deepcopy(RESULT)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    lines[index] = json.dumps(result)
    return "\n".join(lines)


def tpu_run(**changes) -> SideRun:
    run = SideRun(side=side_plan(), job="compare/bench-tpu-20270115080000", requested_at=T,
                  nodes=[NodeSpan("gke-v6e-8-a", T + 2.0, T + 50.0, None)], nodes_ready_at=T + 50.0,
                  pods_ready_at=T + 80.0, log=LOG, outcome="SUCCEEDED", succeeded=True, ended_at=T + 108.0,
                  inject_step=12, injection=Injection(12, T + 93.0, "pod bench-tpu-rc-tpu-worker-x"))
    for key, value in changes.items():
        setattr(run, key, value)
    return run


def gpu_run(**result_changes) -> SideRun:
    changes = {"side": "bench-gpu", "kind": "gpu", "platform": "gpu", "deviceKind": "NVIDIA L4",
               "finalLoss": RESULT["finalLoss"] * 1.004, **result_changes}
    return tpu_run(side=side_plan("bench-gpu", "gpu", node_hourly=8.00333), log=job_log(**changes),
                   nodes=[NodeSpan("gke-l4-8-b", T + 1.0, T + 40.0, T + 170.0)], nodes_ready_at=T + 40.0)


COLLECTED = T + 200.0


# --- the plans `plan.compare` loads ---------------------------------------------------------------------------------

_LOAD_PLAN = compare_cli.load_plan  # the real one: tests patch compare_cli.load_plan with `loaded_plan`


@functools.lru_cache(maxsize=None)
def _loaded(stack: str, config_file) -> tuple[dict, dict]:
    return _LOAD_PLAN(stack, config_file)


def loaded_plan(stack: str = "compare", config_file=None) -> tuple[dict, dict]:
    """`compare_cli.load_plan(STACK, CONFIG_FILE)`, planned once in the session: a copy each call."""
    return copy.deepcopy(_loaded(stack, config_file))


def iso(t: float) -> str:
    """A POSIX time as Kubernetes writes a timestamp (RFC 3339, UTC, `Z`): the stand-in clusters' clock."""
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def compare_locally(out: Path, python: str, *args: str, timeout: float) -> tuple[subprocess.CompletedProcess, dict]:
    """`python -m plan.compare compare --local --out OUT ARGS` (the compare stack), its jobs run by PYTHON (the
    workloads or the PyTorch virtualenv's): the finished command and its report.json. The test fails with the
    command's last output when it wrote no report; `timeout` guards against a hang."""
    done = subprocess.run([sys.executable, "-m", "plan.compare", "compare", "--local", "--out", str(out), *args],
                          cwd=ROOT, env={**os.environ, "WORKLOADS_PYTHON": python}, capture_output=True, text=True,
                          timeout=timeout)
    written = out / "report.json"
    if not written.exists():
        pytest.fail(f"no report (exit {done.returncode}):\n{done.stderr[-6000:]}")
    return done, json.loads(written.read_text())


def by_name(document: dict) -> dict:
    """A training report's sides by name."""
    return {s["name"]: s for s in document["sides"]}
