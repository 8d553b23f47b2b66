"""Runs the rules over a stack view and reports violations as `pulumi preview --policy-pack` prints them.

`report(plan_json, stack, stream)` is what `python -m plan STACK --policy-pack policy` calls; `main(argv)` is
`python -m policy PLAN.json`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, TextIO

import yaml
from ray_tpu_gke import inputfile

from . import view as views
from .rules import ADVISORY, MANDATORY, RULES, Rule
from .view import StackView

HERE = Path(__file__).resolve().parent
PACK_NAME = "ray-tpu-gke-policies"

EXIT_OK = 0
EXIT_MANDATORY = 1
EXIT_USAGE = 2


def pack_version() -> str:
    """The pack's version, from PulumiPolicy.yaml as the Pulumi CLI reads it."""
    return str(yaml.safe_load((HERE / "PulumiPolicy.yaml").read_text()).get("version", "0.0.1"))


@dataclass(frozen=True)
class Violation:
    rule: Rule
    message: str
    resource: views.Resource | None

    @property
    def level(self) -> str:
        return self.rule.level

    def render(self, version: str) -> str:
        target = f"  ({self.resource.display})" if self.resource is not None else ""
        return "\n".join(
            [
                f"    [{self.level}]  {PACK_NAME} v{version}  {self.rule.id}{target}",
                f"    {self.rule.description}",
                f"    {self.message}",
            ]
        )


def evaluate(view: StackView, rules: list[Rule] | None = None) -> list[Violation]:
    """Every violation of the stack: mandatory first, then by rule, then in registration order."""
    found: list[Violation] = []
    for rule in rules if rules is not None else RULES:
        if rule.scope == "resource":
            for resource in view.resources:
                found += [Violation(rule, m, resource) for m in rule.run_resource(resource)]
        else:
            found += [Violation(rule, m, resource) for resource, m in rule.run_stack(view)]
    return sorted(found, key=lambda v: v.level != MANDATORY)  # stable: rule and resource order stay


def check_plan(plan: Mapping[str, Any], stack: str | None = None) -> list[Violation]:
    return evaluate(views.from_plan(plan, stack))


def render(violations: list[Violation]) -> str:
    if not violations:
        return "No policy violations."
    version = pack_version()
    mandatory = sum(v.level == MANDATORY for v in violations)
    advisory = sum(v.level == ADVISORY for v in violations)
    lines = ["Policy Violations:"] + [v.render(version) for v in violations]
    lines.append(f"{mandatory} mandatory, {advisory} advisory policy violation{'s' if len(violations) != 1 else ''}")
    return "\n".join(lines)


def exit_code(violations: list[Violation]) -> int:
    return EXIT_MANDATORY if any(v.level == MANDATORY for v in violations) else EXIT_OK


def report(plan_json: Mapping[str, Any], stack: str, stream: TextIO) -> int:
    """Print every violation of a plan to `stream`; 1 when any is mandatory, else 0."""
    violations = check_plan(plan_json, stack)
    print(render(violations), file=stream)
    return exit_code(violations)


def list_rules() -> str:
    width = max(len(r.id) for r in RULES)
    return "\n".join(f"{r.id:<{width}}  {r.level:<9}  {r.scope:<8}  {r.description}" for r in RULES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policy",
        description="Run the ray-tpu-gke policy rules over a saved offline plan (python -m plan STACK --json).",
    )
    parser.add_argument("plan", nargs="?", help="plan JSON file, or - for standard input")
    parser.add_argument("--stack", help="stack name (default: the plan's own `stack`)")
    parser.add_argument("--list", action="store_true", help="list the rules and exit")
    args = parser.parse_args(argv)
    if args.list:
        print(list_rules())
        return EXIT_OK
    if not args.plan:
        parser.error("a plan JSON file is required")
    try:  # bounded in size and depth, as every file the toolchain reads (ray_tpu_gke.inputfile)
        plan = inputfile.read_json(args.plan, "", "a plan JSON (python -m plan STACK --json)")
    except inputfile.InputError as error:
        print(f"error: cannot read plan {error}", file=sys.stderr)
        return EXIT_USAGE
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list):
        print(f"error: {args.plan} is not a plan JSON (python -m plan STACK --json): it has no steps", file=sys.stderr)
        return EXIT_USAGE
    wrong = _misshapen(plan)
    if wrong:
        print(f"error: {args.plan} is not a plan JSON (python -m plan STACK --json): {wrong}", file=sys.stderr)
        return EXIT_USAGE
    stack = args.stack if args.stack is not None else plan.get("stack", "")
    try:
        return report(plan, stack, sys.stdout)
    # A hand-made file, deeper down; ArithmeticError: decimal's InvalidOperation for an amount that is not a number.
    except (AttributeError, KeyError, TypeError, ValueError, IndexError, ArithmeticError) as error:
        print(
            f"error: {args.plan} is not a plan JSON as `python -m plan STACK --json` writes it: a rule could not read "
            f"it ({type(error).__name__}: {' '.join(str(error).split())[:200]})",
            file=sys.stderr,
        )
        return EXIT_USAGE


def _misshapen(plan: Mapping[str, Any]) -> str | None:
    """What in a plan's steps the view cannot read (views.from_plan), or None: each step a mapping with a `urn`
    and a `newState` whose type and name are strings and whose inputs and options are mappings."""
    if not isinstance(plan.get("stack", ""), str) or not isinstance(plan.get("cost") or {}, dict):
        return "its stack must be a string and its cost a mapping"
    for i, step in enumerate(plan["steps"]):
        state = step.get("newState") if isinstance(step, dict) else None
        if (
            not isinstance(state, dict)
            or not isinstance(step.get("urn", ""), str)
            or not all(isinstance(state.get(k, ""), str) for k in ("type", "name"))
            or not all(isinstance(state.get(k) or {}, dict) for k in ("inputs", "options"))
            or not isinstance(state.get("dependencies") or [], list)
            or not all(isinstance(d, str) for d in state.get("dependencies") or [])
            or not isinstance(state.get("parent") or "", str)
        ):
            return f"steps[{i}] must be a mapping with a string urn and a newState (type, name, inputs, options)"
    return None
