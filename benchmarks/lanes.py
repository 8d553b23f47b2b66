"""The two test lanes timed as a contributor runs them (`make test`, `make test-ray`), against their budgets, with what
it takes to compare runs across machines and hours: the CPU time the whole machine was busy during the run and the
CPU time of a fixed pure-Python loop before and after it (the same virtual machine's speed moves by more than a
quarter within the hour and up to threefold between days: docs/benchmarks.md, "Test lanes").

Each lane runs through the Makefile, the one declaration of what it runs; the virtual environments it needs are built
first, untimed (`make test-tools`), so that the time is the warm lane's.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
# Budgets of the warm lanes on a two-core machine with nothing else running (docs/benchmarks.md, "Test lanes"): the
# unit lane after every change, the local Ray scenarios before a merge.
BUDGETS_S = {"test": 120.0, "test-ray": 300.0}
# The reference loop as a module's top-level code, its names global, as the figures of docs/benchmarks.md, "Test lanes"
# were taken: 1.4 to 1.9 CPU-s on the machine of the budgets (inside a function, with local names, it runs about twice
# as fast).
REFERENCE_LOOP = compile("total = 0\nfor i in range(20_000_000):\n    total += i * i\n", "<reference loop>", "exec")


def reference_loop_s() -> float:
    """CPU seconds of a fixed pure-Python loop in this process: how fast this machine runs Python right now."""
    start = time.process_time()
    exec(REFERENCE_LOOP, {})
    return time.process_time() - start


def busy_cpu_s(stat: Optional[str] = None) -> Optional[float]:
    """CPU seconds the machine has spent busy since boot, every CPU summed: /proc/stat's first line without its idle
    and iowait columns (proc(5)). None where there is no /proc/stat."""
    if stat is None:
        try:
            stat = Path("/proc/stat").read_text()
        except OSError:
            return None
    fields = stat.splitlines()[0].split()
    if fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def command(target: str) -> list[str]:
    return ["make", "--no-print-directory", target]


def summary(output: str) -> str:
    """pytest's closing line (`66 passed in 301.2s`), else the output's last line."""
    lines = [line.strip("= ") for line in output.strip().splitlines() if line.strip()]
    closing = [line for line in lines if " in " in line and ("passed" in line or "failed" in line)]
    return (closing or lines or [""])[-1]


def time_lane(lane: str, progress: Callable[[str], None]) -> dict:
    """One warm run of the lane: wall seconds, busy CPU seconds, exit status, pytest's summary, the loop around it."""
    built = subprocess.run(command("test-tools"), cwd=ROOT, capture_output=True, text=True)
    if built.returncode != 0:
        return {
            "lane": lane,
            "command": " ".join(command(lane)),
            "exit_status": built.returncode,
            "summary": f"make test-tools failed: {summary(built.stdout + built.stderr)}",
            "seconds": None,
            "busy_cpu_seconds": None,
            "reference_loop_s": [],
        }
    loop_before = reference_loop_s()
    progress(f"  timing `{' '.join(command(lane))}` (reference loop {loop_before:.2f} s)")
    busy, start = busy_cpu_s(), time.perf_counter()
    done = subprocess.run(command(lane), cwd=ROOT, capture_output=True, text=True)
    seconds, busy_after = time.perf_counter() - start, busy_cpu_s()
    return {
        "lane": lane,
        "command": " ".join(command(lane)),
        "exit_status": done.returncode,
        "summary": summary(done.stdout + done.stderr),
        "seconds": seconds,
        "busy_cpu_seconds": None if busy is None or busy_after is None else busy_after - busy,
        "reference_loop_s": [loop_before, reference_loop_s()],
    }


def targets(runs: list[dict]) -> list[dict]:
    return [
        {
            "target": f"`make {run['lane']}` passes warm within {BUDGETS_S[run['lane']]:.0f} s",
            "met": run["exit_status"] == 0 and run["seconds"] is not None and run["seconds"] <= BUDGETS_S[run["lane"]],
            "detail": describe(run),
        }
        for run in runs
    ]


def describe(run: dict) -> str:
    if run["seconds"] is None:
        return run["summary"]
    parts = [f"{run['seconds']:.0f} s", run["summary"]]
    if run["busy_cpu_seconds"] is not None:
        parts.append(f"machine busy {run['busy_cpu_seconds']:.0f} CPU-s")
    parts.append("reference loop " + ", ".join(f"{s:.2f} s" for s in run["reference_loop_s"]))
    return "; ".join(parts)
