"""Writes a comparison report into its folder: report.json, report.md and the PNG charts; then says on stderr, one
line each, what is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import charts, extras, markdown

REPORT_JSON, REPORT_MD = "report.json", "report.md"
LOGS, RESULTS = "logs", "results"


def keep_jobs_output(runs: list, run_id: str, out: Path) -> None:
    """Each side's whole job log into `out`/logs/<side>.log and its result document, where the log holds one and the
    job has not written it there itself, into `out`/results/<run>/<side>.json: a failed job's evidence stays with its
    report. Sets each run's `log_file` and `result_file` (relative to `out`)."""
    (out / LOGS).mkdir(parents=True, exist_ok=True)
    for run in runs:
        name = run.side.name
        log = Path(LOGS) / f"{name}.log"
        (out / log).write_text(run.log)
        run.log_file = str(log)
        result = Path(RESULTS) / run_id / f"{name}.json"
        if not (out / result).exists():
            document = run.job_log.result
            if document is None:
                continue
            (out / result).parent.mkdir(parents=True, exist_ok=True)
            (out / result).write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        run.result_file = str(result)


def write(report: dict, out: Path) -> list[Path]:
    """Every file of the report into `out` (created); the paths written. A chart that cannot be drawn is a problem of
    the report, not a crash: the JSON and the Markdown are written all the same."""
    out.mkdir(parents=True, exist_ok=True)
    estimating = report.get("mode") == "estimate"
    if estimating:
        from . import estimate_render
    try:
        drawn = charts.draw(report, out) if not estimating else estimate_render.draw(report, out)
    except ImportError as error:  # matplotlib missing from the environment
        drawn = []
        report["problems"].append(f"charts: not drawn: {error} ({extras.INSTALL})")
        report["complete"] = False
    written = [out / name for name in drawn]
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    render = estimate_render.render if estimating else markdown.render
    (out / REPORT_MD).write_text(render(report, drawn))
    return [out / REPORT_JSON, out / REPORT_MD, *written]


def write_or_say(report: dict, out: Path, write=write) -> int | None:
    """`write`, or, where the folder cannot take the report after all (it was checked before the run: a disk
    filled, a permission changed), one line on stderr and exit status 1."""
    try:
        write(report, out)
    except OSError as error:
        print(f"error: cannot write the report into {out}: {error.strerror or error}", file=sys.stderr)
        return 1
    return None


def say(report: dict, out: Path, stream=None) -> int:
    """The problems on stderr, one line each, and the exit status: 0 only when the report is complete."""
    stream = stream or sys.stderr
    for problem in report["problems"]:
        print(problem, file=stream)
    state = "complete" if report["complete"] else f"incomplete, {len(report['problems'])} problem(s)"
    print(f"report {state}: {out / REPORT_MD}", file=stream)
    return 0 if report["complete"] else 1
