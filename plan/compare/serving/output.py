"""Writes the serving report into its folder: report.json, report.md and the PNG charts."""

from __future__ import annotations

import json
from pathlib import Path

from .. import extras
from . import charts, markdown

REPORT_JSON, REPORT_MD = "report.json", "report.md"


def write(report: dict, out: Path, drawing=charts, rendering=markdown) -> list[Path]:
    """The report, its markdown (`rendering.render`) and its charts (`drawing.draw`): the serving comparison's, or
    another's of the same form (the LLM comparison's, plan/compare/llm/output.py)."""
    out.mkdir(parents=True, exist_ok=True)
    try:
        drawn = drawing.draw(report, out)
    except ImportError as error:  # matplotlib missing
        drawn = []
        report["problems"].append(f"charts: not drawn: {error} ({extras.INSTALL})")
        report["complete"] = False
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    (out / REPORT_MD).write_text(rendering.render(report, drawn))
    return [out / REPORT_JSON, out / REPORT_MD, *(out / name for name in drawn)]
