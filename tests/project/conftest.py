"""The project/ tests' shared fixtures: the repository files several of them read (the Makefile's targets, CI's
entry point)."""

from __future__ import annotations

import pytest
from helpers import ROOT


@pytest.fixture(scope="session")
def makefile() -> str:
    """The Makefile: its targets are the commands the README, CI and the workflows name."""
    return (ROOT / "Makefile").read_text()


@pytest.fixture(scope="session")
def ci_run() -> str:
    """.ci/run, CI's entry point."""
    return (ROOT / ".ci" / "run").read_text()
