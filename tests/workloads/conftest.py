"""The workloads/ tests' shared fixture: what a module's script half saw, run in the workloads interpreter (Ray and
JAX live in .venv-workloads, not in the project's virtualenv, so these modules work in two halves)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, run_workloads_script


@pytest.fixture(scope="module")
def seen(request, tmp_path_factory) -> dict:
    """The JSON document a module's script half wrote, run once per module (helpers.run_workloads_script). The half is
    the module's SCRIPT text, run with this checkout's workloads on its path, else the module file itself; the
    module's SCRIPT_HALF = (what it is, its hang guard in seconds) names it in a failure and bounds its run."""
    module = request.module
    what, timeout = module.SCRIPT_HALF
    script = Path(module.__file__)
    if hasattr(module, "SCRIPT"):
        script = tmp_path_factory.mktemp(script.stem) / f"{script.stem}_script.py"
        script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})  # this checkout's workloads\n"
                          f"{module.SCRIPT}")
    return run_workloads_script(str(script), tmp_path_factory, what, timeout=timeout)
