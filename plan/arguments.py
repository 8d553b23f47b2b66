"""What the command lines share about their arguments: numbers that must be finite and in range, an output folder
that can be written, and a parser whose every refusal is one line.

`float("nan")`, `float("inf")` and `float("-1e999")` all parse, and every comparison with NaN is false, so a check
such as `value <= 0` lets NaN through; these types refuse anything that is not a finite number in range, naming the
flag (argparse adds it), the value and what is allowed.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Callable


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusals are one line on stderr, exit 2 (argparse's own status for them): the usage it
    would print first is what `--help` shows."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (--help lists the options)\n")


def number(minimum: float = 0.0, *, above: bool = True, whole: bool = False) -> Callable[[str], float]:
    """An argparse `type`: a finite number above `minimum` (`above`) or at least it; a whole number with `whole`."""
    kind = "a whole number" if whole else "a finite number"
    bound = f"above {minimum:g}" if above else f"of at least {minimum:g}"
    allowed = f"{kind} {bound}"

    def parse(text: str):
        try:  # a whole number too large for a float would overflow the arithmetic it goes into
            value = int(text) if whole else float(text)
            finite = math.isfinite(float(value))
        except (ValueError, OverflowError):
            value, finite = math.nan, False
        if not finite or value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"{text!r} is not allowed; allowed: {allowed}")
        return value

    parse.__name__ = allowed  # what argparse would name in a message of its own
    return parse


POSITIVE = number(0.0)  # seconds, a latency objective: above zero
NOT_NEGATIVE = number(0.0, above=False)  # a wait or a tolerance that may be zero
AT_LEAST_ONE = number(1, above=False, whole=True)  # steps, a cadence, tokens
# A count of FLOPs, written as a float (6e15). Below one, a step's time underflows to zero and every rate divides by it.
FLOPS = number(1, above=False)


def positive_number(value: object) -> bool:
    """A JSON value that is a finite number above zero (never a boolean, which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def unwritable_folder(folder: Path) -> str | None:
    """Why a report could not be written into `folder` (created where missing), or None: checked before a run spends
    an hour, never creating anything. The nearest existing folder on its path must be a folder this user may write;
    a file on the way (`/dev/null/x`) can hold nothing."""
    path = Path(os.path.join(os.getcwd(), folder))
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                return f"{part} is not a folder"
            if not os.access(part, os.W_OK | os.X_OK):
                return f"{part} is not writable"
            return None
        if part.is_symlink():  # a dangling link: mkdir cannot go through it
            return f"{part} is a link to nothing"
    return None
