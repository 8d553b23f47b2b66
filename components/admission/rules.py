"""The registry of rules that GKE, Compute Engine, Kubernetes, KubeRay and Ray enforce: each with its source, listed
for reviewers (docs/admission.md is generated from `markdown()`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Rule", "RULES", "rule", "markdown"]


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    source: str


RULES: dict[str, Rule] = {}


def rule(id: str, summary: str, source: str) -> Rule:
    RULES[id] = Rule(id, summary, source)
    return RULES[id]


def markdown() -> str:
    """The rules as the table of docs/admission.md (a test keeps the page equal to this)."""
    lines = ["| rule | what the service accepts | source |", "| --- | --- | --- |"]
    lines += [f"| `{r.id}` | {r.summary} | {r.source} |" for r in RULES.values()]
    return "\n".join(lines) + "\n"
