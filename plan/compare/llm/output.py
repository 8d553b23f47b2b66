"""Writes the LLM report into its folder: report.json, report.md and the PNG charts, as the serving report is
written."""

from __future__ import annotations

from pathlib import Path

from ..serving import output as serving_output
from . import charts, markdown


def write(report: dict, out: Path) -> list[Path]:
    return serving_output.write(report, out, charts, markdown)
