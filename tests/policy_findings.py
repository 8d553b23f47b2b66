"""A plan held against the policy pack: a resource's state in the plan by type and name, and the violations the pack
finds in it (plan/test_policy.py, and the library tests that show the pack applies their rules too)."""

from __future__ import annotations

from policy import engine, view
from policy.rules import MANDATORY


def state(plan: dict, type_: str, name: str) -> dict:
    matches = [s["newState"] for s in plan["steps"] if s["newState"]["type"] == type_ and s["newState"]["name"] == name]
    assert len(matches) == 1, f"no single {type_} {name} in the plan"
    return matches[0]


def urn_of(plan: dict, type_: str, name: str) -> str:
    return next(s["urn"] for s in plan["steps"] if s["newState"]["type"] == type_ and s["newState"]["name"] == name)


def ray(plan: dict, name: str, kind: str = "RayCluster") -> dict:
    return state(plan, f"kubernetes:ray.io/v1:{kind}", name)


def groups(ray_state: dict) -> list[dict]:
    spec = ray_state["inputs"]["spec"]
    return (spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec)["workerGroupSpecs"]


def worker(ray_state: dict, index: int = 0) -> dict:
    return groups(ray_state)[index]["template"]["spec"]["containers"][0]


def pool(plan: dict, name: str) -> dict:
    return state(plan, view.NODE_POOL, name)


def cluster(plan: dict) -> dict:
    (only,) = [s["newState"] for s in plan["steps"] if s["newState"]["type"] == view.CLUSTER]
    return only


def found(plan: dict, stack: str | None = None) -> list[engine.Violation]:
    return engine.check_plan(plan, stack)


def assert_violation(plan: dict, rule_id: str, resource: str, *fragments: str, level: str = MANDATORY,
                     stack: str | None = None) -> engine.Violation:
    """The plan breaks `rule_id` on `resource`; the message holds every fragment and the report names both."""
    violations = found(plan, stack)
    hits = [v for v in violations if v.rule.id == rule_id and v.resource is not None and v.resource.name == resource]
    assert hits, f"expected {rule_id} on {resource}; got:\n{engine.render(violations)}"
    hit = next((v for v in hits if all(f in v.message for f in fragments)), None)
    assert hit is not None, f"no {rule_id} message on {resource} with {fragments}: {[v.message for v in hits]}"
    assert hit.level == level
    text = engine.render(violations)
    assert f"[{level}]  {engine.PACK_NAME} v" in text
    assert f"{rule_id}  ({hit.resource.type}: {resource})" in text
    assert engine.exit_code(violations) == (1 if level == MANDATORY else engine.exit_code(violations))
    return hit


def mandatory(plan: dict, stack: str | None = None) -> list[engine.Violation]:
    return [v for v in found(plan, stack) if v.level == MANDATORY]
