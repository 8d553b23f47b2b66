"""What changed inside a long string input, so a review shows the change rather than two cut-off prefixes.

Three kinds of text carry structure: JSON documents (a dashboard's `dashboardJson`), YAML documents (a RayService's
`serveConfigV2`, which KubeRay reads as a YAML string: ray-operator/apis/ray/v1/rayservice_types.go) and Cloud
Monitoring filters (an alert condition's `filter`: clauses joined by `AND`/`OR`, https://cloud.google.com/monitoring/api/v3/filters).
`structured` parses the first two; `clauses` splits the third at its top-level `AND`/`OR`, outside quotes and
parentheses; `window` shows two long plain strings around their first difference.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

NOT_STRUCTURED = object()
MIN_FILTER_LENGTH = 60  # shorter filters read fine whole
_JOINER = re.compile(r"\s+(AND|OR)\s+")
# A clause's subject: the operand before its comparison (`metric.type`, `resource.labels.cluster_name`), so that a
# changed value pairs with the clause it replaces. Filter operators: =, !=, <, <=, >, >=, ":" (has), and functions.
_SUBJECT = re.compile(r"^\s*(NOT\s+)?([A-Za-z_][\w.\"-]*(?:\[[^\]]*\])?)\s*(=|!=|<=|>=|<|>|:)")


def structured(text: str) -> Any:
    """The JSON or YAML document a string holds, when it is a mapping or a list; NOT_STRUCTURED otherwise."""
    stripped = text.strip()
    if not stripped:
        return NOT_STRUCTURED
    if stripped[0] in "{[":
        try:
            value = json.loads(stripped)
        except ValueError:
            value = NOT_STRUCTURED
        if isinstance(value, (dict, list)):
            return value
    if "\n" in stripped:  # a YAML document of one line is a plain string to the eye, leave it
        try:
            value = yaml.safe_load(stripped)
        except yaml.YAMLError:
            return NOT_STRUCTURED
        if isinstance(value, (dict, list)):
            return value
    return NOT_STRUCTURED


def clauses(text: str) -> list[str] | None:
    """The top-level clauses of a Monitoring filter (each with the `AND`/`OR` before it), or None if it has one."""
    if len(text) < MIN_FILTER_LENGTH:
        return None
    parts, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0:
            joiner = _JOINER.match(text, i)
            if joiner and char.isspace():
                parts.append(text[start:i].strip())
                start = i + 1  # the joiner stays with the clause it introduces
                i = joiner.end()
                continue
        i += 1
    parts.append(text[start:].strip())
    return parts if len(parts) > 1 else None


def subject(clause: str) -> str | None:
    """What a clause constrains (`metric.type`), to pair an old clause with its new value."""
    body = re.sub(r"^(AND|OR)\s+", "", clause)
    match = _SUBJECT.match(body)
    return match.group(2) if match else None


def clause_diffs(old: list[str], new: list[str]) -> list[tuple[str, Any, Any]]:
    """(subject or "clause", old clause or None, new clause or None) for every clause removed, added or changed."""
    removed = [c for c in old if c not in new]
    added = [c for c in new if c not in old]
    out: list[tuple[str, Any, Any]] = []
    for clause in removed:
        key = subject(clause)
        twin = next((c for c in added if key is not None and subject(c) == key), None)
        if twin is not None:
            added.remove(twin)
        out.append((key or "clause", clause, twin))
    out += [(subject(c) or "clause", None, c) for c in added]
    return out


def window(old: str, new: str, limit: int) -> tuple[str, str]:
    """Two long strings around their first difference: `...` where a shared prefix or a tail is left out."""
    if len(old) <= limit and len(new) <= limit:
        return old, new
    common = 0
    for a, b in zip(old, new):
        if a != b:
            break
        common += 1
    start = max(0, common - limit // 4)

    def cut(text: str) -> str:
        part = text[start : start + limit]
        return ("..." if start else "") + part + ("..." if start + limit < len(text) else "")

    return cut(old), cut(new)
