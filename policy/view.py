"""A neutral view of the resources about to be deployed, which every rule reads.

Rules never see where a resource came from. Two adapters build the view: `from_plan` reads the offline plan JSON
(`python -m plan STACK --json`: steps[].newState, and the stack's `cost` estimate), and `policy.pack` reads what the
Pulumi CLI hands a policy pack (`ResourceValidationArgs`, `StackValidationArgs`; no cost). Properties are camelCase in
both; a value that is not known yet (a preview of a resource that does not exist) is `UNKNOWN` in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping

# The plan JSON's type tokens, and what the offline plan prints for an unknown value (the pack adapter maps Pulumi's
# to it): one home, read here by the rules as view.CLUSTER, view.UNKNOWN, ...
from ray_tpu_gke.catalog.resource_types import (  # noqa: F401  (re-exported to the rules)
    CLUSTER,
    NODE_POOL,
    RAY_API,
    RAY_KINDS,
    RESOURCE_POLICY,
    UNKNOWN,
)

# Where a resource carries the stack's `environment` label (config `ray-tpu-gke:environment`; default: the stack).
ENVIRONMENT_LABELS = (
    "resourceLabels.environment",
    "nodeConfig.resourceLabels.environment",
    "metadata.labels.environment",
)


def is_prod(name: Any) -> bool:
    """A stack or environment whose name starts with `prod` is production."""
    return isinstance(name, str) and name.startswith("prod")


def is_known(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value == UNKNOWN)


def lookup(data: Any, path: str, default: Any = None) -> Any:
    """`lookup(props, "nodeConfig.machineType")`: the value at a dotted path, or `default` where a step is missing.

    An unknown value on the way is returned as `UNKNOWN`, so a rule can tell "not set" from "not known yet".
    """
    value = data
    for key in path.split("."):
        if value == UNKNOWN:
            return UNKNOWN
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return default if value is None else value


def stack_of_urn(urn: str) -> str:
    """`urn:pulumi:prod::ray-tpu-gke::type::name` -> `prod`."""
    head = urn.split("::", 1)[0]
    return head[len("urn:pulumi:") :] if head.startswith("urn:pulumi:") else ""


@dataclass(frozen=True)
class Resource:
    """One resource as a rule sees it: its type, names, camelCase properties, options and edges."""

    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    dependencies: tuple[str, ...] = ()
    parent: str | None = None
    stack: str = ""  # the stack it is deployed to; rules for `prod*` stacks read it

    def get(self, path: str, default: Any = None) -> Any:
        return lookup(self.props, path, default)

    @property
    def environment(self) -> str | None:
        return next((e for e in (self.get(p) for p in ENVIRONMENT_LABELS) if is_known(e)), None)

    @property
    def production(self) -> str | None:
        """Why the resource is production (`stack prod`, `environment prod-eu`), or None when it is not."""
        if is_prod(self.stack):
            return f"stack {self.stack}"
        if is_prod(self.environment):
            return f"environment {self.environment}"
        return None

    @property
    def protect(self) -> bool:
        return bool(self.options.get("protect"))

    @property
    def is_ray_object(self) -> bool:
        api, _, kind = self.type.partition(":")[2].partition(":")
        return self.type.startswith("kubernetes:") and api.split("/")[0] == RAY_API and kind in RAY_KINDS

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def display(self) -> str:
        """How a violation names the resource, as Pulumi does: `type: name`."""
        return f"{self.type}: {self.name}"


class StackView:
    """Every resource of one stack, in registration order, with the look-ups rules share."""

    def __init__(self, resources: Iterable[Resource], stack: str | None = None, cost: Mapping[str, Any] | None = None):
        self.resources = list(resources)
        self.stack = stack if stack is not None else next((r.stack for r in self.resources if r.stack), "")
        # The offline plan's cost estimate (`python -m plan STACK --json`, top-level `cost`); None where the plan has
        # none, as in what the Pulumi CLI hands a policy pack.
        self.cost = cost if isinstance(cost, Mapping) else None

    def of_type(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]

    @cached_property
    def by_urn(self) -> dict[str, Resource]:
        return {r.urn: r for r in self.resources}

    @property
    def clusters(self) -> list[Resource]:
        return self.of_type(CLUSTER)

    @property
    def node_pools(self) -> list[Resource]:
        return self.of_type(NODE_POOL)

    @property
    def ray_objects(self) -> list[Resource]:
        return [r for r in self.resources if r.is_ray_object]

    @property
    def production(self) -> str | None:
        """Why the stack is production: its name, or the environment label of its GKE cluster; None if it is not."""
        if is_prod(self.stack):
            return f"stack {self.stack}"
        return next((c.production for c in self.clusters if c.production), None)


def from_plan(plan: Mapping[str, Any], stack: str | None = None) -> StackView:
    """The view of an offline plan (the `--json` output of `python -m plan`)."""
    stack = stack if stack is not None else plan.get("stack", "")
    resources = []
    for step in plan.get("steps", []):
        state = step.get("newState") or {}
        urn = step.get("urn", "")
        resources.append(
            Resource(
                urn=urn,
                type=state.get("type", ""),
                name=state.get("name", ""),
                props=state.get("inputs") or {},
                options=state.get("options") or {},
                dependencies=tuple(state.get("dependencies") or ()),
                parent=state.get("parent"),
                stack=stack or stack_of_urn(urn),
            )
        )
    return StackView(resources, stack, plan.get("cost"))
