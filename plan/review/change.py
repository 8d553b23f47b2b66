"""One resource's change: its operation (`create`, `update`, `replace` or `delete`), the changed inputs as `Detail`s,
and whether it is risky. `classify.compare` makes them; `changes.StackDiff` holds a stack's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .paths import ABSENT

if TYPE_CHECKING:
    from .tpu import PoolSize


@dataclass
class Detail:
    path: str
    old: Any
    new: Any
    replaces: bool = False

    def to_json(self) -> dict:
        out: dict = {"path": self.path, "replaces": self.replaces}
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        return out


@dataclass
class Change:
    op: str
    urn: str
    type: str
    name: str
    details: list[Detail] = field(default_factory=list)
    risky: bool = False
    reasons: list[str] = field(default_factory=list)
    old_urn: str | None = None
    protected: bool = False
    summary: str = ""  # what the resource is, for TPU pools: machine type and shape
    before: PoolSize | None = None  # a TPU pool's slice, hosts and chips at REF
    after: PoolSize | None = None  # and in the working tree

    @property
    def diffs(self) -> list[str]:
        return [d.path for d in self.details]

    def to_json(self) -> dict:
        out = {
            "op": self.op,
            "urn": self.urn,
            "type": self.type,
            "diffs": self.diffs,
            "name": self.name,
            "risky": self.risky,
        }
        if self.reasons:
            out["reasons"] = self.reasons
        if self.details:
            out["details"] = [d.to_json() for d in self.details]
        if self.old_urn and self.old_urn != self.urn:
            out["oldUrn"] = self.old_urn
        if self.protected:
            out["protected"] = True
        return out


OPS = ("create", "update", "replace", "delete")
