"""Writes the LLM report into its folder: report.json, report.md and the PNG charts."""

from __future__ import annotations

import json
from pathlib import Path

from ..serving.output import REPORT_JSON, REPORT_MD
from . import charts, markdown


def write(report: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    try:
        drawn = charts.draw(report, out)
    except ImportError as error:  # matplotlib missing
        drawn = []
        report["problems"].append(f"charts: not drawn: {error} (pip install -r requirements.txt)")
        report["complete"] = False
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    (out / REPORT_MD).write_text(markdown.render(report, drawn))
    return [out / REPORT_JSON, out / REPORT_MD, *(out / name for name in drawn)]
