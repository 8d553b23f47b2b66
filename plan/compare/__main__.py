"""`python -m plan.compare STACK --context CTX [--kubeconfig FILE] [--inject-failure STEP] [--out DIR]` runs the
stack's comparison jobs (its RayJobs on a TPU slice or a GPU pool) once each on the live cluster and reports them side
by side; `--local` runs them on a local Ray cluster on this machine instead, CPU standing in for both (`make compare`);
`--estimate` runs nothing and says what each side's job would take and cost at an MFU range; `--dry-run` prints what a
live run would create and its cost ceiling.

Writes report.json, report.md and PNG charts into DIR (default compare-report/ in the current folder). Exit status: 0
when both sides finished, every measure was obtained and the sides agree; 1 otherwise (one line per missing measure
or failed condition on stderr, and the partial report written; or one line naming the optional `compare` extra a run
lacks, plan/compare/extras.py); 2 when the configuration or the arguments are invalid (one line).
"""

from __future__ import annotations

from .. import program

if __name__ == "__main__":
    program.start()  # before the imports below

import dataclasses
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from ray_tpu_gke import ConfigError, admission

from .. import arguments, cost, inventory, planned, stackfile
from . import dryrun, estimate, extras, local, output, registered, report, sides
from .llm import cli as llm_cli
from .serving import cli as serving_cli

DEFAULT_OUT = Path("compare-report")  # in the current folder: `make compare` runs at the repository's root
LIVE_TIMEOUT_S = 3600.0


def parse_args(argv, prog: str = "python -m plan.compare"):
    parser = arguments.OneLineParser(
        prog=prog,
        description=(
            "The stack's comparison jobs (TPU slice and GPU pool) run once each, measured and reported side by side."
        ),
    )
    parser.add_argument(
        "stack",
        help="stack name: stacks/Pulumi.<stack>.yaml here; with ray-tpu-gke, the project's "
        "Pulumi.<stack>.yaml (a stack file, or a program that uses the library)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--context", help="the kubeconfig context of the stack's live cluster")
    where.add_argument("--local", action="store_true", help="run both sides on a local Ray cluster, simulated")
    where.add_argument(
        "--estimate",
        action="store_true",
        help="no run: each side's step time, job time and cost at an MFU range, from the job's FLOPs "
        "per step and the plan's prices (docs/compare.md, Before any hardware)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the RayJobs a live run creates, the quota each side needs and its cost ceiling "
        "(price x --timeout), and exit 0; creates nothing",
    )
    parser.add_argument(
        "--sides",
        metavar="NAME,...",
        help="the sides to run, by RayJob name (default: the TPU sides and the stack's first GPU "
        "side; --estimate: every side)",
    )
    parser.add_argument(
        "--mfu",
        action="append",
        metavar="[SIDE=]LO,HI",
        help=f"--estimate: the MFU range, fractions (default {estimate.DEFAULT_MFU}); SIDE=LO,HI for one side "
        "(repeatable), LO,HI for every side not named",
    )
    parser.add_argument(
        "--model",
        metavar="parameters=N[,layers=L,dModel=D,heads=H,seqLen=S,batch=B]",
        help="--estimate: the model whose memory fit each side gets (and whose analytic FLOPs stand in where the "
        "job declares none); default: the model the --measured job declared",
    )
    parser.add_argument(
        "--flops-per-step",
        type=arguments.FLOPS,
        metavar="F",
        help="--estimate: model FLOPs of one training step, every device's share (default: the "
        "job's own flopsPerStep from --measured)",
    )
    parser.add_argument(
        "--tokens-per-step",
        type=arguments.AT_LEAST_ONE,
        metavar="T",
        help="--estimate: tokens one training step takes in (default: the job's tokensPerStep)",
    )
    parser.add_argument(
        "--measured",
        type=Path,
        metavar="FILE",
        help="--estimate: a report.json of an earlier comparison (make compare) or a job's result "
        f"document to take flopsPerStep from (default {DEFAULT_OUT / 'report.json'}); the "
        "estimate goes to ./compare-estimate unless --out says otherwise",
    )
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: kubectl's)")
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    parser.add_argument(
        "--inject-failure",
        metavar="STEP",
        help="delete one worker pod (locally: remove a node) of each side when it reports this step, "
        f"and measure the recovery (default: none live, {local.DEFAULT_INJECT_STEP} locally; "
        "0: none); with --local also SIDE=STEP,... per side (a side left out: none)",
    )
    parser.add_argument(
        "--entrypoint",
        action="append",
        default=[],
        metavar="SIDE=CMD",
        help="run CMD as SIDE's job instead of the stack's RayJob entrypoint (repeatable): a job that "
        'reports through ray_tpu_gke.bench (docs/compare.md "Bring your own job")',
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the report (default ./compare-report)")
    parser.add_argument(
        "--timeout",
        type=arguments.POSITIVE,
        help="seconds the live jobs may take, scale-up from zero included "
        f"(default {LIVE_TIMEOUT_S:.0f}"
        "); locally, each side (default 600)",
    )
    parser.add_argument(
        "--poll", type=arguments.NOT_NEGATIVE, default=10, help="seconds between live status reads (default 10)"
    )
    parser.add_argument(
        "--wait-for-removal",
        type=arguments.NOT_NEGATIVE,
        default=0,
        metavar="S",
        help="after the jobs end, watch their nodes up to S seconds so that the cost ends at their "
        "removal (default 0: nodes still up are billed until the collection, and said so)",
    )
    parser.add_argument("--keep-jobs", action="store_true", help="leave the comparison RayJobs in place (live)")
    parser.add_argument("--run", help="run id (default <stack>-<UTC yyyymmddHHMMSS>)")
    parser.add_argument("--seed", type=int, default=0, help="seed of both sides (data, init, evaluation batch)")
    parser.add_argument(
        "--tolerance",
        type=arguments.NOT_NEGATIVE,
        default=report.DEFAULT_TOLERANCE,
        help=f"largest relative difference at which the sides agree (default {report.DEFAULT_TOLERANCE})",
    )
    parser.add_argument(
        "--steps",
        type=arguments.AT_LEAST_ONE,
        help=f"--local: training steps per side (default "
        f"{local.DEFAULT_STEPS}; live runs use the stack's own); "
        "--estimate: the job's length (default: its entrypoint's --steps)",
    )
    parser.add_argument(
        "--report-every",
        type=arguments.AT_LEAST_ONE,
        help=f"--local: checkpoint cadence (default {local.DEFAULT_REPORT_EVERY})",
    )
    serving_cli.add_arguments(parser)
    llm_cli.add_arguments(parser)
    args = parser.parse_args(argv)
    args.inject_failure, args.inject_by_side = _injection(parser, args.inject_failure, args.local)
    args.entrypoints = _entrypoints(parser, args.entrypoint)
    if not (args.context or args.local or args.estimate or args.dry_run or (args.llm and args.target)):
        parser.error("one of --context, --local, --estimate or --dry-run is required (or, with --llm, --target)")
    if args.llm and (args.serve or args.estimate):
        parser.error("--llm is a comparison of its own; it is not for --serve or --estimate")
    if args.dry_run and (args.local or args.estimate):
        parser.error("--dry-run shows a live run; it is not for --local or --estimate")
    if not (args.local or args.estimate) and (args.steps is not None or args.report_every is not None):
        parser.error(
            "--steps and --report-every are for --local (and --steps for --estimate); a live run uses the "
            "stack's own entrypoint"
        )
    if args.estimate and args.report_every is not None:
        parser.error("--report-every is for --local")
    try:
        args.mfu_range, args.mfu_by_side = estimate.parse_mfu_args(args.mfu)
    except ValueError as error:
        parser.error(f"argument --mfu: {error}")
    try:
        args.model = None if args.model is None else estimate.parse_model(args.model)
    except ValueError as error:
        parser.error(f"argument --model: {args.model!r} is not allowed; {error}")
    if (args.inject_failure or 0) < 0:
        parser.error(f"argument --inject-failure: {args.inject_failure} is not allowed; allowed: a step of at least 0")
    why = arguments.unwritable_folder(args.out)
    if why and not args.dry_run:
        parser.error(f"argument --out: {str(args.out)!r} cannot hold the report: {why}")
    return args


def _injection(parser, value: Optional[str], is_local: bool) -> tuple[Optional[int], Optional[dict[str, int]]]:
    """--inject-failure STEP (every side) or, locally, SIDE=STEP,... (those sides only)."""
    if value is None:
        return None, None
    if "=" not in value:
        try:
            return int(value), None
        except ValueError:
            parser.error(f"--inject-failure {value!r}: a step number, or SIDE=STEP,... with --local")
    if not is_local:
        parser.error("--inject-failure SIDE=STEP is for --local; a live run injects at one step on every side")
    out = {}
    for part in value.split(","):
        side, _, step = part.partition("=")
        if not side.strip() or not step.strip().isdigit():
            parser.error(f"--inject-failure {value!r}: {part!r} is not SIDE=STEP")
        out[side.strip()] = int(step)
    return None, out


def _entrypoints(parser, values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        side, _, command = value.partition("=")
        if not side.strip() or not command.strip():
            parser.error(f"--entrypoint {value!r}: expected SIDE=COMMAND, e.g. bench-gpu='python my_job.py'")
        try:
            admission.check_entrypoint(command)  # a stack's RayJob entrypoint's check: the job runs it the same way
        except ValueError as error:
            parser.error(f"--entrypoint {value!r}: the command {error}")
        out[side.strip()] = command.strip()
    return out


def with_entrypoints(found: list, entrypoints: dict[str, str]) -> list:
    """The sides with their job's command replaced where --entrypoint names them; an unknown side is an error."""
    unknown = sorted(set(entrypoints) - {s.name for s in found})
    if unknown:
        raise sides.SideError(
            f"--entrypoint names {', '.join(unknown)}, not a side of this stack; its sides: "
            f"{', '.join(s.name for s in found)}"
        )
    return [dataclasses.replace(s, entrypoint=entrypoints[s.name]) if s.name in entrypoints else s for s in found]


def load_plan(stack: str, config_file=None) -> tuple[dict, dict]:
    """The stack's offline plan as `python -m plan STACK --json` prints it (its `cost` included) and the config values
    its sides are read from: a stack file's own, or what a program of its own registered (plan/planned.py,
    registered.py)."""
    found = planned.load(stack, config_file)
    if found.inventory is None:
        cost.attach(found.ran, found.config)
        return found.ran.to_json(), found.values
    found.ran.cost = inventory.cost(found.inventory).json
    return found.ran.to_json(), registered.values(found.inventory)


def default_run(stack: str, now: float) -> str:
    return f"{stack}-{datetime.fromtimestamp(now, tz=timezone.utc).strftime('%Y%m%d%H%M%S')}"


def _prices(plan: dict) -> dict:
    c = plan.get("cost") or {}
    return {
        "currency": c.get("currency"),
        "region": c.get("region"),
        "oldestAsOf": c.get("oldestAsOf"),
        "rates": c.get("rates", []),
    }


def main(
    argv=None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    prog: str = "python -m plan.compare",
) -> int:
    args = parse_args(argv, prog)
    lacking = extras.missing(args, prog + (" --llm" if args.llm else " --serve" if args.serve else ""))
    if lacking:
        print(f"error: {lacking}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    try:
        plan, values = load_plan(args.stack, args.config_file)
        if args.llm:  # the LLM comparison: the stack's Ray Serve LLM services (or --target endpoints), in tokens
            return llm_cli.main(
                args, plan, values, args.run or default_run(args.stack, clock()), local.workloads_python
            )
        if args.serve:  # the serving comparison: the stack's RayServices, not its RayJobs
            return serving_cli.main(
                args, plan, values, args.run or default_run(args.stack, clock()), local.workloads_python
            )
        found = with_entrypoints(sides.sides(plan, values), args.entrypoints)
    except (ConfigError, stackfile.StackNotFound) as error:
        return stackfile.report(error)
    except sides.SideError as error:
        print(f"error: {error}", file=sys.stderr)
        return stackfile.EXIT_INVALID
    lacking = None if planned.reads_stack_files() else registered.missing(plan.get("project", ""), values, found)
    if lacking:
        print(f"error: {lacking}", file=sys.stderr)
        return stackfile.EXIT_INVALID
    if not found:
        print(
            f"error: stack {args.stack} has no RayJob whose worker group runs on a TPU slice or a GPU pool: nothing "
            "to compare",
            file=sys.stderr,
        )
        return stackfile.EXIT_INVALID
    try:
        chosen = sides.select(found, args.sides)
    except sides.SideError as error:
        print(f"error: {error}", file=sys.stderr)
        return stackfile.EXIT_INVALID
    if args.estimate:
        return estimate.main(args, plan, chosen, DEFAULT_OUT)
    found = chosen if args.sides else sides.default_run_sides(found)  # a dry run shows what this run would create
    run_id = args.run or default_run(args.stack, clock())
    if args.dry_run:
        return dryrun.main(plan, found, run_id, args.seed, args.timeout or LIVE_TIMEOUT_S)
    facts = None
    if args.local:
        inject = local.DEFAULT_INJECT_STEP if args.inject_failure is None else (args.inject_failure or None)
        if args.inject_by_side is not None:
            unknown = sorted(set(args.inject_by_side) - {s.name for s in found})
            if unknown:
                print(f"error: --inject-failure names {', '.join(unknown)}, not a side of this stack", file=sys.stderr)
                return stackfile.EXIT_INVALID
            inject = {s.name: args.inject_by_side.get(s.name) or None for s in found}
        try:
            runs, collected, facts = local.run(
                found,
                run_id,
                steps=args.steps or local.DEFAULT_STEPS,
                report_every=args.report_every or local.DEFAULT_REPORT_EVERY,
                inject_step=inject,
                seed=args.seed,
                side_timeout=args.timeout or local.SIDE_TIMEOUT_S,
                results=args.out / output.RESULTS,
            )
        except local.LocalError as error:
            print(f"error: {error}", file=sys.stderr)
            return stackfile.EXIT_ERROR
        context = None
    else:
        from ..verify.kubectl import Kubectl, KubectlError
        from . import live

        try:
            runs, collected = live.collect(
                Kubectl(args.context, args.kubeconfig),
                found,
                run_id,
                seed=args.seed,
                inject_step=args.inject_failure or None,
                timeout=args.timeout or LIVE_TIMEOUT_S,
                poll=args.poll,
                wait_for_removal=args.wait_for_removal,
                keep_jobs=args.keep_jobs,
                clock=clock,
                sleep=sleep,
            )
        except KubectlError as error:
            print(f"error: cannot follow the jobs on the cluster: {error}", file=sys.stderr)
            return stackfile.EXIT_ERROR
        context = args.context
    output.keep_jobs_output(runs, run_id, args.out)  # every job's log and result document stay with the report
    document = report.build(
        args.stack,
        "local" if args.local else "live",
        run_id,
        runs,
        collected,
        tolerance=args.tolerance,
        context=context,
        prices=_prices(plan),
    )
    if facts is not None:
        document["localRun"] = facts  # the local Ray cluster's start time, the jobs' folder and interpreter
    failed = output.write_or_say(document, args.out)
    if failed is not None:
        return failed
    return output.say(document, args.out)


if __name__ == "__main__":
    program.run(main)
