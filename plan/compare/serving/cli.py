"""`python -m plan.compare STACK --serve (--local | --context CTX)`: the serving comparison's flags and its run.
`plan/compare/__main__.py` adds the flags (`add_arguments`) and hands over to `main`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

from ... import arguments
from .. import output as training_output
from . import load, local, output, patterns, report, services

DEFAULT_OUT = Path("compare-serve-report")
# Local defaults: short enough for `make compare-serve` on two cores; steady and the burst's low steps below what one
# replica answers at target_ongoing_requests 1 on a busy machine with both sides at once, and busy enough that Serve
# keeps that replica (at 1 request/s, 85 ms each, Serve read it idle and scaled a side to zero before the burst), the
# high step above it (each request generates DEFAULT_TOKENS model steps), so that Serve adds a replica at the step and
# not before it; one sparse request (each costs an idle gap and a start from zero).
LOCAL_DEFAULTS = {"steady_rps": 2.0, "steady_s": 5.0, "burst_rps": "2,10", "burst_s": "2,12,2", "sparse_requests": 1}
LIVE_DEFAULTS = {
    "steady_rps": 10.0,
    "steady_s": 60.0,
    "burst_rps": "5,60",
    "burst_s": "30,120,60",
    "sparse_requests": 3,
}
# Greedy tokens generated per request (workloads.serve_bench: `generate`; 0 asks for scoring), live and locally: on
# this CPU the `tiny` preset's 128 steps keep one request near a tenth of a second, so that steady's 2 requests/s
# stay within one replica and the burst's 20 keep more than target_ongoing_requests (1) in flight on one replica.
DEFAULT_TOKENS = 128
# What every request sends: PROMPTS sequences of PROMPT_LENGTH token ids, below 128 and no longer than 32, the smallest
# vocabulary and context of workloads.lm's presets (`tiny`), so that any preset's replica takes them.
PROMPTS, PROMPT_LENGTH = 4, 16


def add_arguments(parser) -> None:
    group = parser.add_argument_group("serving (--serve)")
    group.add_argument(
        "--serve",
        action="store_true",
        help="run the stack's serving pair (RayServices on a TPU slice and a GPU pool) under load",
    )
    group.add_argument(
        "--patterns", default=",".join(patterns.NAMES), help="traffic patterns, in order (default steady,burst,sparse)"
    )
    group.add_argument(
        "--slo-ms",
        type=arguments.POSITIVE,
        default=report.DEFAULT_SLO_MS,
        help=f"latency objective (p95, ms) for the highest rate held (default {report.DEFAULT_SLO_MS:g})",
    )
    group.add_argument("--steady-rps", type=arguments.POSITIVE, help="steady: requests per second")
    group.add_argument("--steady-s", type=arguments.POSITIVE, help="steady: seconds")
    group.add_argument("--burst-rps", help="burst: LOW,HIGH requests per second")
    group.add_argument("--burst-s", help="burst: seconds at LOW, at HIGH, and at LOW again (A,B,C)")
    group.add_argument("--sparse-requests", type=arguments.AT_LEAST_ONE, help="sparse: single requests")
    group.add_argument(
        "--sparse-gap-s",
        type=arguments.POSITIVE,
        help="sparse: idle seconds before each (default: longer than the downscale delay and the node's idle timeout)",
    )
    group.add_argument(
        "--request-timeout-s",
        type=arguments.POSITIVE,
        default=load.DEFAULT_TIMEOUT_S,
        help=f"a request's timeout (default {load.DEFAULT_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--local-autoscaling",
        metavar="KEY=VALUE,...",
        default="",
        help="--local only: Serve autoscaling instead of the rehearsal's, e.g. downscale_delay_s=300 (keys: "
        + ", ".join(local.OVERRIDABLE)
        + ")",
    )
    group.add_argument(
        "--tokens",
        type=int,  # checked with the patterns (request_body), as each pattern flag
        help="greedy tokens each request of the default application generates, 0 for scoring (the "
        f"sequences' log-likelihood) (default {DEFAULT_TOKENS})",
    )


def _floats(text: str, count: int, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count:
        raise patterns.PatternError(f"{flag}: {text!r} is not allowed; allowed: {count} numbers joined by commas")
    return values


def local_overrides(args) -> dict:
    try:
        return local.parse_autoscaling(getattr(args, "local_autoscaling", "") or "")
    except ValueError as error:
        raise patterns.PatternError(str(error)) from None


def build_patterns(args, sides: list[services.ServiceSide]) -> list[patterns.Pattern]:
    defaults = LOCAL_DEFAULTS if args.local else LIVE_DEFAULTS
    pick = {key: getattr(args, key) if getattr(args, key) is not None else value for key, value in defaults.items()}
    delays = [local.autoscaling(local_overrides(args)) if args.local else s.autoscaling for s in sides]
    downscale = max(d.get("downscale_delay_s", 600.0) for d in delays)  # Serve's default: 600 s
    # The delay before the last replica goes (Ray 2.55 serve/config.py AutoscalingConfig: downscale_to_zero_delay_s,
    # downscale_delay_s where unset): a sparse gap shorter than it never meets zero replicas.
    to_zero = max(d.get("downscale_to_zero_delay_s") or d.get("downscale_delay_s", 600.0) for d in delays)
    gap = args.sparse_gap_s
    if gap is None:
        idle = max((s.idle_timeout_s or 60.0) for s in sides)
        gap = local.sparse_gap_s(delays[0]) if args.local else downscale * 2 + idle + 60  # + Serve's 30 s look-back
    built = {
        "steady": lambda: patterns.steady(pick["steady_rps"], pick["steady_s"]),
        "burst": lambda: patterns.burst(
            *_floats(pick["burst_rps"], 2, "--burst-rps"), *_floats(pick["burst_s"], 3, "--burst-s")
        ),
        "sparse": lambda: patterns.sparse(pick["sparse_requests"], gap, to_zero),
    }
    return [built[name]() for name in patterns.parse_names(args.patterns)]


def request_body(tokens: int) -> dict:
    """What every request asks: PROMPTS token sequences, scored (`tokens` 0) or each continued by `tokens` greedy
    tokens; fixed, the same on both sides and in every run."""
    if tokens < 0:
        raise patterns.PatternError(f"--tokens: {tokens} is not allowed; allowed: a whole number of at least 0")
    return {
        "sequences": [[(7 * row + 3 * i + 1) % 128 for i in range(PROMPT_LENGTH)] for row in range(PROMPTS)],
        "generate": tokens,
    }


def cost_ceiling(sides: list[services.ServiceSide], chosen: list[patterns.Pattern]) -> dict:
    """The most a live run can cost in accelerators: every side's worker nodes at the groups' maximum for the whole
    run (the head's start and the first request's wait at their timeouts, every pattern, and the nodes' idle timeout
    after), at the plan's prices."""
    from . import drive

    hours = (
        drive.APP_TIMEOUT_S
        + drive.COLD_TIMEOUT_S
        + sum(p.duration_s for p in chosen)
        + max((s.idle_timeout_s or 60.0) for s in sides)
    ) / 3600
    usd = sum(s.max_nodes * (s.node_hourly or 0.0) * hours for s in sides)
    return {
        "usd": round(usd, 2),
        "hoursPerSide": round(hours, 3),
        "basis": "; ".join(f"{s.name}: {s.max_nodes} node(s) x ${s.node_hourly or 0:,.2f}/hour" for s in sides)
        + f", {hours:.2f} h each at most",
    }


def dry_run(sides: list[services.ServiceSide], run_id: str, ceiling: dict) -> int:
    import yaml

    for side in sides:
        print(yaml.safe_dump(services.run_manifest(side, run_id), sort_keys=False), end="---\n")
    print(f"# cost ceiling: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
    return 0


def main(
    args,
    plan: dict,
    values: dict,
    run_id: str,
    workloads_python: Callable[[], str],
    say=lambda m: print(f"compare-serve: {m}", file=sys.stderr, flush=True),
) -> int:
    try:
        # the LLM services (Ray Serve LLM's OpenAI app) are the LLM comparison's (--llm), not driven with this body
        sides = services.services(plan, values)
    except services.ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not sides:
        print(
            f"error: stack {args.stack} has no RayService whose worker group runs on a TPU slice or a GPU pool: "
            "nothing to serve",
            file=sys.stderr,
        )
        return 2
    try:
        chosen = build_patterns(args, sides)
        body = request_body(DEFAULT_TOKENS if args.tokens is None else args.tokens)
    except patterns.PatternError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = args.out if args.out != Path("compare-report") else DEFAULT_OUT
    started = time.time()
    if args.local:
        import httpx  # the compare extra: its absence is said before the run (plan/compare/extras.py)

        try:
            seen, facts = local.run(
                sides,
                chosen,
                body,
                workloads_python(),
                timeout_s=args.request_timeout_s,
                autoscaling_overrides=local_overrides(args),
                say=say,
            )
        except RuntimeError as error:  # local.LocalError, or no workloads interpreter
            print(f"error: {error}", file=sys.stderr)
            return 1
        except httpx.HTTPError as error:
            print(
                f"error: the local cluster's Serve REST API did not answer: {type(error).__name__}: {error}",
                file=sys.stderr,
            )
            return 1
        facts.update({"request": body, "wallS": round(time.time() - started, 1)})
        context = None
    else:
        ceiling = cost_ceiling(sides, chosen)
        if getattr(args, "dry_run", False):  # --dry-run (the training comparison's flag): what a run creates
            return dry_run(sides, run_id, ceiling)
        from ...verify.kubectl import Kubectl, KubectlError
        from . import live

        say(f"cost ceiling of this run: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
        try:
            seen = live.collect(
                Kubectl(args.context, args.kubeconfig),
                sides,
                run_id,
                chosen,
                body,
                timeout_s=args.request_timeout_s,
                say=say,
            )
        except KubectlError as error:
            print(f"error: cannot run the services on the cluster: {error}", file=sys.stderr)
            return 1
        facts = {"costCeiling": ceiling, "request": body, "wallS": round(time.time() - started, 1)}
        context = args.context
    document = report.build(
        args.stack,
        "local" if args.local else "live",
        run_id,
        sides,
        seen,
        chosen,
        slo_ms=args.slo_ms,
        context=context,
        facts=facts,
    )
    failed = training_output.write_or_say(document, out, output.write)
    if failed is not None:
        return failed
    for problem in document["problems"]:
        print(problem, file=sys.stderr)
    state = "complete" if document["complete"] else f"incomplete, {len(document['problems'])} problem(s)"
    print(f"report {state}: {out / output.REPORT_MD}", file=sys.stderr)
    return 0 if document["complete"] else 1
