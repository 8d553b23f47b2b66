"""The console of the text outputs, and warnings wrapped for people: shared by the plan's tree and tables
(plan/preview.py), its cost section (plan/cost.py) and the diff (plan/diff.py)."""

from __future__ import annotations

import os

from rich.console import Console

OFF_TERMINAL_WIDTH = 200  # a pipe or a log: wide enough for every table of a stack, still bounded


def console() -> Console:
    """The console of the text outputs: `COLUMNS` columns where it is set (rich reads it), else the terminal's width,
    else OFF_TERMINAL_WIDTH. Tables shrink their columns and wrap their cells to fit; warnings wrap at words."""
    out = Console(highlight=False)
    if out.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return out
    return Console(highlight=False, width=OFF_TERMINAL_WIDTH)


def print_warnings(lines, console: Console) -> None:
    """`warning: ...` lines for people: each wrapped at words to the console's width, continuation lines indented."""
    from rich.text import Text

    for line in lines:
        text = Text(line)
        for i, part in enumerate(text.wrap(console, max(20, console.width - 2))):
            console.print(Text("  ") + part if i else part, soft_wrap=True, highlight=False)
