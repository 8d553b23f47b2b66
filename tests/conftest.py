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


# Fixtures whose set-up a module's tests share: one local Ray cluster, one Checkov run, one fuzz run, one git repo.
SHARED_SCOPES = ("class", "module", "package")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups (xdist/remote.py)
def pytest_collection_modifyitems(config, items):
    """`make test` runs pytest-xdist workers with `--dist loadgroup`: the tests of a module that share a
    module-scoped fixture go to one worker as one group, in their order, so that set-up runs once and a fixture
    that later tests build on (test_diff's repository) sees them in sequence. Found from the fixtures themselves,
    so a module that adds one needs no marker here."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = any(defs and defs[-1].scope in SHARED_SCOPES for name, defs in info.name2fixturedefs.items()
                     if name in item.fixturenames and name != "request")
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def pytest_sessionstart(session):
    session.config._tool_output_before = {name: (ROOT / name).exists() for name in TOOL_OUTPUT}


# What `pip install .` of the checkout writes into the tree (setuptools' build folder); .gitignore lists it too.
TOOL_OUTPUT = ("build",)


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


@dataclass
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
