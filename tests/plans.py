"""Each stack planned once per test process: `harness.run_program` under a cache keyed by the stack and its config,
for the tests that only read a plan (pytest-xdist's --dist loadfile: each worker plans a stack at most once).

A plan takes seconds and the tests read the same few stacks' plans in many modules, through `helpers.plan_of`, the
`plan_output` fixture (tests/conftest.py) and the expectations of `plan.verify`. Each caller gets a deep copy, so a
test that edits its plan changes no other test's. A run with any other option (a program, quotas) is not cached.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

from plan import harness

_RUN_PROGRAM = harness.run_program  # the real one, whatever `planned_once` patches in while it runs
_PLANS: dict[tuple, harness.Plan] = {}


def program_plan(stack: str, values: dict[str, Any], secret_keys=None, preview: bool = False,
                 **options) -> harness.Plan:
    """`harness.run_program(stack, values, secret_keys, preview=preview)`, run once per process for each stack and
    config (a copy each call); with other options it runs every time."""
    if any(value not in (None, "") for value in options.values()):
        return _RUN_PROGRAM(stack, values, secret_keys, preview=preview, **options)
    key = (stack, json.dumps(values, sort_keys=True), tuple(secret_keys or ()), preview)
    if key not in _PLANS:
        _PLANS[key] = _RUN_PROGRAM(stack, values, list(secret_keys or ()), preview=preview)
    return copy.deepcopy(_PLANS[key])


@contextlib.contextmanager
def planned_once():
    """Within the block, `harness.run_program` (as `python -m plan` calls it) is `program_plan`."""
    before = harness.run_program  # a test's own stand-in (monkeypatch) is put back as it was
    harness.run_program = program_plan
    try:
        yield
    finally:
        harness.run_program = before
