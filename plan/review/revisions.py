"""One git revision of the project: a temporary checkout of it, its stacks, and its plan of a stack.

Each revision is planned with its own program and stack file (`python -m plan STACK --json` in a subprocess: the Pulumi
runtime is process-global state), so a change to the program is reviewed as well as a change to a stack file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from ..stackfile import EXIT_INVALID


@dataclass
class Side:
    """One revision's plan of a stack: `planned`, `absent` (no stack file there), `invalid` (exit 2) or `failed`."""

    status: str
    plan: dict | None = None
    message: str = ""
    exit_code: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("planned", "absent")

    @property
    def steps(self) -> list[dict]:
        return list(self.plan["steps"]) if self.plan else []


def stack_file_at(root: Path, stack: str) -> Path | None:
    """Where a revision keeps a stack's config, or None when the revision has no Pulumi project."""
    project_file = root / "Pulumi.yaml"
    if not project_file.is_file():
        return None
    try:
        project = yaml.safe_load(project_file.read_text()) or {}
    except yaml.YAMLError:
        project = {}
    return root / str(project.get("stackConfigDir", ".")) / f"Pulumi.{stack}.yaml"


def stacks_at(root: Path) -> list[str]:
    path = stack_file_at(root, "x")
    if path is None or not path.parent.is_dir():
        return []
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in path.parent.glob("Pulumi.*.yaml"))


TOOLCHAIN = __package__.split(".")[0]  # `plan` in this repository, `ray_tpu_gke_tools` installed from the wheel


def plan_revision(root: Path, stack: str, config_file: Path | None = None, any_project: bool = False) -> Side:
    """Plan a stack with the revision's own code, in a subprocess: the Pulumi runtime is process-global state.

    This repository (`any_project` false): the revision's `python -m plan`, with its own library. Another project
    (`ray-tpu-gke plan` in its folder): the revision's program and stack file, under the installed toolchain and
    library, as `ray-tpu-gke --project-dir ROOT plan STACK --json` runs it."""
    path = config_file or stack_file_at(root, stack)
    if path is None or not path.is_file():
        return Side("absent")
    if any_project:
        command = [sys.executable, "-m", f"{TOOLCHAIN}.cli", "--project-dir", str(root), "plan", stack, "--json"]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
    else:
        command = [sys.executable, "-m", "plan", stack, "--json"]
        env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
    if config_file is not None:
        command += ["--config-file", str(config_file.resolve())]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode == 0:
        try:
            return Side("planned", json.loads(done.stdout))
        except json.JSONDecodeError as error:
            return Side("failed", message=f"the plan is not JSON ({error})", exit_code=done.returncode)
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    if done.returncode == EXIT_INVALID:
        return Side("invalid", message="\n".join(lines), exit_code=done.returncode)
    return Side("failed", message="\n".join(lines[-15:]) or f"exit status {done.returncode}", exit_code=done.returncode)


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise GitError(done.stderr.strip() or f"git {' '.join(args)} failed")
    return done.stdout.strip()


class GitError(RuntimeError):
    pass


def repository_of(folder: Path) -> tuple[Path, Path]:
    """The git repository holding a project folder, and the folder's path inside it."""
    top = Path(_git(folder, "rev-parse", "--show-toplevel")).resolve()
    return top, folder.resolve().relative_to(top)


@contextlib.contextmanager
def worktree(root: Path, ref: str) -> Iterator[tuple[Path, str]]:
    """A detached checkout of REF in a temporary directory, removed afterwards whatever happens."""
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") if ref else ""
    if not commit:
        raise GitError(f"{ref!r} is not a commit in {root}")
    base = Path(tempfile.mkdtemp(prefix="plan-diff-"))
    path = base / "rev"
    try:
        _git(root, "worktree", "add", "--detach", "--quiet", str(path), commit)
        yield path, commit
    finally:
        with contextlib.suppress(GitError):
            _git(root, "worktree", "remove", "--force", str(path))
        with contextlib.suppress(GitError):
            _git(root, "worktree", "prune")
        shutil.rmtree(base, ignore_errors=True)
