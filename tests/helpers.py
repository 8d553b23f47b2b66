"""Shared test helpers: plans of the committed stacks (each computed once per session) and small config builders."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from ray_tpu_gke.config import parse_stack_config
from plan import harness, stackfile

ROOT = Path(__file__).resolve().parent.parent
STACKS = stackfile.stacks()


@functools.lru_cache(maxsize=None)
def _plan(stack: str, preview: bool) -> harness.Plan:
    values, secrets = stackfile.load(stack)
    return harness.run_program(stack, values, secrets, preview=preview)


def plan_of(stack: str, preview: bool = False) -> dict:
    """The plan JSON of a committed stack (a fresh copy: tests may change it)."""
    return copy.deepcopy(_plan(stack, preview).to_json())


def config_of(stack: str):
    values, _ = stackfile.load(stack)
    return parse_stack_config(values, stack)


def steps_of_type(plan: dict, type_: str) -> list[dict]:
    return [s for s in plan["steps"] if s["newState"]["type"] == type_]


def minimal_values(**overrides: Any) -> dict[str, Any]:
    """A small valid config map (one single-host v6e slice, one RayCluster); keyword overrides replace keys."""
    values = {
        "gcp:project": "acme-ml-test",
        "gcp:region": "us-east5",
        "ray-tpu-gke:cluster": {"name": "ray-tpu", "location": "us-east5-b", "deletionProtection": False},
        "ray-tpu-gke:tpuSlices": [{"name": "v6e-4", "generation": "v6e", "topology": "2x2"}],
        "ray-tpu-gke:rayClusters": [
            {"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}
        ],
    }
    for key, value in overrides.items():
        values[f"ray-tpu-gke:{key}" if ":" not in key else key] = value
    return values


def run(values: dict[str, Any], stack: str = "test", preview: bool = False) -> dict:
    return harness.run_program(stack, values, preview=preview).to_json()
