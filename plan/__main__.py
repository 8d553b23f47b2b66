"""`python -m plan STACK [--config-file FILE] [--json]`: what `pulumi up` would create, offline.

Also `--manifests` (the Kubernetes objects), `--diff-against REF` (what a change does, against a git revision),
`--all-stacks`, and `--policy-pack [DIR]` (the policy pack's rules over the plan). This repository's stacks, or, as
`ray-tpu-gke plan` (plan/cli.py), any Pulumi Python project's (plan/project.py). Exit status: 0 planned, 2 invalid
configuration (every problem on stderr, one per line), 1 anything else (a mandatory policy violation included); with
--diff-against, 3 and 4 for a failed gate.
"""

from __future__ import annotations

from . import program

if __name__ == "__main__":
    program.start()  # before the imports below

import argparse
import json
import sys
from pathlib import Path

from ray_tpu_gke.render import pricing
from ray_tpu_gke.resources.preflight import PreflightError
from ray_tpu_gke.spec.problems import ConfigError

from . import cost, mocks, planned, preview, stackfile, terminal
from .policy_pack import policy_engine
from .review import gates

POLICY_PACK = Path(__file__).resolve().parent.parent / "policy"  # this repository's; the wheel ships it inside


DESCRIPTION = (
    "What `pulumi up` would create, offline, with no cloud credentials: the project's program under Pulumi "
    "mocks, printed as a resource tree with the TPU capacity, GPU and CPU pools, cost and accelerator quota "
    "(--json: the plan as JSON; --manifests: the Kubernetes objects), or what a change does "
    "(--diff-against REF)."
)
EPILOG = (
    "exit status: 0 planned; 2 the configuration is invalid (every problem on stderr, one line each); 1 anything "
    "else (a failed deploy-time check, a mandatory policy violation, a revision that cannot be planned); with "
    "--diff-against, 3 a risky change under --fail-on-risk, 4 a cost increase above --fail-on-cost-increase."
)


def parse_args(argv, prog: str = "python -m plan"):
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "stack",
        nargs="?",
        help="stack name: Pulumi.<stack>.yaml in the project's stackConfigDir (this repository: stacks/)",
    )
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print only the plan JSON on stdout")
    output.add_argument(
        "--manifests", action="store_true", help="print every Kubernetes object the stack creates as a YAML stream"
    )
    parser.add_argument("--diff-against", metavar="REF", help="show what changed since git revision REF")
    parser.add_argument(
        "--all-stacks",
        action="store_true",
        help="with --diff-against: every stack of the project (this repository: stacks/)",
    )
    parser.add_argument(
        "--format", choices=("text", "markdown", "json"), default="text", help="with --diff-against: output format"
    )
    gates.add_arguments(parser)  # --fail-on-risk: each gate's option (plan/review/gates.py)
    parser.add_argument(
        "--policy-pack",
        type=Path,
        metavar="DIR",
        nargs="?",
        const=POLICY_PACK,
        help="run the policy pack's rules over the plan: the pack this package ships (DIR, as "
        "in `--policy-pack policy`, names that same pack)",
    )
    parser.add_argument(
        "--rates",
        type=Path,
        metavar="FILE",
        help="a program that configures the library itself: rates for the cost estimate, a YAML "
        "file of `rates:` entries as in a stack's ray-tpu-gke:pricing (kind, name, capacity, "
        "hourly, region; and `monthlyBudget`), for reservations and prices the table lacks",
    )
    parser.add_argument(
        "--quotas",
        type=Path,
        metavar="FILE",
        help="check the accelerator quota against this JSON of `gcloud beta quotas info list "
        "--service=compute.googleapis.com --project=P --format=json` (offline it is otherwise "
        "checked only at deploy time)",
    )
    args = parser.parse_args(argv)
    if args.stack is None and not (args.all_stacks and args.diff_against):
        parser.error("a stack is required (or --all-stacks with --diff-against)")
    if gates.requested(args) and not args.diff_against:
        parser.error(f"{gates.requested(args)[0].option} is a gate on a diff: it needs --diff-against")
    return args


def main(argv=None, prog: str = "python -m plan") -> int:
    args = parse_args(argv, prog)
    if args.diff_against:
        from . import diff

        return diff.run(args)
    quotas = None
    if args.quotas:
        try:
            quotas = mocks.load_quotas(args.quotas)
        except mocks.QuotasFileError as error:
            print(f"error: {error}", file=sys.stderr)
            return stackfile.EXIT_INVALID
    stack_files = planned.reads_stack_files()
    rates = None
    if args.rates:
        if stack_files:
            print(
                f"error: --rates is for a program that configures the library itself; this stack sets its rates "
                f"in {pricing.RATES_KEY} (docs/cost.md)",
                file=sys.stderr,
            )
            return stackfile.EXIT_INVALID
        try:
            rates = cost.read_rates(args.rates)
        except ConfigError as error:
            return stackfile.report(error)
    try:  # the chosen project's program; a library program's config is what it registered (plan/planned.py)
        found = planned.load(args.stack, args.config_file, quotas=quotas, quotas_source=str(args.quotas or ""))
    except (ConfigError, stackfile.StackNotFound) as error:  # the stack file, or a rule the program checks
        return stackfile.report(error)
    except PreflightError as error:  # a deploy-time check, against the offline plan's answers (plan/mocks.py)
        quota = args.quotas and str(error).startswith("quota ")
        answered = f"quotas from {args.quotas}" if quota else mocks.VERSIONS_NOTE
        print(f"error: deploy-time check failed: {error} ({answered})", file=sys.stderr)
        return stackfile.EXIT_ERROR
    plan, config = found.ran, found.config
    cost_result = None
    if not args.manifests:  # the plan JSON's `cost` (plan/cost.py); a library program's at what it registered
        if stack_files:
            cost_result = cost.attach(plan, config)
        else:
            from . import inventory

            cost_result = inventory.cost(found.inventory, rates)
            plan.cost = cost_result.json
    if args.json:
        from . import version_set

        sys.stdout.write(json.dumps(version_set.attach(plan, config, found.inventory), indent=2, sort_keys=True) + "\n")
    elif args.manifests:
        sys.stdout.write(preview.manifests_yaml(plan))
    else:
        console = terminal.console()
        preview.print_plan(plan, config, console, cost_result, found.inventory)
    for note in plan.notes:  # what the offline answers were (plan/mocks.py), never mistaken for the project's
        if args.json or args.manifests:
            print(f"note: {note}", file=sys.stderr)
        else:
            console.print(f"note: {note}", highlight=False, markup=False)
    if args.json or args.manifests:
        stackfile.print_warnings(plan.warnings)
    if args.json and cost_result:
        # A missing rate does not stop the plan: it is reported, and the cost gate and budget rule fail closed.
        stackfile.print_warnings(cost_result.warnings)
    if args.policy_pack:
        engine = policy_engine()
        return engine.report(plan.to_json(), args.stack, sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    program.run(main)
