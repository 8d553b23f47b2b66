"""The rules as a pulumi_policy PolicyPack, for `pulumi preview --policy-pack policy`.

Adapters turn what the Pulumi CLI hands a policy (`ResourceValidationArgs`, `StackValidationArgs`) into the same
resource view the offline plan gives, so a rule never knows which one it reads. Unknown values (a preview of
resources that do not exist yet) become `view.UNKNOWN`, which rules skip rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy as _proxy

from .engine import PACK_NAME
from .rules import MANDATORY, RULES, Rule
from .view import UNKNOWN, Resource, StackView, stack_of_urn

LEVELS = {MANDATORY: EnforcementLevel.MANDATORY}


def plain(value: Any) -> Any:
    """pulumi_policy's unknown-checking proxies as plain dicts and lists, unknown values as `UNKNOWN`."""
    if isinstance(value, Mapping):
        target = value["__target"] if isinstance(value, _proxy._DictProxy) else value  # no access raises here
        return {k: plain(v) for k, v in target.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        target = value["__target"] if isinstance(value, _proxy._ListProxy) else value
        return [plain(v) for v in target]
    if _proxy._is_unknown(value):
        return UNKNOWN
    return value


def _options(opts: Any) -> dict[str, Any]:
    return {
        "protect": bool(getattr(opts, "protect", False)),
        "ignoreChanges": list(getattr(opts, "ignore_changes", []) or []),
        "deleteBeforeReplace": getattr(opts, "delete_before_replace", None),
    }


def resource_from_args(args: ResourceValidationArgs) -> Resource:
    return Resource(
        urn=args.urn,
        type=args.resource_type,
        name=args.name,
        props=plain(args.props),
        options=_options(args.opts),
        parent=getattr(args.opts, "parent", None),
        stack=stack_of_urn(args.urn),
    )


def view_from_args(args: StackValidationArgs) -> StackView:
    resources = []
    for r in args.resources:
        resources.append(
            Resource(
                urn=r.urn,
                type=r.resource_type,
                name=r.name,
                props=plain(r.props),
                options=_options(r.opts),
                dependencies=tuple(d.urn for d in r.dependencies or []),
                parent=r.parent.urn if r.parent is not None else getattr(r.opts, "parent", None),
                stack=stack_of_urn(r.urn),
            )
        )
    return StackView(resources)


def to_policy(rule: Rule):
    """One rule as a pulumi_policy policy: resource rules validate each resource, stack rules the whole stack."""
    level = LEVELS.get(rule.level, EnforcementLevel.ADVISORY)
    if rule.scope == "resource":

        def validate_resource(args: ResourceValidationArgs, report_violation) -> None:
            for message in rule.run_resource(resource_from_args(args)):
                report_violation(message, None)

        return ResourceValidationPolicy(
            name=rule.id, description=rule.description, enforcement_level=level, validate=validate_resource
        )

    def validate_stack(args: StackValidationArgs, report_violation) -> None:
        for resource, message in rule.run_stack(view_from_args(args)):
            report_violation(message, resource.urn if resource is not None else None)

    return StackValidationPolicy(
        name=rule.id, description=rule.description, enforcement_level=level, validate=validate_stack
    )


def policies() -> list:
    return [to_policy(rule) for rule in RULES]


def serve() -> None:
    """Serve the pack to the Pulumi CLI. PolicyPack starts a gRPC server and blocks: only the CLI calls this."""
    PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
