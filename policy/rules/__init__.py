"""Every rule of the pack, in the order they are reported: TPU and GPU invariants, security baseline, prod, cost,
monitoring."""

# Importing a module registers its rules, in this order.
from . import tpu  # isort:skip
from . import gpu  # isort:skip
from . import security  # isort:skip
from . import production  # isort:skip
from . import cost  # isort:skip
from . import capacity  # isort:skip
from . import monitoring  # isort:skip
from .base import ADVISORY, MANDATORY, RULES, Rule  # isort:skip

GROUPS = (tpu, gpu, security, production, cost, capacity, monitoring)

__all__ = ["ADVISORY", "GROUPS", "MANDATORY", "RULES", "Rule", "by_id"]


def by_id(rule_id: str) -> Rule:
    return next(r for r in RULES if r.id == rule_id)
