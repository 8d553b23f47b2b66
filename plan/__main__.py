"""`python -m plan STACK [--config-file FILE] [--json]`: what `pulumi up` would create, offline.

Exit status: 0 planned, 2 invalid configuration (every problem on stderr, one per line), 1 anything else.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from components.config import ConfigError, parse_stack_config

from . import harness, render, stackfile

EXIT_INVALID = 2
EXIT_ERROR = 1


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m plan", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    parser.add_argument("--json", action="store_true", help="print only the plan JSON on stdout")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    err = Console(stderr=True, highlight=False)
    try:
        values, secret_keys = stackfile.load(args.stack, args.config_file)
        config = parse_stack_config(values, args.stack)
    except ConfigError as error:
        for problem in error.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    except stackfile.StackNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    plan = harness.run_program(args.stack, values, secret_keys)
    if args.json:
        sys.stdout.write(plan.dumps())
    else:
        console = Console(highlight=False)
        if not console.is_terminal:
            console = Console(highlight=False, width=200)
        render.print_plan(plan, config, console)
    for warning in plan.warnings:
        if args.json:
            err.print(f"warning: {warning}")
    return 0


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
