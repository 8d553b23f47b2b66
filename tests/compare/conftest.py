"""The compare/ tests' shared fixture: `python -m plan.compare` in-process over plans loaded once in the session."""

from __future__ import annotations

import pytest
from compare_runs import loaded_plan

from plan.compare import __main__ as compare_cli


@pytest.fixture
def planned(monkeypatch) -> tuple[dict, dict]:
    """The compare stack's plan and config values (a copy); `plan.compare` run in-process loads copies of the plans
    loaded once in the session instead of planning again (compare_cli.load_plan patched)."""
    monkeypatch.setattr(compare_cli, "load_plan", loaded_plan)
    return loaded_plan("compare")
