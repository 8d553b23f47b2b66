"""The policy pack's engine, wherever the toolchain runs: inside the installed wheel (`ray_tpu_gke_tools.policy`,
pyproject.toml), or this repository's `policy/` beside `plan/`."""

from __future__ import annotations

import importlib


def policy_engine():
    """The module `policy.engine` (evaluate, check_plan, report, RULES, views)."""
    inside = f"{__package__}.policy"
    try:
        return importlib.import_module(f"{inside}.engine")
    except ModuleNotFoundError as error:
        if error.name != inside:
            raise
    return importlib.import_module("policy.engine")
