"""The toolchain a newcomer meets: `make` accepts exactly the Pythons pyproject.toml's `requires-python` names (and
refuses any other in one line, before creating a venv), and `python -m plan` runs from any directory of the checkout
(the venv's site-packages lists the checkout in a .pth file) while a current directory still comes first, as
`--diff-against` needs for the revision it plans in a git worktree. Fast, no network: no venv gets a package here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from helpers import ROOT, clean_env, plan_of

MAKE = shutil.which("make")
MAJOR, MINOR, MICRO = sys.version_info[:3]
ME = f"{MAJOR}.{MINOR}.{MICRO}"
PTH = "ray-tpu-gke-checkout.pth"

pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def make(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([MAKE, "--no-print-directory", *args], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def checkout(tmp_path):
    """A copy of the files the Makefile reads, with `requires-python` set to the range given."""
    for name in ("Makefile", "pyproject.toml", "requirements.txt", "requirements-checkov.txt"):
        shutil.copy2(ROOT / name, tmp_path / name)

    def with_range(spec: str) -> Path:
        path = tmp_path / "pyproject.toml"
        text, count = re.subn(r'(?m)^requires-python = ".*"$', f'requires-python = "{spec}"', path.read_text())
        assert count == 1, "pyproject.toml has no requires-python line"
        path.write_text(text)
        return tmp_path

    return with_range


def test_this_python_is_in_the_supported_range():
    text = (ROOT / "pyproject.toml").read_text()
    spec = re.search(r'(?m)^requires-python = "(.*)"$', text).group(1)
    assert SpecifierSet(spec).contains(ME), (spec, ME)
    done = make("check-python", f"PYTHON={sys.executable}", cwd=ROOT)
    assert done.returncode == 0 and not done.stderr, done.stderr


@pytest.mark.parametrize("spec", [
    f">={MAJOR}.{MINOR}", f">{ME}", f"<{MAJOR}.{MINOR}", f"=={MAJOR}.{MINOR}.*", f"!={MAJOR}.{MINOR}.*", f"=={ME}",
    f">={MAJOR}.{MINOR},<{MAJOR}.{MINOR + 1}", f">={MAJOR}.{MINOR}, !={ME}", f"~={MAJOR}.{MINOR}",
    f"~={MAJOR}.{MINOR}.{MICRO + 1}", f"<={MAJOR}.{MINOR}", f">={MAJOR}.{MINOR}.{MICRO + 1}",
])
def test_make_reads_the_range_from_pyproject(checkout, spec):
    """Change requires-python and the Makefile's guard follows it, with the same answer as packaging's."""
    done = make("check-python", f"PYTHON={sys.executable}", cwd=checkout(spec))
    assert (done.returncode == 0) == SpecifierSet(spec).contains(ME), (spec, ME, done.stderr)


@pytest.mark.parametrize("target", ["plan", "test"])
def test_make_refuses_an_unsupported_python_before_creating_a_venv(checkout, target):
    folder = checkout(f">{ME}")
    done = make(target, f"PYTHON={sys.executable}", cwd=folder)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert ours == [f"{sys.executable} is Python {ME}; this project needs Python >{ME} (pyproject.toml "
                    f"requires-python): run make with PYTHON=/path/to/a/supported/python3"], done.stderr
    assert "Traceback" not in done.stderr and "-m venv" not in done.stdout
    assert not (folder / ".venv").exists() and not (folder / ".venv-checkov").exists()


def test_venv_set_up_lists_the_checkout(tmp_path):
    """The Makefile's recipe, on a bare venv: the .pth names this checkout, so `plan` imports from anywhere."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_env())
    (venv / ".requirements-installed").touch()  # as if installed: nothing to download
    done = make(f"VENV={venv}", f"{venv}/.checkout-on-path", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    probe = "import importlib.util; print(importlib.util.find_spec('plan').origin)"
    found = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env(),
                           capture_output=True, text=True, check=True)
    assert Path(found.stdout.strip()) == ROOT / "plan" / "__init__.py"


def require_checkout_on_path() -> None:
    """`python -m plan` from any directory is what make's venv adds (a .pth naming the checkout, Makefile ON_PATH):
    under make its absence fails the test; in a venv of one's own the test is skipped, saying so."""
    path = Path(sysconfig.get_path("purelib")) / PTH
    if path.is_file() and Path(path.read_text().strip()).resolve() == ROOT:
        return
    message = f"{sys.prefix} has no {PTH} naming {ROOT}: `make plan` or `make test` writes it"
    if "MAKELEVEL" in os.environ:
        pytest.fail(message)
    pytest.skip(message)


def _cli_plan(done: subprocess.CompletedProcess) -> dict:
    """The CLI's JSON without what the CLI adds (the estimate and the version set): the harness's plan."""
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan.pop("cost")["currency"] == "USD"
    assert plan.pop("versions")["gke"]["releaseChannel"]
    return plan


def test_plan_runs_from_a_subdirectory():
    """From tests/ here; from stacks/ by the console script below."""
    require_checkout_on_path()
    done = subprocess.run([sys.executable, "-m", "plan", "dev", "--json"], cwd=ROOT / "tests", env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert _cli_plan(done) == plan_of("dev")


def test_current_directory_comes_before_the_checkout(tmp_path):
    """`--diff-against` runs `python -m plan` with cwd (and PYTHONPATH) = a worktree: its own `plan` must win."""
    require_checkout_on_path()
    package = tmp_path / "plan"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("print(__file__)\n")
    for env in (clean_env(), clean_env(PYTHONPATH=str(tmp_path))):
        done = subprocess.run([sys.executable, "-m", "plan"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=True)
        assert Path(done.stdout.strip()).resolve() == (package / "__main__.py").resolve()


def test_ci_output_ends_with_the_test_suite(ci_run):
    """CI reads pytest's closing summary: `make test-all` (both lanes, the Ray lane last) is .ci/run's last command,
    after the Debian Python's plan."""
    commands = [line.strip() for line in ci_run.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert commands[-1] == "make test-all"
    debian = next(i for i, line in enumerate(commands) if re.search(r"\bmake plan PYTHON=\S+ VENV=\S+", line))
    assert debian < len(commands) - 1


# --- the console script in this checkout (the installed wheel: tests/project/test_package.py)
# ------------------------------

def test_console_script_in_this_repository_is_python_m_plan():
    """This repository is one project of the toolchain: `ray-tpu-gke plan` in it, from a subdirectory, prints
    `python -m plan`'s JSON (the harness's plan, with the estimate and the version set the CLI adds)."""
    script = Path(sys.executable).parent / "ray-tpu-gke"
    assert script.is_file(), f"{sys.prefix} has no ray-tpu-gke: `make` reinstalls the package when pyproject changes"
    mine = subprocess.run([str(script), "plan", "dev", "--json"], cwd=ROOT / "stacks", env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert _cli_plan(mine) == plan_of("dev")


# --- one version ---------------------------------------------------------------------------------------------------

PROJECT_VERSION = re.search(r'(?m)^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text()).group(1)
# What a reader installs or pins: `ray-tpu-gke @ git+https://<host>/<org>/ray-tpu-gke@vX.Y.Z`, the provider's
# `.../ray-tpu-gke/provider@vX.Y.Z`, a release's wheel `ray_tpu_gke-X.Y.Z-py3-none-any.whl`.
PINNED_RELEASE = re.compile(r"ray-tpu-gke(?:/provider)?@v(\d+\.\d+\.\d+)|ray_tpu_gke-(\d+\.\d+\.\d+)-py3")
GIT_ADDRESS = re.compile(r"(?:git\+https://|pulumi package add )(\S*?)ray-tpu-gke\b")
PLACEHOLDER = "<your-git-host>/<org>/"


def _reader_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "provider").glob("*.*"))]
    files += [p for p in sorted((ROOT / "examples").rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in files if p.suffix in (".md", ".txt", ".yaml", ".py", ".toml", "")]


def test_one_version_in_pyproject_which_the_changelog_library_and_docs_agree_with():
    import ray_tpu_gke

    fallback = re.search(r'(?m)^    __version__ = "([^"]+)"', (ROOT / "components" / "__init__.py").read_text())
    assert fallback and fallback.group(1) == PROJECT_VERSION, "components/__init__.py's fallback __version__"
    assert ray_tpu_gke.__version__ == PROJECT_VERSION
    releases = re.findall(r"(?m)^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text())
    assert releases and releases[0] == PROJECT_VERSION, f"CHANGELOG.md's newest release is {releases[:1]}"
    found = []
    for path in _reader_files():
        for match in PINNED_RELEASE.finditer(path.read_text(errors="replace")):
            found.append((path.relative_to(ROOT).as_posix(), match.group(1) or match.group(2)))
    assert {"examples/existing-cluster/requirements.txt", "examples/own-config/requirements.txt",
            "docs/library.md", "README.md"} <= {name for name, _ in found}
    assert [(name, v) for name, v in found if v != PROJECT_VERSION] == [], f"pyproject.toml says {PROJECT_VERSION}"


def test_the_git_address_is_a_placeholder_the_reader_fills_in():
    """No address that reads like a real repository: the host and organisation are the reader's."""
    seen = 0
    for path in _reader_files() + [ROOT / "pyproject.toml"]:
        for match in GIT_ADDRESS.finditer(path.read_text(errors="replace")):
            seen += 1
            assert match.group(1).endswith(PLACEHOLDER) or match.group(1).startswith((".", "/")), \
                f"{path.relative_to(ROOT)}: {match.group(0)}"
    assert seen >= 4
    assert "acme/ray-tpu-gke" not in (ROOT / "pyproject.toml").read_text()


def test_make_test_stack_runs_one_stacks_tests_and_those_across_every_stack():
    """`make test STACK=name` (the README's new-environment checklist): the name from the command line only."""
    one = make("-n", "test", "STACK=staging", cwd=ROOT)
    every = make("-n", "test", cwd=ROOT)
    assert one.returncode == every.returncode == 0, one.stderr + every.stderr
    assert one.stdout.splitlines()[-1].endswith(" --stack staging")
    assert "--stack" not in every.stdout.splitlines()[-1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:randomly", "--stack",
                           "staging", "tests/plan/test_snapshots.py", "tests/plan/test_policy.py"], cwd=ROOT,
                          env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert "tests/plan/test_snapshots.py::test_plan_matches_snapshot[staging]" in ids
    assert "tests/plan/test_snapshots.py::test_every_snapshot_has_a_stack" in ids
    assert all("staging" in i or "every_stack" in i or "every_snapshot" in i for i in ids), ids
    assert not any("[prod]" in i or "[dev]" in i for i in ids)


def test_ruff_passes_what_the_wheel_ships(makefile):
    """`make lint`'s first step (pyproject.toml [tool.ruff], its exceptions written there); fast, so always run."""
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.is_file():
        pytest.skip(f"{sys.prefix} has no ruff: requirements.txt pins it (`make` reinstalls the venv)")
    done = subprocess.run([str(ruff), "check", "--no-cache", "components", "plan", "policy", "workloads"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"(?m)^lint:", makefile) and "$(BIN)/mypy" in makefile and "ruff format --check" in makefile
