"""The SDK floor: the resources of a real plan registered again with no logic of our own.

`prepare(plan)` turns the steps of a plan into constructor calls of the same resource classes (pulumi_gcp, pulumi
_kubernetes, generic components with the same type tokens), with the recorded inputs as plain values and the same
parents, providers, dependencies and options. `replay()` (run by floor_program.py under plan.harness) makes those
calls and nothing else: what is left is what Pulumi itself costs for these resources under the same mocks.
Preparing happens before the clock starts, so the floor is as cheap as registering these resources can be.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pulumi

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


@dataclass
class Call:
    """One registration: a class and its arguments; parent, provider and dependencies as earlier calls' indexes."""

    cls: Any
    name: str
    kwargs: dict[str, Any]
    component_type: str | None = None  # a ComponentResource's type token
    parent: int | None = None
    provider: int | None = None
    depends_on: list[int] = field(default_factory=list)
    protect: bool = False
    ignore_changes: list[str] = field(default_factory=list)


# What replay() registers: set by the measuring process before it runs floor_program.py.
CALLS: list[Call] = []
OUTPUTS: dict[str, Any] = {}


@lru_cache(maxsize=None)
def resource_class(type_: str):
    """The SDK class of a type token, e.g. gcp:container/nodePool:NodePool -> pulumi_gcp.container.NodePool."""
    package, module, name = type_.split(":")
    if package == "pulumi" and module == "providers":
        return importlib.import_module(f"pulumi_{name}").Provider
    if package == "gcp":
        return getattr(importlib.import_module(f"pulumi_gcp.{module.split('/')[0]}"), name)
    if package == "kubernetes":
        group, version = module.rsplit("/", 1)
        try:
            return getattr(importlib.import_module(f"pulumi_kubernetes.{group}.{version}"), name)
        except (ImportError, AttributeError):  # a custom resource (ray.io/v1)
            return importlib.import_module("pulumi_kubernetes.apiextensions").CustomResource
    if package == "time":  # pulumiverse-time (components/resources/metric_waits.py)
        return getattr(importlib.import_module("pulumiverse_time"), name)
    raise ValueError(f"no SDK class for {type_}")


@lru_cache(maxsize=None)
def _parameters(cls) -> frozenset[str]:
    init = cls._internal_init if hasattr(cls, "_internal_init") else cls.__init__
    return frozenset(inspect.signature(init).parameters)


def _snake(key: str) -> str:
    return _CAMEL.sub(lambda m: "_" + m.group(1).lower(), key)


def _from_json(value: Any) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


def prepare(plan: dict) -> tuple[list[Call], dict[str, Any]]:
    """The calls that register the plan's resources (the stack itself excepted: the harness makes it)."""
    index: dict[str, int] = {}
    calls: list[Call] = []
    for step in plan["steps"]:
        state = step["newState"]
        if state["type"] == "pulumi:pulumi:Stack":
            continue
        if state["custom"]:
            cls = resource_class(state["type"])
            accepted = _parameters(cls)
            kwargs = {k: v for k, v in ((_snake(k), v) for k, v in state["inputs"].items()) if k in accepted}
            if issubclass(cls, pulumi.ProviderResource):  # providers take plain values and send them as JSON text
                kwargs = {k: _from_json(v) for k, v in kwargs.items()}
            call = Call(cls, state["name"], kwargs)
        else:
            call = Call(pulumi.ComponentResource, state["name"], {}, component_type=state["type"])
        call.parent = index.get(state["parent"])
        call.provider = index.get(state["provider"]) if state["provider"] else None
        call.depends_on = [index[d] for d in state["dependencies"] if d in index]
        call.protect = state["options"]["protect"]
        call.ignore_changes = state["options"]["ignoreChanges"]
        index[step["urn"]] = len(calls)
        calls.append(call)
    return calls, plan["outputs"]


def replay(calls: list[Call] | None = None, outputs: dict[str, Any] | None = None) -> list[pulumi.Resource]:
    """Register every call in order, then export the stack outputs; the body of floor_program.py."""
    made: list[pulumi.Resource] = []
    for call in CALLS if calls is None else calls:
        opts = pulumi.ResourceOptions(
            parent=made[call.parent] if call.parent is not None else None,
            provider=made[call.provider] if call.provider is not None else None,
            depends_on=[made[i] for i in call.depends_on] or None,
            protect=call.protect or None,
            ignore_changes=call.ignore_changes or None,
        )
        if call.component_type is not None:
            resource = call.cls(call.component_type, call.name, None, opts)
            resource.register_outputs({})
        else:
            resource = call.cls(call.name, opts=opts, **call.kwargs)
        made.append(resource)
    for key, value in (OUTPUTS if outputs is None else outputs).items():
        pulumi.export(key, value)
    return made
