"""Every rule of the pack, in the order they are reported: TPU invariants, security baseline, prod, cost."""

# Importing a module registers its rules, in this order.
from . import tpu  # noqa: F401  isort:skip
from . import security  # noqa: F401  isort:skip
from . import production  # noqa: F401  isort:skip
from . import cost  # noqa: F401  isort:skip
from .base import ADVISORY, MANDATORY, RULES, Rule  # isort:skip

__all__ = ["ADVISORY", "MANDATORY", "RULES", "Rule", "by_id"]


def by_id(rule_id: str) -> Rule:
    return next(r for r in RULES if r.id == rule_id)
