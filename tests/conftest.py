import contextlib
import io
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

import plan as _checkout_plan  # noqa: E402,F401  binds ray_tpu_gke to this checkout's components/ first


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", help="rewrite tests/snapshots/ from the current plans")


# What `pip install .` of the checkout writes into the tree (setuptools' build folder); .gitignore lists it too.
TOOL_OUTPUT = ("build",)


def pytest_collection_modifyitems(items):
    """The modules that start a local Ray cluster first: each takes minutes of mostly waiting, so, started first on
    workers of their own, they overlap the rest of the suite instead of running last (with
    `--no-loadscope-reorder`, pytest-xdist hands out modules in this order). Otherwise the order is unchanged."""
    items.sort(key=lambda item: item.get_closest_marker("local_ray") is None)


def pytest_sessionstart(session):
    session.config._tool_output_before = {name: (ROOT / name).exists() for name in TOOL_OUTPUT}


def pytest_sessionfinish(session):
    """A test that builds the package from the checkout leaves build/ behind: remove what the session created (on
    the controller only, once every worker is done)."""
    if hasattr(session.config, "workerinput"):
        return
    before = getattr(session.config, "_tool_output_before", {})
    for name in TOOL_OUTPUT:
        path = ROOT / name
        if path.is_dir() and not before.get(name, True):
            shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def plan(capsys):
    """`python -m plan ARGS` run in-process (imports are paid once): its exit status, stdout and stderr."""
    from plan import __main__ as plan_cli

    def run(*args):
        code = plan_cli.main(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


@pytest.fixture(scope="session")
def plan_output():
    """`python -m plan ARGS` over a committed stack, in-process and once per session (per pytest-xdist worker) for
    each ARGS, shared by the tests that only read what it printed; its stack planned once for all ARGS (plans.py).
    Not for files a test writes (--config-file, --quotas): those change between tests; use `plan` for them."""
    from plan import __main__ as plan_cli
    from plans import planned_once

    done: dict[tuple[str, ...], CliResult] = {}

    def run(*args: str) -> CliResult:
        if args not in done:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), planned_once():
                code = plan_cli.main(list(args))
            done[args] = CliResult(code, out.getvalue(), err.getvalue())
        return done[args]

    return run
