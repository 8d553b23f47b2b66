"""What the tools write into the checkout stays out of `git status` (issue #20): the venvs `make` builds, caches,
and what `pip install .` leaves behind (setuptools' build/ and egg-info)."""

import shutil
import subprocess

import pytest

from helpers import ROOT

# One path each tool writes, relative to the checkout.
WRITTEN = [
    ".venv/bin/python", ".venv-checkov/bin/checkov", ".venv-workloads/bin/python", ".venv-system-python/bin/python",
    "plan/__pycache__/harness.cpython-311.pyc", ".pytest_cache/README.md", ".ruff_cache/CACHEDIR.TAG",
    "build/lib/ray_tpu_gke/__init__.py", "build/bdist.linux-x86_64/wheel", "dist/ray_tpu_gke-0.3.0-py3-none-any.whl",
    "ray_tpu_gke.egg-info/PKG-INFO", "compare-report/report.md",
]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_tool_output_is_ignored():
    done = subprocess.run(["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *WRITTEN], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    not_ignored = [line.split("\t", 1)[1] for line in done.stdout.splitlines() if line.startswith("::")]
    assert not_ignored == [], f"add these to .gitignore: {not_ignored}"
    # ... and the sources themselves are not
    kept = subprocess.run(["git", "check-ignore", "--no-index", "plan/harness.py", "tests/helpers.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert kept.returncode == 1 and kept.stdout == "", kept.stdout
