"""`python -m plan.compare STACK --llm (--local | --context CTX | --target SIDE=URL ...)`: the LLM comparison's flags
and its run. `plan/compare/__main__.py` adds the flags (`add_arguments`) and hands over to `main`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from ..serving import output as serving_output
from ..serving.patterns import PatternError
from ..serving.services import ServiceError, ServiceSide
from . import drive, metrics, output, prompts, report, shapes, sides
from . import local as llm_local

DEFAULT_OUT = Path("compare-llm-report")
DEFAULT_SHAPES = "sparse,burst,poisson,sweep"  # burst before the sweep: its step meets one replica, not the sweep's
# Local defaults: `make compare-llm` in about 3 minutes on two cores, both sides at once. One stand-in replica answers
# about 2 requests a second (llm/local.py STAND_IN_STEP_S, 24 tokens each): the burst's low rate within it, its high
# step three times it, so that requests queue and Serve adds a replica.
LOCAL: dict[str, Any] = {
    "rate": 2.0,
    "seconds": 6.0,
    "sweep_rates": "1,3,6",
    "sweep_seconds": 4.0,
    "burst_rates": "1,6",
    "burst_s": "2,6,2",
    "input_len": 16,
    "output_len": 24,
    "prompts": 32,
    "timeout": 60.0,
}
LIVE: dict[str, Any] = {
    "rate": 4.0,
    "seconds": 120.0,
    "sweep_rates": "1,2,4,8,16",
    "sweep_seconds": 60.0,
    "burst_rates": "2,20",
    "burst_s": "60,180,60",
    "input_len": 512,
    "output_len": 128,
    "prompts": 256,
    "timeout": 300.0,
}


def add_arguments(parser) -> None:
    g = parser.add_argument_group("LLM serving (--llm)")
    g.add_argument(
        "--llm",
        action="store_true",
        help="measure the stack's LLM services (Ray Serve LLM) in tokens: TTFT, TPOT, ITL, goodput, cost "
        "per million tokens",
    )
    g.add_argument("--llm-shapes", default=DEFAULT_SHAPES, help=f"load shapes, in order (default {DEFAULT_SHAPES})")
    g.add_argument(
        "--slo",
        default=report.DEFAULT_SLO,
        help=f"goodput's objective, vllm bench serve's keys ttft, tpot, e2el (default {report.DEFAULT_SLO})",
    )
    g.add_argument("--llm-rate", type=float, help="poisson: mean requests per second")
    g.add_argument("--llm-seconds", type=float, help="poisson: seconds")
    g.add_argument("--sweep-rates", help="sweep: rates in increasing order, e.g. 1,2,4,8")
    g.add_argument("--sweep-seconds", type=float, help="sweep: seconds at each rate")
    g.add_argument("--llm-burst-rates", help="burst: LOW,HIGH mean requests per second")
    g.add_argument("--llm-burst-s", help="burst: seconds at LOW, at HIGH, at LOW again (A,B,C)")
    g.add_argument("--input-len", type=int, help="prompt length in words (vllm bench serve's random dataset)")
    g.add_argument("--output-len", type=int, help="output tokens asked for (max_tokens, with ignore_eos)")
    g.add_argument("--len-range", type=float, default=0.5, help="lengths uniform within ±this share (default 0.5)")
    g.add_argument("--prompts", type=int, help="distinct prompts (request i sends prompt i modulo this)")
    g.add_argument(
        "--api", choices=sorted(prompts.PATHS), default="completions", help="OpenAI API (default completions)"
    )
    g.add_argument("--agree-tokens", type=int, default=16, help="agreement: first N tokens compared (default 16)")
    g.add_argument("--agree-prompts", type=int, default=8, help="agreement: prompts decoded on each side (default 8)")
    g.add_argument("--llm-timeout-s", type=float, help="a streamed request's timeout")
    g.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="SIDE=URL",
        help="measure an OpenAI-compatible endpoint as SIDE (repeatable); a side of the stack by its name "
        "keeps its price",
    )
    g.add_argument("--llm-sides", metavar="NAME,...", help="the stack's LLM RayServices to run (default: all)")
    g.add_argument("--load-image", help="live: the image of the in-cluster load Job (default: the side's own image)")


def _floats(text: str, flag: str, count: Optional[int] = None) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or (count is not None and len(values) != count):
        raise PatternError(f"{flag}: {text!r} is not allowed; allowed: {count or 'some'} numbers joined by commas")
    return values


def build_shapes(args, found: list[ServiceSide], local: bool) -> list[shapes.Shape]:
    d = LOCAL if local else LIVE
    pick = lambda key, flag: getattr(args, key) if getattr(args, key) is not None else d[flag]  # noqa: E731
    names = shapes.parse_names(args.llm_shapes)
    seed = args.seed
    built = []
    for i, name in enumerate(names):
        if name == "poisson":
            built.append(shapes.poisson(pick("llm_rate", "rate"), pick("llm_seconds", "seconds"), seed))
        elif name == "sweep":
            rates = _floats(pick("sweep_rates", "sweep_rates"), "--sweep-rates")
            built.append(shapes.sweep(rates, pick("sweep_seconds", "sweep_seconds"), seed))
        elif name == "burst":
            low, high = _floats(pick("llm_burst_rates", "burst_rates"), "--llm-burst-rates", 2)
            low_s, high_s, after_s = _floats(pick("llm_burst_s", "burst_s"), "--llm-burst-s", 3)
            built.append(shapes.burst(low, high, low_s, high_s, after_s, seed))
        else:
            built.append(_sparse(args, found, local, after_load=i > 0))
    return built


def _sparse(args, found: list[ServiceSide], local: bool, after_load: bool) -> shapes.Shape:
    requests = args.sparse_requests or 1
    if local:
        delay = llm_local.LOCAL_AUTOSCALING["downscale_to_zero_delay_s"]
        gap = args.sparse_gap_s or llm_local.sparse_gap_s(after_load)
    else:  # Serve's defaults: 600 s down, and to zero after it (AutoscalingConfig, Ray 2.55)
        delay = max((sides.autoscaling(s).get("downscale_delay_s", 600.0) for s in found), default=600.0)
        idle = max(((s.idle_timeout_s or 60.0) for s in found), default=60.0)
        gap = args.sparse_gap_s or delay * 2 + idle + 60
    return shapes.sparse(requests, gap, delay)


def _load(args, found: list[ServiceSide], local: bool) -> tuple[drive.LlmLoad, prompts.PromptSet]:
    d = LOCAL if local else LIVE
    chosen = prompts.prompt_set(
        args.input_len or d["input_len"],
        args.output_len or d["output_len"],
        args.len_range,
        args.seed,
        args.prompts or d["prompts"],
    )
    if args.agree_tokens < 1 or args.agree_prompts < 1:
        raise PatternError("--agree-tokens and --agree-prompts: at least 1")
    return drive.LlmLoad(
        chosen.prompts(), args.api, args.agree_prompts, args.agree_tokens, {s.name: sides.model_id(s) for s in found}
    ), chosen


def _chosen_sides(plan: dict, values: dict, names: Optional[str]) -> list[ServiceSide]:
    found = sides.llm_sides(plan, values)
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {s.name for s in found})
        if unknown:
            raise ServiceError(
                f"--llm-sides: {', '.join(unknown)} is not an LLM RayService of this stack; its LLM "
                f"RayServices: {', '.join(s.name for s in found) or 'none'}"
            )
        found = [s for s in found if s.name in wanted]
    return found


def main(
    args,
    plan: dict,
    values: dict,
    run_id: str,
    workloads_python: Callable[[], str],
    say=lambda m: print(f"compare-llm: {m}", file=sys.stderr, flush=True),
) -> int:
    try:
        found = _chosen_sides(plan, values, args.llm_sides)
        targets = sides.parse_targets(args.target, found)
    except (ServiceError, sides.TargetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if targets and (args.local or getattr(args, "dry_run", False)):
        print(
            "error: --target measures endpoints of your own at once; it is not for --local or --dry-run",
            file=sys.stderr,
        )
        return 2
    if not found and not targets:
        print(
            f"error: stack {args.stack} has no RayService whose application is Ray Serve LLM "
            f"({sides.LLM_IMPORT_PATH}) on a TPU slice or a GPU pool, and no --target was given: nothing to measure",
            file=sys.stderr,
        )
        return 2
    try:
        slo = metrics.parse_slo(args.slo)
        chosen = build_shapes(args, found, args.local)
        load, prompt_set = _load(args, found, args.local)
    except PatternError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    timeout = args.llm_timeout_s or (LOCAL if args.local else LIVE)["timeout"]
    out = args.out if args.out != Path("compare-report") else DEFAULT_OUT
    started = time.time()
    context, mode = None, "local" if args.local else "target" if targets else "live"
    if args.local:
        import httpx  # the compare extra: its absence is said before the run (plan/compare/extras.py)

        cache = llm_local.new_cache_dir()
        load.settle = llm_local.settler(found)
        try:
            seen, facts = llm_local.serving_local.run(
                found, chosen, load, workloads_python(), timeout_s=timeout, say=say, app=llm_local.local_app(cache)
            )
        except RuntimeError as error:  # local.LocalError, or no workloads interpreter
            print(f"error: {error}", file=sys.stderr)
            return 1
        except httpx.HTTPError as error:
            print(f"error: the local cluster's Serve did not answer: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
        facts.update({"compileCacheDir": cache, "wallS": round(time.time() - started, 1)})
        named: list[tuple[str, Optional[ServiceSide]]] = [(s.name, s) for s in found]
    elif targets:
        from . import targets as target_run

        seen = target_run.collect(targets, chosen, load, timeout_s=timeout, say=say)
        facts = {"targets": {t.name: t.url for t in targets}, "wallS": round(time.time() - started, 1)}
        named = [(t.name, t.side) for t in targets]
    else:
        from ...verify.kubectl import KubectlError
        from . import live
        from .accelerators import Monitoring

        ceiling = live.cost_ceiling(found, chosen)
        if getattr(args, "dry_run", False):
            return live.dry_run(found, run_id, ceiling, chosen, load, timeout, args.load_image)
        say(f"cost ceiling of this run: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
        cluster = values.get("ray-tpu-gke:cluster") or {}
        monitoring = Monitoring(str(values.get("gcp:project") or ""), str(cluster.get("name") or ""))
        try:
            seen = live.collect(args, found, run_id, chosen, load, timeout_s=timeout, say=say, monitoring=monitoring)
        except (live.LiveError, KubectlError) as error:
            print(f"error: cannot run the services on the cluster: {error}", file=sys.stderr)
            return 1
        facts = {"costCeiling": ceiling, "wallS": round(time.time() - started, 1)}
        context, named = args.context, [(s.name, s) for s in found]
    document = report.build(
        args.stack,
        mode,
        run_id,
        named,
        seen,
        chosen,
        slo_ms=slo,
        plan=plan,
        prompts=prompt_set.params(),
        agree_tokens=load.agree_tokens,
        context=context,
        facts=facts,
    )
    output.write(document, out)
    for problem in document["problems"]:
        print(problem, file=sys.stderr)
    state = "complete" if document["complete"] else f"incomplete, {len(document['problems'])} problem(s)"
    print(f"report {state}: {out / serving_output.REPORT_MD}", file=sys.stderr)
    return 0 if document["complete"] else 1
