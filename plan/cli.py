"""`ray-tpu-gke`: the offline toolchain for any Pulumi Python project that uses the library, run in its folder.

    ray-tpu-gke plan STACK [--config-file F] [--json | --manifests] [--diff-against REF [--format F] [gates]]
                           [--all-stacks] [--policy-pack]
    ray-tpu-gke verify STACK --context CTX ...     the post-deploy check (plan/verify)
    ray-tpu-gke compare STACK --context CTX ...    TPU and GPU side by side (plan/compare)
    ray-tpu-gke diagram STACK [--markdown]         the stack as a Mermaid flowchart
    ray-tpu-gke policy PLAN.json | --list          the policy pack over a saved plan

The project is the nearest folder upwards holding a Pulumi.yaml (or `--project-dir DIR`), as the Pulumi CLI finds
it: its `name`, `stackConfigDir`, `main` and `config` defaults, its `Pulumi.<STACK>.yaml`. Its program runs under the
same mocks as `python -m plan` (this repository's stacks are one such project), with the same output, JSON and exit
statuses. Every command serves every project: a program that configures the library itself is read back from what
its plan registers (plan/planned.py; `compare`'s sides from its RayJobs on a TPU slice and on a GPU pool,
plan/compare/registered.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ray_tpu_gke.spec.problems import ConfigError

from . import program, stackfile
from . import project as projects

PROG = "ray-tpu-gke"
COMMANDS = {
    "plan": "what `pulumi up` would create, offline: tree, capacity, pools, cost, quota; --diff-against REF",
    "verify": "after `pulumi up`: does the live cluster match the plan, does every TPU slice work",
    "compare": "run the stack's TPU and GPU comparison jobs and report them side by side",
    "diagram": "the stack as a Mermaid flowchart: cluster, pools, Ray worker groups",
    "policy": "the policy pack's rules over a saved plan JSON (`ray-tpu-gke plan STACK --json`)",
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} [--project-dir DIR] COMMAND ...", "", __doc__.splitlines()[0], "", "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    lines += ["", f"`{PROG} COMMAND --help` lists each command's options."]
    return "\n".join(lines)


def _split(argv: list[str]) -> tuple[Path | None, str | None, list[str]]:
    """(--project-dir, command, the command's own arguments)."""
    project_dir = None
    rest = list(argv)
    while rest and rest[0].startswith("--project-dir"):
        option = rest.pop(0)
        if "=" in option:
            project_dir = Path(option.split("=", 1)[1])
        elif rest:
            project_dir = Path(rest.pop(0))
        else:
            raise SystemExit(f"{PROG}: error: --project-dir needs a folder")
    return project_dir, (rest.pop(0) if rest else None), rest


# Every command's options that take a file.
PATH_OPTIONS = ("--config-file", "--kubeconfig", "--out", "--quotas", "--rates")


def _absolute(path: str) -> str:
    """`path` against the caller's folder, its links left alone: `Path.resolve` turned a process substitution's
    `/dev/fd/63` into `/proc/PID/fd/pipe:[N]`, a name no file has, so the console script refused what
    `python -m plan` read. `-` (standard input) stays itself."""
    return path if path in ("", "-") else os.path.join(os.getcwd(), path)


def _absolute_paths(args: list[str]) -> list[str]:
    """Path options made absolute against the caller's folder, before the program's folder becomes the current one."""
    out, after = [], None
    for arg in args:
        if after is not None:
            out.append(_absolute(arg))
            after = None
        elif arg in PATH_OPTIONS:
            out.append(arg)
            after = arg
        elif arg.split("=", 1)[0] in PATH_OPTIONS and "=" in arg:
            key, value = arg.split("=", 1)
            out.append(f"{key}={_absolute(value)}")
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    project_dir, command, rest = _split(argv)
    if command in (None, "-h", "--help"):
        print(_usage())
        return 0 if command else 2
    if command not in COMMANDS:
        print(f"{PROG}: error: unknown command {command!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    if command == "policy":
        from .policy_pack import policy_engine

        return policy_engine().main(rest)
    help_only = any(a in ("-h", "--help") for a in rest)
    rest = _absolute_paths(rest)
    try:
        project = projects.load(project_dir) if project_dir else projects.find(Path.cwd())
    except projects.ProjectNotFound as error:
        if not help_only:
            print(f"error: {error}", file=sys.stderr)
            return stackfile.EXIT_ERROR
        project = None
    except ConfigError as error:
        return stackfile.report(error)
    projects.use(project)
    if project is not None:
        os.chdir(project.program.parent)  # where the Pulumi CLI runs the program
    try:
        return _dispatch(command, rest)
    finally:
        projects.use(None)


def _dispatch(command: str, rest: list[str]) -> int:
    prog = f"{PROG} {command}"
    if command == "plan":
        from . import __main__ as plan_main

        return plan_main.main(rest, prog=prog)
    if command == "verify":
        from .verify import cli

        return cli.main(rest)
    if command == "compare":
        from .compare import __main__ as compare

        return compare.main(rest, prog=prog)
    from . import diagram

    return diagram.main(rest)


def entry() -> None:
    """The console script (pyproject.toml [project.scripts])."""
    program.run(main)


if __name__ == "__main__":
    entry()
