"""`python -m plan STACK --diff-against REF`: what a change does to a stack, resource by resource, offline.

Plans the stack twice, each time in a subprocess running that revision's own program and stack file: at git revision
REF (checked out in a temporary worktree) and in the working tree. Then matches resources by URN and classifies each
as `create`, `delete`, `update` (changed input paths, old -> new) or `replace`: a changed input that the Google
provider can only apply by replacing the resource (see `review.replacement`), or a changed name, type or parent.

Replacing or deleting a TPU node pool or the cluster is flagged as risky: a replaced multi-host pool loses its whole
slice, and the capacity may not come back.

Output: `--format text` (rich, for a terminal), `markdown` (a pull-request comment: summary table, risky changes first,
details folded) or `json` (`{"stack": ..., "changes": [{"op", "urn", "type", "diffs", ...}], "capacity": ...}`). Each
output states the TPU chips and hosts the change adds and removes per slice. Exit status: 0 every stack was diffed; 2
the working tree's configuration of a stack is invalid; 1 anything else (REF unknown, a revision that cannot be
planned); then, only where asked for, the status of a CI gate that fails (`--fail-on-risk`: 3; see `review.gates`).

This module is the command; the review itself is the package `plan.review`, one module per concern: `revisions`
(git worktrees, one revision's plan), `paths` (input paths and their differences), `replacement` (the Google
provider's replacement rules), `tpu` (TPU node pools as the catalogue reads them), `changes` (the change model and its
JSON), `classify` (two plans -> changes, risky ones flagged), `capacity` (TPU chips and hosts added and removed),
`gates` (CI gates: exit statuses of their own), `text` and `markdown` (the outputs).
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import ROOT, terminal
from . import project as projects
from .review import gates
from .review.changes import Report
from .review.classify import compare
from .review.markdown import markdown
from .review.revisions import GitError, plan_revision, repository_of, stacks_at, worktree
from .review.text import print_text
from .stackfile import EXIT_ERROR


def diff_stacks(
    stacks: list[str] | None,
    ref: str,
    root: Path = ROOT,
    config_file: Path | None = None,
    workers: int | None = None,
    any_project: bool = False,
) -> Report:
    """Diff each stack (None: every stack at REF or in the working tree) between REF and the working tree.

    `root` is the project's folder: this repository's root, or (`any_project`) any Pulumi project's folder inside a
    git repository, planned at REF from the same folder of REF's checkout."""
    try:
        repository, inside = repository_of(root) if any_project else (root, Path("."))
        with worktree(repository, ref) as (checkout, commit):
            old_root = checkout / inside
            names = stacks if stacks is not None else sorted(set(stacks_at(root)) | set(stacks_at(old_root)))
            jobs = [(old_root, name, None, any_project) for name in names] + [
                (root, name, config_file, any_project) for name in names
            ]
            with ThreadPoolExecutor(max_workers=workers or max(2, os.cpu_count() or 2)) as pool:
                sides = list(pool.map(lambda job: plan_revision(*job), jobs))
    except GitError as error:
        return Report(ref, "", [], error=f"cannot check out {ref!r}: {error}")
    olds, news = sides[: len(names)], sides[len(names) :]
    return Report(ref, commit, [compare(o, n, name, ref, commit) for name, o, n in zip(names, olds, news)])


def run(args) -> int:
    """The `--diff-against` entry point of `python -m plan`."""
    config_file = getattr(args, "config_file", None)
    if args.all_stacks and config_file is not None:
        print(
            "error: --config-file replaces one stack's file; it cannot be combined with --all-stacks", file=sys.stderr
        )
        return EXIT_ERROR
    stacks = None if args.all_stacks else [args.stack]
    chosen = projects._current  # `ray-tpu-gke plan` in a project's folder (plan/cli.py); None: this repository
    root = chosen.root if chosen is not None else ROOT
    # This repository through the console script is planned as `python -m plan` plans it: each revision's library.
    any_project = chosen is not None and chosen.root != projects.REPOSITORY
    report = diff_stacks(stacks, args.diff_against, root, config_file, any_project=any_project)
    report.failed_gates = gates.evaluate(report, args)
    fmt = "json" if getattr(args, "json", False) else args.format
    if fmt == "json":
        payload = report.to_json()
        if not args.all_stacks and report.stacks:
            payload = report.stacks[0].to_json()
        sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True, default=repr) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(markdown(report, root))
    else:
        console = terminal.console()
        print_text(report, console)
    if fmt != "text":
        for problem in [report.error] + [s.error for s in report.stacks]:
            if problem:
                print(f"error: {problem}", file=sys.stderr)
    for failure in report.failed_gates:
        for problem in failure.problems:
            print(f"gate {failure.option} (exit {failure.exit_code}): {problem}", file=sys.stderr)
    return report.exit_code
