"""The change model: what a change does to each resource of a stack, and its JSON.

A `Report` is one run: a `StackDiff` per stack, each a list of `Change`s (`create`, `update`, `replace` or `delete`
of one resource, with the changed inputs as `Detail`s), the count of unchanged resources, the TPU capacity the
change adds and removes and its cost delta (`review.cost`). `to_json` gives the `--format json` output;
`classify.compare` fills a `StackDiff`, and `gates.evaluate` the gates a `Report` fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stackfile import EXIT_ERROR, EXIT_INVALID
from .capacity import Capacity, of_changes
from .change import OPS, Change, Detail
from .consequences import Consequences, of_diff
from .cost import CostDelta
from .cost import delta as cost_delta
from .replacement import NODE_POOL
from .revisions import Side
from .stranded import Stranded, of_sides


@dataclass
class StackDiff:
    stack: str
    ref: str
    commit: str
    old: Side
    new: Side
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    outputs: list[Detail] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        for side, where in ((self.old, f"at {self.ref}"), (self.new, "in the working tree")):
            if not side.ok:
                kind = "the configuration is invalid" if side.status == "invalid" else "planning failed"
                return f"cannot plan stack {self.stack} {where}: {kind} (exit {side.exit_code})\n{side.message}"
        return None

    @property
    def counts(self) -> dict[str, int]:
        return {op: sum(1 for c in self.changes if c.op == op) for op in OPS}

    @property
    def risky(self) -> list[Change]:
        return [c for c in self.changes if c.risky]

    @property
    def capacity(self) -> Capacity:
        """The TPU chips and hosts the change adds and removes, per slice."""
        return of_changes(self.changes)

    @property
    def cost(self) -> CostDelta | None:
        """What the change does to the stack's cost, per slice and pool (None: a side could not be planned)."""
        return cost_delta(self.old, self.new, self.ref, self.changes)

    @property
    def consequences(self) -> Consequences:
        """A budget the change breaks, the reservation capacity it needs, names it contradicts (review.consequences)."""
        if self.error:
            return Consequences()
        changed = {c.name for c in self.changes if c.type == NODE_POOL and c.op in ("create", "update", "replace")}
        return of_diff(self.old.plan, self.new.plan, self.stack, changed)

    @property
    def stranded(self) -> list[Stranded]:
        """What the working tree provisions that no Ray worker group uses (the plan's `cost.items[].stranded`)."""
        return of_sides(self.old, self.new)

    def to_json(self) -> dict:
        out = {
            "stack": self.stack,
            "changes": [c.to_json() for c in self.changes],
            "against": self.ref,
            "commit": self.commit,
            "summary": {**self.counts, "same": self.unchanged},
            "risky": len(self.risky),
            "capacity": self.capacity.to_json(),
        }
        stranded = self.stranded
        if stranded:
            out["stranded"] = [s.to_json() for s in stranded]
        cost = self.cost
        if cost is not None:
            out["cost"] = cost.to_json()
        consequences = self.consequences
        if consequences:
            out["consequences"] = consequences.to_json()
        if self.outputs:
            out["outputs"] = [d.to_json() for d in self.outputs]
        if self.old.status == "absent":
            out["note"] = f"stack {self.stack} does not exist at {self.ref}: everything is created"
        elif self.new.status == "absent":
            out["note"] = f"stack {self.stack} is removed in the working tree: everything is deleted"
        if self.error:
            out["error"] = self.error
        return out


def summary_line(diff: StackDiff) -> str:
    """`2 to create, 1 to replace (28 unchanged)`, or `no changes (N unchanged)`."""
    counts = diff.counts
    parts = [f"{counts[op]} to {op}" for op in OPS if counts[op]]
    return ", ".join(parts) + f" ({diff.unchanged} unchanged)" if parts else f"no changes ({diff.unchanged} unchanged)"


@dataclass(frozen=True)
class Failure:
    """A gate that failed: its option, its exit status and what made it fail, one line each."""

    option: str
    exit_code: int
    problems: list[str]


@dataclass
class Report:
    """One run: every stack diffed against REF (its resolved `commit`)."""

    ref: str
    commit: str
    stacks: list[StackDiff]
    error: str | None = None  # a failure before any stack could be planned (REF unknown, no git)
    failed_gates: list[Failure] = field(default_factory=list)  # filled by gates.evaluate

    @property
    def exit_code(self) -> int:
        """1 or 2 where a stack could not be diffed; else the lowest status of a failed gate; else 0."""
        if self.error:
            return EXIT_ERROR
        if any(s.new.status == "invalid" for s in self.stacks):
            return EXIT_INVALID
        if any(s.error for s in self.stacks):
            return EXIT_ERROR
        return min((g.exit_code for g in self.failed_gates), default=0)

    def to_json(self) -> dict:
        out = {"against": self.ref, "commit": self.commit, "stacks": [s.to_json() for s in self.stacks]}
        if self.error:
            out["error"] = self.error
        return out
