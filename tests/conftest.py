import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

import plan  # noqa: E402,F401  binds ray_tpu_gke to this checkout's components/ before any test imports it


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", help="rewrite tests/snapshots/ from the current plans")
