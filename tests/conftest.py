import contextlib
import gc
import io
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
# pytest-xdist's workers run with COLUMNS=80 set (seen with pytest-xdist 3.8.0), which the text outputs follow (plan/preview.py console):
# the tests read them off a terminal, at the 200 columns a user's pipe gets; a test of COLUMNS sets its own.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# The local Ray clusters of the tests (and every process they start) report nothing to Ray's usage statistics
# (RAY_USAGE_STATS_ENABLED=0, Ray's documented opt-out): a test run is not usage, and each Ray Data job of a training
# run would otherwise start one more actor to collect it (ray/data/_internal/usage/collector.py).
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import plan as _checkout_plan  # noqa: E402,F401  binds ray_tpu_gke to this checkout's components/ first

# The cyclic collector in larger batches, for the tests' own work (plan.harness does the same around each run, see
# _young_garbage_only, and puts this back afterwards). At the default (700, 10, 10) its full passes walk the few
# hundred thousand objects of pulumi_gcp and pulumi_kubernetes about 30 times in 300 tests: measured, 10 of 27 CPU-s
# of tests/plan/test_policy.py, test_admission.py, test_versions.py and five more; 1 CPU-s at this setting. Garbage is
# still collected, in fewer, larger young passes (a worker's peak memory: +15 MB).
gc.set_threshold(20_000, 10, 10)


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", help="rewrite tests/snapshots/ from the current plans")
    parser.addoption("--stack", metavar="NAME", help="only the tests of stack NAME (a test parametrized with it) and "
                                                     "those that check every stack at once (`make test STACK=NAME`)")


# Tests that look at every stack at once (tests/project/test_new_stack.py runs them beside a new stack's own).
ACROSS_STACKS = ("every_snapshot_has_a_stack", "every_stack_is_valid")


def _of_stack(item, stack: str) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and stack in callspec.params.values():
        return True
    return any(name in item.name for name in ACROSS_STACKS)


# What `pip install .` of the checkout writes into the tree (setuptools' build folder); .gitignore lists it too.
TOOL_OUTPUT = ("build",)


# The unit lane's longest modules, longest first (measured with `--durations=0`, 2026-12: 60 s down to 5 s of a worker;
# each a wheel, venvs, git repositories, subprocess plans or timed load). `make test` hands whole modules to its
# pytest-xdist workers in collection order (--dist loadfile --no-loadscope-reorder): these go first, so that no worker
# is left finishing a long module while the other has nothing to do. An order, not a result: every module passes in any.
LONGEST_FIRST = ("test_compare_serve_local.py", "test_compare_llm_local.py", "test_workloads_train.py",
                 "test_workloads_multislice.py", "test_workloads_ray.py", "test_compare_local.py",
                 "test_compare_torch_tpu.py",
                 "test_package.py", "test_diff.py", "test_compare_llm_live.py", "test_library.py",
                 "test_serve_bench.py", "test_new_stack.py", "test_toolchain.py", "test_cost_diff.py",
                 "test_compare_serve_live.py", "test_llm_load.py", "test_compare_live.py", "test_serve_load.py")


def _longest_first(item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    """With `--stack NAME`, only that stack's tests and those across every stack are kept; the longest modules first
    (a stable sort: the rest keep their order)."""
    stack = config.getoption("--stack")
    if stack:
        kept = [item for item in items if _of_stack(item, stack)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    items.sort(key=_longest_first)


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


def pytest_unconfigure(config):
    """Every process of the run (the controller, each worker, a test's own pytest) exits without the interpreter's
    last collection of the objects it imported, as the commands do (plan/program.py)."""
    gc.freeze()
