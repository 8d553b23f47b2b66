"""The policy pack's engine, wherever the toolchain runs: inside the installed wheel (`ray_tpu_gke_tools.policy`,
pyproject.toml), or this repository's `policy/` beside `plan/`."""

from __future__ import annotations


def policy_engine():
    """The module `policy.engine` (evaluate, check_plan, report, RULES, views)."""
    try:
        from .policy import engine
    except ModuleNotFoundError as error:
        if error.name != f"{__package__}.policy":
            raise
        from policy import engine
    return engine
