"""Every repository path a comment or docstring names exists: a moved or renamed file leaves no pointer to nowhere.

A path is a word with a slash and a file extension (`components/spec/args.py`, `docs/admission.md`) whose first
part is a folder of this repository (or of its packages: `spec/models.py` inside components/). Paths of other
projects cited as sources (`ray/_private/accelerators/tpu.py`, `pulumi_gcp/config/vars.py`) start elsewhere and are
not checked. A path may be written relative to the repository, to `components/` or `plan/`, or to the folder of the
file that names it (or one above it).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest
from helpers import ROOT

SOURCES = ("components", "plan", "policy", "workloads", "provider", "scripts", "benchmarks", "tests")
PATH = re.compile(r"(?<![\w/.:-])((?:\.\./)*[A-Za-z_][\w.-]*/(?:[\w.-]+/)*[\w.-]+\.(?:py|md|yaml|yml|toml|txt|json|"
                  r"cfg|sh|ini))(?![\w/])")
BASES = (ROOT, ROOT / "components", ROOT / "components" / "catalog", ROOT / "plan")


def _tracked() -> list[Path]:
    """The repository's files: git's list in a checkout (an ignored output folder such as compare-report/ of a
    `make compare` is no folder of the repository), else the files on disk (a copy of a checkout's files)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0:
        return [Path(line) for line in listed.stdout.splitlines()]
    return [p.relative_to(ROOT) for p in ROOT.rglob("*") if p.is_file() and not p.parts[len(ROOT.parts)].startswith(".")]


def _local_roots() -> set[str]:
    """First parts a path of this repository starts with: its top-level folders and those of its packages."""
    roots = set()
    for parts in (path.parts for path in _tracked()):
        for base in BASES:
            prefix = base.relative_to(ROOT).parts
            if len(parts) > len(prefix) + 1 and parts[:len(prefix)] == prefix:
                roots.add(parts[len(prefix)])
    return roots - {"__pycache__"}


LOCAL = _local_roots()


def texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring-like string statement of a Python file."""
    source = path.read_text()
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.COMMENT]
    found += [(node.lineno, node.value.value) for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str)]
    return found


def exists(named: str, path: Path) -> bool:
    if named.startswith("../"):
        candidates = [path.parent / named]
    else:
        candidates = [base / named for base in (*BASES, *path.parents)
                      if base == ROOT or ROOT in base.parents]
    return any(c.resolve().exists() and ROOT in c.resolve().parents for c in candidates)


def dead_paths(path: Path) -> list[str]:
    out = []
    for line, text in texts(path):
        for named in PATH.findall(text):
            first = named.split("/")[0]
            if (first == ".." or first in LOCAL) and not exists(named, path):
                out.append(f"{path.relative_to(ROOT)}:{line}: {named}")
    return out


FILES = sorted(p for folder in SOURCES for p in (ROOT / folder).rglob("*.py")) + [ROOT / "__main__.py"]


def test_comments_and_docstrings_name_only_files_that_exist():
    dead = [d for path in FILES for d in dead_paths(path)]
    assert not dead, "\n".join(dead)


@pytest.mark.parametrize("comment, dead", [
    ("# see components/spec/models.py", False), ("# see components/spec/checks.py", True),
    ("# spec/models.py holds it", False), ("# Ray's ray/_private/accelerators/tpu.py", False),
    ("# ../shared/CONTRACTS.md section 2", True), ("# docs/admission.md", False), ("# docs/nowhere.md", True),
])
def test_the_scan_tells_live_paths_from_dead_ones(comment, dead):
    probe = ROOT / "tests" / "project" / "test_comment_paths.py"
    assert bool([n for n in PATH.findall(comment) if (n.split("/")[0] in LOCAL or n.startswith("../"))
                 and not exists(n, probe)]) is dead
