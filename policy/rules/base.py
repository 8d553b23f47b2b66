"""Rules: pure functions over the resource view, each with an id, an enforcement level and a description.

- A resource rule looks at one resource at a time: `check(resource) -> messages`. In a policy pack it becomes a
  `ResourceValidationPolicy`, which Pulumi runs before the resource is created or updated.
- A stack rule needs several resources (which pool a Ray object runs on, what it depends on):
  `check(view) -> (resource or None, message)`. In a policy pack it becomes a `StackValidationPolicy`.
Every message names what is wrong and what is expected; the resource it is about is shown next to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..view import Resource, StackView

MANDATORY = "mandatory"
ADVISORY = "advisory"


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    description: str  # one sentence: what must hold, as Pulumi prints above each violation
    why: str  # the reason, for docs/policy.md and `--list`
    scope: str  # "resource" or "stack"
    check: Callable
    types: tuple[str, ...] = ()  # resource rules: the types it applies to (empty: it decides itself)

    def applies_to(self, resource: Resource) -> bool:
        return not self.types or resource.type in self.types or ("ray" in self.types and resource.is_ray_object)

    def run_resource(self, resource: Resource) -> list[str]:
        return list(self.check(resource)) if self.applies_to(resource) else []

    def run_stack(self, view: StackView) -> list[tuple[Resource | None, str]]:
        return list(self.check(view))


RULES: list[Rule] = []


def _register(scope: str, id: str, level: str, description: str, why: str, types: tuple[str, ...] = ()):
    if any(r.id == id for r in RULES):
        raise ValueError(f"duplicate rule id {id}")

    def wrap(check: Callable) -> Callable:
        RULES.append(Rule(id, level, description, why, scope, check, types))
        return check

    return wrap


def resource_rule(id: str, level: str, description: str, why: str, types: tuple[str, ...] = ()):
    """Declare a rule over one resource; `types` may hold "ray" for every KubeRay object."""
    return _register("resource", id, level, description, why, types)


def stack_rule(id: str, level: str, description: str, why: str):
    return _register("stack", id, level, description, why)


Messages = Iterable[str]
Findings = Iterable[tuple[Resource | None, str]]
