"""CI gates: options of `--diff-against` that turn a kind of change into an exit status of its own.

Exit statuses 0 (every stack diffed), 1 (an error) and 2 (an invalid configuration) are the diff's own and come first:
a gate decides the status only of a complete diff. Each gate has its own status from 3 up; when several fail, the
lowest wins. Every gate is off unless its option is given, and none changes what is printed on stdout but for a note
in the markdown comment; each problem is also one line on stderr.

- `--fail-on-risk` (3): a risky change, one that replaces or deletes a TPU node pool, the cluster or a protected
  resource.
- `--fail-on-cost-increase AMOUNT` (4): a stack whose most expensive month (every autoscaled slice and pool at its
  maximum, `review.cost`) rises by more than AMOUNT US dollars, or whose change in cost cannot be told (rates missing
  on either side): the gate fails closed.

Adding a gate is one decorated function `check(report, value) -> problems` (one line each; none: the gate passes),
`value` being what its option was given. `@gate` adds the option to `python -m plan` and its status to the exit code;
take the next free status. For example:

    @gate("--fail-on-cost-increase", 4, metavar="AMOUNT", type=float, help="...")
    def cost_increase(report: Report, limit: float) -> list[str]:
        return [f"{d.stack}: ..." for d in report.stacks if ...]

Nothing heavy is imported here: `python -m plan` reads this module to build its arguments.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .changes import Failure, Report

EXIT_RISK = 3
EXIT_COST = 4


@dataclass(frozen=True)
class Gate:
    """An option that fails the run with `exit_code` when `check` finds problems in the report."""

    option: str
    exit_code: int
    check: Callable[[Report, Any], list[str]]
    argument: dict = field(default_factory=dict)  # argparse keywords of the option

    @property
    def dest(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


GATES: list[Gate] = []


def gate(option: str, exit_code: int, **argument: Any) -> Callable:
    """Register `check` as the gate of `option`; `argument` holds its argparse keywords (only `help`: a flag)."""
    if exit_code < 3 or any(g.exit_code == exit_code or g.option == option for g in GATES):
        raise ValueError(f"gate {option}: exit status {exit_code} is the diff's own or another gate's")

    def register(check: Callable[[Report, Any], list[str]]) -> Callable[[Report, Any], list[str]]:
        keywords = {"action": "store_true", **argument} if set(argument) <= {"help"} else argument
        GATES.append(Gate(option, exit_code, check, keywords))
        return check

    return register


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every gate's option, on the parser of `python -m plan`."""
    for g in GATES:
        parser.add_argument(g.option, dest=g.dest, **g.argument)


def requested(args: argparse.Namespace) -> list[Gate]:
    """The gates whose option was given."""
    return [g for g in GATES if getattr(args, g.dest, None) not in (None, False)]


def evaluate(report: Report, args: argparse.Namespace) -> list[Failure]:
    """The requested gates that fail on this report (`Report.exit_code` puts statuses 1 and 2 first)."""
    from .changes import Failure  # here, not at the top: building the arguments imports this module alone

    failures = []
    for g in requested(args):
        problems = g.check(report, getattr(args, g.dest))
        if problems:
            failures.append(Failure(g.option, g.exit_code, problems))
    return failures


# --- the gates ------------------------------------------------------------------------------------------------------


@gate(
    "--fail-on-risk",
    EXIT_RISK,
    help=f"with --diff-against: exit {EXIT_RISK} when a change replaces or deletes a TPU node pool, the cluster or "
    "a protected resource",
)
def risky_changes(report: Report, enabled: bool) -> list[str]:
    """Every risky change: a TPU node pool, the cluster or a protected resource replaced or deleted."""
    return [f"{d.stack}: {c.op} {c.type} {c.name}" for d in report.stacks for c in d.risky]


def _amount(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of US dollars (0 or more)")
    return value


@gate(
    "--fail-on-cost-increase",
    EXIT_COST,
    metavar="AMOUNT",
    type=_amount,
    help=f"with --diff-against: exit {EXIT_COST} when a stack's monthly cost at most (autoscaled pools at their "
    "maximum) rises by more than AMOUNT US dollars, or cannot be told because rates are missing",
)
def cost_increase(report: Report, limit: float) -> list[str]:
    """Every stack whose maximum monthly cost rises by more than `limit` USD, or whose cost change is unknown."""
    from decimal import Decimal

    from .cost import describe, usd

    problems = []
    for d in report.stacks:
        delta = d.cost
        if delta is None:
            continue  # the stack could not be planned: exit 1 or 2 already
        if not delta.known:
            problems.append(
                f"{d.stack}: the cost change cannot be told, so it may exceed {usd(limit)}/month: {delta.unknown}"
            )
        elif delta.max_monthly > Decimal(str(limit)):
            problems.append(
                f"{d.stack}: the most it can cost per month rises by {usd(delta.max_monthly)}, more than "
                f"the allowed {usd(limit)} ({describe(delta)})"
            )
    return problems
