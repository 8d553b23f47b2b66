"""What of a configuration entry validates, for the rules across sections to run on when the entry itself failed, so
one run reports every mistake (issue #25.5)."""

from __future__ import annotations

import copy
from typing import Any, Optional

from pydantic import ValidationError

from .model_types import M
from .models import validate_as

# Keys whose default would change what other rules conclude (a capacity's reservation rules, a Ray version's
# autoscaler and multislice rules, a machine's GPUs, the cluster's mode): an entry that failed on one of them is not
# checked across sections at all, rather than judged on a value the user did not give.
PIVOTAL = frozenset(
    {
        "capacity",
        "ray_version",
        "rayVersion",
        "autoscaling",
        "mode",
        "machine_type",
        "machineType",
        "accelerator",
        "generation",
        "topology",
    }
)


def validate_partial(model: type[M], value: Any, style: str, error: ValidationError) -> Optional[M]:
    """What of `value` validates once every key that failed is left out (so its default applies), for the rules
    across sections to run on; None where a required key failed or the entry is no mapping. Never part of a
    validated configuration: the failures themselves are reported."""
    if not isinstance(value, dict):
        return None
    try:
        data = copy.deepcopy(value)
    except RecursionError:  # a hostile nesting: its own problems are reported, nothing is checked across
        return None
    dropped: set[tuple] = set()
    for _ in range(3):  # a default may meet a rule across fields of the model that the given value met
        for item in error.errors(include_url=False):
            loc = tuple(item["loc"])
            if item["type"] == "missing" or (loc and loc[0] in PIVOTAL) or not _drop(data, loc):
                return None
            dropped.add(loc)
        try:
            partial = validate_as(model, data, style)
        except ValidationError as again:
            error = again
            continue
        partial._dropped = frozenset(dropped)
        return partial
    return None


def _drop(data: Any, loc: tuple) -> bool:
    """Remove the mapping key at `loc` (a pydantic error location); False where it is no key of a mapping."""
    if not loc or not isinstance(loc[-1], str):
        return False
    for part in loc[:-1]:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    if not isinstance(data, dict) or loc[-1] not in data:
        return False
    del data[loc[-1]]
    return True
