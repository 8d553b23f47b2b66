"""The workloads' virtualenvs as the Makefile builds them: every process starts with workloads/venv_sitecustomize.py,
the cyclic collector's thresholds of each local Ray cluster's processes."""

from __future__ import annotations

import ast
import os
import subprocess

import pytest
from helpers import ROOT, workloads_python

SITECUSTOMIZE = ROOT / "workloads" / "venv_sitecustomize.py"


def declared_thresholds() -> tuple:
    """THRESHOLDS as the file declares it, read without running it (running it would retune this process)."""
    tree = ast.parse(SITECUSTOMIZE.read_text())
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["THRESHOLDS"]]
    return ast.literal_eval(value)


def thresholds(python: str, *flags: str) -> tuple:
    run = subprocess.run([python, *flags, "-c", "import gc; print(tuple(gc.get_threshold()))"], capture_output=True,
                         text=True, timeout=60, check=True)
    return ast.literal_eval(run.stdout.strip())


def check(python: str) -> None:
    assert thresholds(python) == declared_thresholds() != (700, 10, 10)
    assert thresholds(python, "-S") == (700, 10, 10)  # without the site hook: CPython's own defaults


def test_every_process_of_the_workloads_venv_starts_with_the_declared_thresholds():
    check(workloads_python())


def test_so_does_every_process_of_the_pytorch_venv():
    python = os.environ.get("TORCH_PYTHON") or str(ROOT / ".venv-torch" / "bin" / "python")
    if not os.access(python, os.X_OK):  # `make test` does not build it
        pytest.skip(f"no PyTorch virtualenv at {python}: `make test-ray` builds .venv-torch")
    check(python)
