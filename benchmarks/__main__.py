"""`python -m benchmarks [--json] [--sizes 1,16,64,256,512] [--repeat N] [--lanes test,test-ray] [--skip-tests]
[--skip-hostile] [--check]`

Plans synthetic stacks of many TPU slices (benchmarks/synthetic.py) and, in the same run, the SDK floor: the same
resources registered by a bare program under the same mocks (benchmarks/floor.py). Each measurement runs in a fresh
interpreter; the best of the repeats counts. Also times hostile stack files (benchmarks/hostile.py) and the test
lanes as `make test` and `make test-ray` run them (benchmarks/lanes.py). Prints a table, or with --json one JSON
document, and checks the targets of docs/benchmarks.md. Exit status 0; with --check, 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from ray_tpu_gke.spec.config import parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError

from . import hostile, lanes, synthetic

ROOT = Path(__file__).resolve().parent.parent
# Past 200 node pools GKE warns of slower autoscaling (rule gke-node-pools-autoscaling-latency), it does not refuse:
# the sizes of issue 20 again, its 1.1x target at 256 slices.
DEFAULT_SIZES = (1, 16, 64, 256, 512)
# Targets (issues 8 and 20): the whole offline plan at most this many times the SDK floor, from this many slices on
# (the limit of the largest size listed at or below a stack's); the time per resource at the largest size within
# this factor of the time per resource at 64 slices. The test lanes' budgets: benchmarks/lanes.py.
MAX_RATIOS = {64: 1.2, 256: 1.1}
LINEARITY_BASE_SLICES = 64
MAX_LINEARITY = 1.5


def repeats_for(slices: int, repeat: int | None) -> int:
    if repeat is not None:
        return repeat
    return 2 if slices >= 512 else 3


def _run(args: list[str]) -> dict:
    command = [sys.executable, "-m", "benchmarks.measure", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_size(slices: int, repeat: int, workdir: Path, progress) -> dict:
    """Real plan and floor `repeat` times each, alternating, in fresh interpreters; the best time of each."""
    values = synthetic.values(slices)
    start = time.perf_counter()
    parse_stack_config(values, "bench")  # a synthetic stack is valid, or the benchmark is wrong
    validate_seconds = time.perf_counter() - start
    plan_file = workdir / f"plan-{slices}.json"
    real_runs, floor_runs = [], []
    for attempt in range(repeat):
        real_runs.append(_run(["real", str(slices)] + (["--plan-out", str(plan_file)] if attempt == 0 else [])))
        floor_runs.append(_run(["floor", str(plan_file)]))
        progress(f"  {slices} slices, run {attempt + 1}/{repeat}: plan {real_runs[-1]['seconds']:.3f} s, "
                 f"floor {floor_runs[-1]['seconds']:.3f} s")
    counts = {r["resources"] for r in real_runs} | {r["resources"] for r in floor_runs}
    if len(counts) != 1:
        raise RuntimeError(f"{slices} slices: runs registered {sorted(counts)} resources; did the program change "
                           "during the benchmark?")
    real = min(real_runs, key=lambda r: r["seconds"])
    bare = min(floor_runs, key=lambda r: r["seconds"])
    real_cpu = min(r["cpu_seconds"] for r in real_runs)
    bare_cpu = min(r["cpu_seconds"] for r in floor_runs)
    return {
        "slices": slices,
        "resources": real["resources"],
        "repeats": repeat,
        "validate_seconds": validate_seconds,
        "seconds": real["seconds"],
        "floor_seconds": bare["seconds"],
        "ratio": real["seconds"] / bare["seconds"],
        "cpu_seconds": real_cpu,
        "floor_cpu_seconds": bare_cpu,
        "cpu_ratio": real_cpu / bare_cpu,
        "monitor_seconds": real["monitor_seconds"],
        "floor_monitor_seconds": bare["monitor_seconds"],
        "ms_per_resource": 1000 * real["seconds"] / real["resources"],
        "floor_ms_per_resource": 1000 * bare["seconds"] / bare["resources"],
        "peak_rss_mib": max(r["peak_rss_mib"] for r in real_runs),
        "floor_peak_rss_mib": max(r["peak_rss_mib"] for r in floor_runs),
        "rss_growth_mib": max(r["peak_rss_mib"] - r["rss_before_mib"] for r in real_runs),
        "floor_rss_growth_mib": max(r["peak_rss_mib"] - r["rss_before_mib"] for r in floor_runs),
        "all_seconds": [r["seconds"] for r in real_runs],
        "all_floor_seconds": [r["seconds"] for r in floor_runs],
        "all_cpu_seconds": [r["cpu_seconds"] for r in real_runs],
        "all_floor_cpu_seconds": [r["cpu_seconds"] for r in floor_runs],
    }


def max_ratio(slices: int) -> float | None:
    """The floor ratio a stack of this many slices must stay within, or None below the smallest size listed."""
    listed = [size for size in MAX_RATIOS if size <= slices]
    return MAX_RATIOS[max(listed)] if listed else None


def check_targets(results: list[dict], lane_runs: list[dict] | None = None,
                  hostile_inputs: dict | None = None) -> list[dict]:
    targets = [{
        "target": "every size plans",
        "met": all(r.get("resources", 0) > 0 for r in results),
        "detail": ", ".join(f"{r['slices']}: {r['resources']} resources" if "resources" in r
                            else f"{r['slices']}: refused ({r['refused']})" for r in results),
    }]
    results = [r for r in results if "resources" in r]  # the timed ones
    by_size = {r["slices"]: r for r in results}
    base = by_size.get(LINEARITY_BASE_SLICES)
    largest = max(results, key=lambda r: r["slices"], default=None)
    if base is not None and largest["slices"] > base["slices"]:
        growth = largest["ms_per_resource"] / base["ms_per_resource"]
        targets.append({
            "target": f"time grows linearly: time per resource at {largest['slices']} slices at most "
                      f"{MAX_LINEARITY}x that at {LINEARITY_BASE_SLICES}",
            "met": growth <= MAX_LINEARITY,
            "detail": f"{largest['ms_per_resource']:.2f} ms vs {base['ms_per_resource']:.2f} ms: {growth:.2f}x",
        })
    for size, limit in sorted(MAX_RATIOS.items()):
        bounded = [r for r in results if max_ratio(r["slices"]) == limit]
        targets.append({
            "target": f"from {size} slices on, plan at most {limit}x the SDK floor",
            "met": bool(bounded) and all(r["ratio"] <= limit for r in bounded),
            "detail": ", ".join(f"{r['slices']}: {r['ratio']:.2f}x" for r in bounded) or "no size measured",
        })
    targets += lanes.targets(lane_runs or [])
    if hostile_inputs is not None:
        targets += hostile.targets(hostile_inputs)
    return targets


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    mem_kib = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                    if line.startswith("MemTotal:")), 0)
    versions = {}
    for package in ("pulumi", "pulumi-gcp", "pulumi-kubernetes", "protobuf", "pydantic"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cpu": cpu,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 ** 2, 1),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "packages": versions,
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def render_table(report: dict) -> str:
    head = ("slices", "resources", "plan s", "floor s", "ratio", "CPU ratio", "ms/res", "floor ms/res", "mocks s",
            "validate s", "peak MiB", "floor peak MiB")
    rows = [(str(r["slices"]), str(r["resources"]), f"{r['seconds']:.3f}", f"{r['floor_seconds']:.3f}",
             f"{r['ratio']:.2f}", f"{r['cpu_ratio']:.2f}", f"{r['ms_per_resource']:.2f}",
             f"{r['floor_ms_per_resource']:.2f}",
             f"{r['monitor_seconds']:.3f}", f"{r['validate_seconds']:.3f}", f"{r['peak_rss_mib']:.0f}",
             f"{r['floor_peak_rss_mib']:.0f}") for r in report["results"] if "resources" in r]
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    m = report["machine"]
    out = [f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Python {m['python']}, "
           + ", ".join(f"{k} {v}" for k, v in m["packages"].items()),
           "Seconds: the program run alone, best of the repeats, each in a fresh interpreter (start-up and imports "
           "excluded from both). CPU ratio: the same with the processes' CPU seconds. mocks s: of the plan's "
           "seconds, those in the recording mock monitor. validate s: "
           "parse_stack_config alone. Peak: max RSS of the process.", "",
           line(head), line(["-" * w for w in widths]), *map(line, rows), ""]
    if report.get("hostile") is not None:
        out += [*hostile.render(report["hostile"]), ""]
    for target in report["targets"]:
        out.append(f"[{'PASS' if target['met'] else 'FAIL'}] {target['target']}: {target['detail']}")
    out.append(f"Total benchmark time: {report['total_seconds']:.0f} s")
    return "\n".join(out) + "\n"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="comma-separated slice counts (default: %(default)s)")
    parser.add_argument("--repeat", type=int, help="runs per size and program (default: 3, 2 from 512 slices)")
    parser.add_argument("--lanes", default=",".join(lanes.BUDGETS_S),
                        help="comma-separated test lanes to time, each a Makefile target (default: %(default)s)")
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test lanes")
    parser.add_argument("--skip-hostile", action="store_true", help="do not time the hostile stack files")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes: comma-separated whole numbers, not {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 1:
        parser.error("--sizes: at least one size, each at least 1")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat: at least 1")
    args.lanes = [lane.strip() for lane in args.lanes.split(",") if lane.strip()]
    unknown = [lane for lane in args.lanes if lane not in lanes.BUDGETS_S]
    if unknown or not args.lanes:
        parser.error(f"--lanes: {', '.join(unknown) or 'none given'}; allowed: {', '.join(lanes.BUDGETS_S)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    progress = (lambda text: print(text, file=sys.stderr, flush=True))  # noqa: E731
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="ray-tpu-gke-bench-") as workdir:
        for slices in args.sizes:
            try:
                results.append(measure_size(slices, repeats_for(slices, args.repeat), Path(workdir), progress))
            except ConfigError as error:  # the product refuses the stack: reported, and the size's targets missed
                problem = str(error.problems[0]) if error.problems else str(error)
                progress(f"  {slices} slices: the synthetic stack is refused: {problem}")
                results.append({"slices": slices, "refused": problem})
    hostile_inputs = None
    if not args.skip_hostile:
        progress("  timing hostile stack files")
        hostile_inputs = hostile.measure()
    lane_runs = [] if args.skip_tests else [lanes.time_lane(lane, progress) for lane in args.lanes]
    report = {
        "machine": machine(),
        "timing": "program run only, best of repeats, fresh interpreter per run, imports excluded from both",
        "results": results,
        "hostile": hostile_inputs,
        "lanes": lane_runs,
        "targets": check_targets(results, lane_runs, hostile_inputs),
        "total_seconds": time.perf_counter() - start,
    }
    sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.json else render_table(report))
    return 1 if args.check and not all(t["met"] for t in report["targets"]) else 0


if __name__ == "__main__":
    sys.exit(main())
