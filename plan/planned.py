"""A stack's config and plan, for every command that reads them (`plan`, `verify`, `diagram`), in both kinds of
project (plan/project.py):

- a project of this package's stack-file schema (`ray-tpu-gke:*` keys, `load_stack_config()`): its config is
  validated before its program runs;
- a program that configures the library in its own way: its program runs under the mocks, and what it registered is
  read back (plan/inventory.py) as the same `StackConfig`, so the commands read one kind of config.

Either way the warnings are the same (plan/version_set.py: a TPU group on an image without JAX).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ray_tpu_gke.spec.config import StackConfig

from . import harness, stackfile, version_set
from . import project as projects


@dataclass
class Planned:
    values: dict[str, Any]
    secret_keys: list[str]
    config: StackConfig
    plan: Optional[harness.Plan]  # None: not run (a stack file's diagram needs none)
    inventory: Any = None  # plan/inventory.py's Inventory of a program of its own; None for a stack file

    @property
    def ran(self) -> harness.Plan:
        """The plan, of a load that ran the program."""
        assert self.plan is not None, "planned.load(run=False) runs no program"
        return self.plan


def reads_stack_files() -> bool:
    """This repository, or a project of its stack-file schema; False for a program of its own."""
    chosen = projects._current  # set by `ray-tpu-gke` (plan/cli.py); None: this repository
    return chosen is None or chosen.reads_stack_files


def load(stack: str, config_file: Optional[Path] = None, run: bool = True, **options: Any) -> Planned:
    """The config and (with `run`, always for a program of its own) the plan. ConfigError, StackNotFound or
    PreflightError as `stackfile.load_checked` and `harness.run_program` raise them; `options` go to the latter."""
    if reads_stack_files():
        values, secret_keys, config = stackfile.load_checked(stack, config_file)
        plan = harness.run_program(stack, values, secret_keys, **options) if run else None
        if plan is not None:
            plan.warnings.extend(version_set.warnings(config))
        return Planned(values, secret_keys, config, plan)
    from . import inventory

    values, secret_keys = stackfile.load(stack, config_file)
    plan = harness.run_program(stack, values, secret_keys, **options)
    found = inventory.read(plan, values.get("gcp:project"))
    plan.warnings.extend(found.warnings)
    plan.warnings.extend(version_set.warnings(found.config, found))
    return Planned(values, secret_keys, found.config, plan, found)
