"""One measurement in a fresh interpreter: `python -m benchmarks.measure real N [--plan-out FILE]` plans a synthetic
stack of N slices; `python -m benchmarks.measure floor FILE` registers the resources of that plan bare (floor.py).

Both import the same modules before the clock starts, so the time is the program run alone (registration, the mocks
and the plan recording), never interpreter start-up or imports. Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR_PROGRAM = Path(__file__).resolve().parent / "floor_program.py"
STACK = "bench"

# The SDK modules the program uses. pulumi_gcp and pulumi_kubernetes load submodules on first attribute access, which
# takes seconds; touching one class of each here keeps that out of both timings alike.
SDK_CLASSES = (
    ("pulumi_gcp.compute", "Network"),
    ("pulumi_gcp.container", "NodePool"),
    ("pulumi_gcp.storage", "Bucket"),
    ("pulumi_gcp.serviceaccount", "Account"),
    ("pulumi_gcp.projects", "IAMMember"),
    ("pulumi_kubernetes.core.v1", "Namespace"),
    ("pulumi_kubernetes.meta.v1", "ObjectMetaArgs"),
    ("pulumi_kubernetes.apiextensions", "CustomResource"),
    ("pulumi_kubernetes", "Provider"),
)


def warm_imports() -> None:
    """Import what either program needs, identically for both."""
    for module, name in SDK_CLASSES:
        getattr(importlib.import_module(module), name)
    for module in ("plan.harness", "ray_tpu_gke.resources.platform", "ray_tpu_gke.spec.stack", "benchmarks.floor",
                   "benchmarks.synthetic"):
        importlib.import_module(module)


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _time_monitor(monitor_class) -> list[float]:
    """Add up the time spent in the mock monitor (recording and mocks), for both programs alike."""
    total = [0.0]
    for name in ("RegisterResource", "RegisterResourceOutputs"):
        method = getattr(monitor_class, name)

        def timed(self, request, _method=method):
            start = time.perf_counter()
            try:
                return _method(self, request)
            finally:
                total[0] += time.perf_counter() - start

        setattr(monitor_class, name, timed)
    return total


def measure(program: str, slices: int | None = None, plan_file: Path | None = None,
            plan_out: Path | None = None) -> dict:
    """Run the real program for `slices`, or the floor for the plan in `plan_file`, once; the clock covers the run."""
    from benchmarks import floor, synthetic
    from plan import harness

    if program == "real":
        values = synthetic.values(slices)
        path = None
    else:
        spec = json.loads(plan_file.read_text())
        floor.CALLS, floor.OUTPUTS = floor.prepare(spec)
        values = {"gcp:project": synthetic.PROJECT}
        slices = spec.get("slices")
        path = FLOOR_PROGRAM
        del spec
    monitor_seconds = _time_monitor(harness.RecordingMonitor)
    gc.collect()
    modules_before = len(sys.modules)
    rss_before = _rss_kib()
    start, cpu_start = time.perf_counter(), time.process_time()
    plan = harness.run_program(STACK, values, program=path)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if plan_out is not None:
        document = plan.to_json()
        document["slices"] = slices
        plan_out.write_text(json.dumps(document))
    return {
        "program": program,
        "slices": slices,
        "resources": len(plan.steps),
        "seconds": seconds,
        # CPU time of this process: on a shared machine, less swayed by the other tenants than wall-clock seconds.
        "cpu_seconds": cpu_seconds,
        "monitor_seconds": monitor_seconds[0],
        "peak_rss_mib": peak / 1024,
        "rss_before_mib": rss_before / 1024,
        "modules_imported_during_run": len(sys.modules) - modules_before,
        "warnings": len(plan.warnings),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.measure")
    sub = parser.add_subparsers(dest="program", required=True)
    real = sub.add_parser("real", help="plan a synthetic stack of N slices")
    real.add_argument("slices", type=int)
    real.add_argument("--plan-out", type=Path, help="write the plan JSON here (the floor's input)")
    bare = sub.add_parser("floor", help="register the resources of a plan with no logic (the SDK floor)")
    bare.add_argument("plan", type=Path)
    args = parser.parse_args(argv)
    warm_imports()
    if args.program == "real":
        result = measure("real", slices=args.slices, plan_out=args.plan_out)
    else:
        result = measure("floor", plan_file=args.plan)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    # As plan/__main__.py: the inline executor nests one synchronous wait per registration.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
