"""The steps of a plan's JSON (`python -m plan --json`, each written by `plan.harness.Step.to_json`): the one reader
of the steps of given resource types, for every loop that wants some of them."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional


def state(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step's resource as planned (`newState`; empty for a step without one)."""
    return step.get("newState") or {}


def steps_of_type(steps: Iterable[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    """The steps whose resource is of one of `types` (Pulumi type tokens), in plan order."""
    return [step for step in steps if state(step).get("type") in types]


def states_of_type(plan: Optional[Mapping[str, Any]], *types: str) -> list[dict[str, Any]]:
    """The planned resources (`newState`) of a plan's steps of one of `types`, in plan order; none for no plan."""
    return [state(step) for step in steps_of_type((plan or {}).get("steps", []), *types)]
