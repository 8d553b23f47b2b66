"""`python -m plan.compare STACK --serve (--local | --context CTX)`: the serving comparison's flags and its run.
`plan/compare/__main__.py` adds the flags (`add_arguments`) and hands over to `main`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

import httpx

from . import load, local, output, patterns, report, services

DEFAULT_OUT = Path("compare-serve-report")
# Local defaults: short enough for `make compare-serve` on two cores; steady and the burst's low steps below what one
# replica answers at target_ongoing_requests 1 even on a busy machine, the high step above it (each request generates
# LOCAL_TOKENS model steps), so that Serve adds a replica at the step and not before it.
LOCAL_DEFAULTS = {"steady_rps": 2.0, "steady_s": 8.0, "burst_rps": "2,20", "burst_s": "3,12,3", "sparse_requests": 2}
LIVE_DEFAULTS = {"steady_rps": 10.0, "steady_s": 60.0, "burst_rps": "5,60", "burst_s": "30,120,60",
                 "sparse_requests": 3}
# Generation steps per request (workloads.serve_bench: `tokens`). Locally more: one step on this CPU is fast, and the
# burst's high step must keep more than target_ongoing_requests (1) in flight on one replica for Serve to add one.
DEFAULT_TOKENS, LOCAL_TOKENS = 128, 512
FEATURES = 16  # workloads.model.FEATURES: the inputs one row of a request carries
ROWS = 4


def add_arguments(parser) -> None:
    group = parser.add_argument_group("serving (--serve)")
    group.add_argument("--serve", action="store_true",
                       help="run the stack's serving pair (RayServices on a TPU slice and a GPU pool) under load")
    group.add_argument("--patterns", default=",".join(patterns.NAMES),
                       help="traffic patterns, in order (default steady,burst,sparse)")
    group.add_argument("--slo-ms", type=float, default=report.DEFAULT_SLO_MS,
                       help="latency objective (p95, ms) for the highest rate held "
                            f"(default {report.DEFAULT_SLO_MS:g})")
    group.add_argument("--steady-rps", type=float, help="steady: requests per second")
    group.add_argument("--steady-s", type=float, help="steady: seconds")
    group.add_argument("--burst-rps", help="burst: LOW,HIGH requests per second")
    group.add_argument("--burst-s", help="burst: seconds at LOW, at HIGH, and at LOW again (A,B,C)")
    group.add_argument("--sparse-requests", type=int, help="sparse: single requests")
    group.add_argument("--sparse-gap-s", type=float,
                       help="sparse: idle seconds before each (default: longer than the downscale delay and the "
                            "node's idle timeout)")
    group.add_argument("--request-timeout-s", type=float, default=load.DEFAULT_TIMEOUT_S,
                       help=f"a request's timeout (default {load.DEFAULT_TIMEOUT_S:g})")
    group.add_argument("--tokens", type=int,
                       help="generation steps per request of the default application (default "
                            f"{DEFAULT_TOKENS}, locally {LOCAL_TOKENS})")


def _floats(text: str, count: int, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count:
        raise patterns.PatternError(f"{flag}: {text!r} is not allowed; allowed: {count} numbers joined by commas")
    return values


def build_patterns(args, sides: list[services.ServiceSide]) -> list[patterns.Pattern]:
    defaults = LOCAL_DEFAULTS if args.local else LIVE_DEFAULTS
    pick = {key: getattr(args, key) if getattr(args, key) is not None else value for key, value in defaults.items()}
    downscale = max((local.LOCAL_AUTOSCALING["downscale_delay_s"] if args.local else
                     s.autoscaling.get("downscale_delay_s", 600.0)) for s in sides)  # Serve's default: 600 s
    gap = args.sparse_gap_s
    if gap is None:
        idle = max((s.idle_timeout_s or 60.0) for s in sides)
        gap = local.sparse_gap_s() if args.local else downscale * 2 + idle + 60  # + Serve's 30 s look-back
    built = {"steady": lambda: patterns.steady(pick["steady_rps"], pick["steady_s"]),
             "burst": lambda: patterns.burst(*_floats(pick["burst_rps"], 2, "--burst-rps"),
                                             *_floats(pick["burst_s"], 3, "--burst-s")),
             "sparse": lambda: patterns.sparse(pick["sparse_requests"], gap, downscale)}
    return [built[name]() for name in patterns.parse_names(args.patterns)]


def request_body(tokens: int) -> dict:
    """What every request asks: ROWS rows of FEATURES inputs, generated for `tokens` steps (fixed: the same on both
    sides and in every run)."""
    return {"inputs": [[round((r + 1) * 0.1 - c * 0.01, 3) for c in range(FEATURES)] for r in range(ROWS)],
            "tokens": tokens}


def cost_ceiling(sides: list[services.ServiceSide], chosen: list[patterns.Pattern]) -> dict:
    """The most a live run can cost in accelerators: every side's worker nodes at the groups' maximum for the whole
    run (the head's start and the first request's wait at their timeouts, every pattern, and the nodes' idle timeout
    after), at the plan's prices."""
    from . import drive

    hours = (drive.APP_TIMEOUT_S + drive.COLD_TIMEOUT_S + sum(p.duration_s for p in chosen)
             + max((s.idle_timeout_s or 60.0) for s in sides)) / 3600
    usd = sum(s.max_nodes * (s.node_hourly or 0.0) * hours for s in sides)
    return {"usd": round(usd, 2), "hoursPerSide": round(hours, 3),
            "basis": "; ".join(f"{s.name}: {s.max_nodes} node(s) x ${s.node_hourly or 0:,.2f}/hour" for s in sides)
            + f", {hours:.2f} h each at most"}


def dry_run(sides: list[services.ServiceSide], run_id: str, ceiling: dict) -> int:
    import yaml

    for side in sides:
        print(yaml.safe_dump(services.run_manifest(side, run_id), sort_keys=False), end="---\n")
    print(f"# cost ceiling: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
    return 0


def main(args, plan: dict, values: dict, run_id: str, workloads_python: Callable[[], str],
         say=lambda m: print(f"compare-serve: {m}", file=sys.stderr, flush=True)) -> int:
    try:
        sides = services.services(plan, values)
    except services.ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not sides:
        print(f"error: stack {args.stack} has no RayService whose worker group runs on a TPU slice or a GPU pool: "
              "nothing to serve", file=sys.stderr)
        return 2
    try:
        chosen = build_patterns(args, sides)
    except patterns.PatternError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = args.out if args.out != Path("compare-report") else DEFAULT_OUT
    body = request_body(args.tokens or (LOCAL_TOKENS if args.local else DEFAULT_TOKENS))
    started = time.time()
    if args.local:
        try:
            seen, facts = local.run(sides, chosen, body, workloads_python(), timeout_s=args.request_timeout_s,
                                    say=say)
        except RuntimeError as error:  # local.LocalError, or no workloads interpreter
            print(f"error: {error}", file=sys.stderr)
            return 1
        except httpx.HTTPError as error:
            print(f"error: the local cluster's Serve REST API did not answer: {type(error).__name__}: {error}",
                  file=sys.stderr)
            return 1
        facts["wallS"] = round(time.time() - started, 1)
        context = None
    else:
        ceiling = cost_ceiling(sides, chosen)
        if getattr(args, "dry_run", False):  # --dry-run (the training comparison's flag): what a run creates
            return dry_run(sides, run_id, ceiling)
        from ...verify.kubectl import Kubectl, KubectlError
        from . import live

        say(f"cost ceiling of this run: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
        try:
            seen = live.collect(Kubectl(args.context, args.kubeconfig), sides, run_id, chosen, body,
                                timeout_s=args.request_timeout_s, say=say)
        except KubectlError as error:
            print(f"error: cannot run the services on the cluster: {error}", file=sys.stderr)
            return 1
        facts, context = {"costCeiling": ceiling, "wallS": round(time.time() - started, 1)}, args.context
    document = report.build(args.stack, "local" if args.local else "live", run_id, sides, seen, chosen,
                            slo_ms=args.slo_ms, context=context, facts=facts)
    output.write(document, out)
    for problem in document["problems"]:
        print(problem, file=sys.stderr)
    state = "complete" if document["complete"] else f"incomplete, {len(document['problems'])} problem(s)"
    print(f"report {state}: {out / output.REPORT_MD}", file=sys.stderr)
    return 0 if document["complete"] else 1
