"""The optional `compare` extra (pyproject.toml [project.optional-dependencies]): matplotlib draws every report's
charts, httpx sends the serving and LLM comparisons' load. The toolchain imports neither at start, so
`ray-tpu-gke compare --help`, `--dry-run` and the other commands work without them; a run that needs one says which,
and how to install it, in one line before it starts (exit 1: not a configuration error)."""

from __future__ import annotations

import importlib.util

EXTRA = "ray-tpu-gke[compare]"
INSTALL = f"pip install '{EXTRA}'"


def _importable(module: str) -> bool:
    """Installed (found on the path), without importing it: matplotlib alone takes a second."""
    return importlib.util.find_spec(module) is not None


def needed(args) -> list[str]:
    """The extra's modules this run of `compare` imports: none for a dry run, which writes no report."""
    if args.dry_run:
        return []
    return ["matplotlib", "httpx"] if args.serve or getattr(args, "llm", False) else ["matplotlib"]


def missing(args, command: str) -> str | None:
    """One line naming what this run lacks and the command that installs it, or None."""
    lacking = [module for module in needed(args) if not _importable(module)]
    if not lacking:
        return None
    return f"{command} needs {' and '.join(lacking)}, from the optional `compare` extra: {INSTALL}"
