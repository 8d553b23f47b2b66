"""Pulumi input paths and the differences between two sets of inputs.

A path is Pulumi's camelCase property path: `nodeConfig.labels["ray-tpu-gke/slice"]`, `spec.workerGroupSpecs[0]`,
`items[*]`. `leaf_diffs` lists every changed path of two input trees, `apply_ignore_changes` applies a resource's
`ignoreChanges` as Pulumi does, and `ABSENT` marks a side that has no value at a path.

Lists whose items are named (`groupName`, `name`, `displayName`, unique on both sides: KubeRay worker groups,
containers, env vars, alert conditions) are compared item by item by name, `spec.workerGroupSpecs[groupName="tpu"]`,
so removing the first item is one removed item, not a change to every later one; a new order of the same names is
one change of its own (`[order]`), since a positional list is updated when only its order changes. Strings holding a
JSON or YAML document are compared inside it (`dashboardJson(json).mosaicLayout.tiles[3]...`), Monitoring filters by
clause (`filter(clause metric.type)`), see `strings`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import strings

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_TOKEN = re.compile(r'\.?([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+|\*)\]|\["((?:[^"\\]|\\.)*)"\]')


def parse_path(text: str) -> tuple:
    """`nodeConfig.labels["a/b"]` -> ("nodeConfig", "labels", "a/b"); `items[0]` -> ("items", 0); `[*]` -> "*"."""
    tokens: list = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"not a property path: {text!r}")
        name, index, quoted = match.groups()
        if name is not None:
            tokens.append(name)
        elif index is not None:
            tokens.append("*" if index == "*" else int(index))
        else:
            tokens.append(json.loads(f'"{quoted}"'))
        position = match.end()
    return tuple(tokens)


@dataclass(frozen=True)
class Named:
    """A list item found by its name: `[groupName="tpu"]`."""

    key: str
    value: str

    def __str__(self) -> str:
        return f"[{self.key}={json.dumps(self.value)}]"


@dataclass(frozen=True)
class Inside:
    """Into a string: the document it holds (`(json)`, `(yaml)`), a filter's clause (`(clause metric.type)`), or a
    named list's order (`[order]`)."""

    what: str

    def __str__(self) -> str:
        return "[order]" if self.what == "order" else f"({self.what})"


ORDER = Inside("order")
NAME_KEYS = ("groupName", "name", "displayName")  # KubeRay groups; Kubernetes containers, env, ports; GCP conditions


def format_path(tokens: tuple) -> str:
    out = ""
    for token in tokens:
        if isinstance(token, (Named, Inside)):
            out += str(token)
        elif isinstance(token, int) or token == "*":
            out += f"[{token}]"
        elif _IDENT.match(token):
            out += f".{token}" if out else token
        else:
            out += f"[{json.dumps(token)}]"
    return out


class _Absent:
    def __repr__(self) -> str:
        return "(none)"


ABSENT: Any = _Absent()


def lookup(value: Any, tokens: tuple) -> Any:
    for token in tokens:
        if isinstance(token, Named) and isinstance(value, list):
            value = next((v for v in value if isinstance(v, dict) and v.get(token.key) == token.value), ABSENT)
            if value is ABSENT:
                return ABSENT
        elif isinstance(token, Inside) and isinstance(value, str) and token.what in ("json", "yaml"):
            value = strings.structured(value)
            if value is strings.NOT_STRUCTURED:
                return ABSENT
        elif isinstance(value, dict) and isinstance(token, str) and token in value:
            value = value[token]
        elif isinstance(value, list) and isinstance(token, int) and 0 <= token < len(value):
            value = value[token]
        else:
            return ABSENT
    return value


def same(a: Any, b: Any) -> bool:
    """Equal values (as JSON); ABSENT equals only itself."""
    if a is ABSENT or b is ABSENT:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def leaf_diffs(old: Any, new: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """Every changed path, as deep as both sides have the same shape; ABSENT marks a side without the path."""
    if same(old, new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += leaf_diffs(old.get(key, ABSENT), new.get(key, ABSENT), path + (key,))
        return out
    if isinstance(old, list) and isinstance(new, list):
        key = name_key(old, new)
        if key is not None:
            return _named_diffs(old, new, key, path)
        out = []
        for i in range(max(len(old), len(new))):
            out += leaf_diffs(old[i] if i < len(old) else ABSENT, new[i] if i < len(new) else ABSENT, path + (i,))
        return out
    if isinstance(old, str) and isinstance(new, str):
        return _string_diffs(old, new, path)
    return [(path, old, new)]


def name_key(old: list, new: list) -> str | None:
    """The key that names every item of both lists, each name once per list; None for a positional list."""
    items = old + new
    if not old or not new or not all(isinstance(i, dict) for i in items):
        return None
    for key in NAME_KEYS:
        if all(isinstance(i.get(key), str) for i in items) and all(
            len({i[key] for i in side}) == len(side) for side in (old, new)
        ):
            return key
    return None


def _named_diffs(old: list, new: list, key: str, path: tuple) -> list[tuple[tuple, Any, Any]]:
    olds, news = {i[key]: i for i in old}, {i[key]: i for i in new}
    out = []
    for name in [*olds, *(n for n in news if n not in olds)]:
        out += leaf_diffs(olds.get(name, ABSENT), news.get(name, ABSENT), path + (Named(key, name),))
    kept_old = [n for n in olds if n in news]
    kept_new = [n for n in news if n in olds]
    if kept_old != kept_new:
        out.append((path + (ORDER,), kept_old, kept_new))
    return out


def _string_diffs(old: str, new: str, path: tuple) -> list[tuple[tuple, Any, Any]]:
    """A document's changes inside it, a filter's by clause; else the two strings."""
    old_doc, new_doc = strings.structured(old), strings.structured(new)
    if old_doc is not strings.NOT_STRUCTURED and new_doc is not strings.NOT_STRUCTURED:
        kind = "json" if old.lstrip()[:1] in "{[" and new.lstrip()[:1] in "{[" else "yaml"
        inner = leaf_diffs(old_doc, new_doc, path + (Inside(kind),))
        # The same document written differently (spacing, key order) still updates the resource: shown whole.
        return inner or [(path, old, new)]
    old_clauses, new_clauses = strings.clauses(old), strings.clauses(new)
    if old_clauses and new_clauses:
        return [
            (path + (Inside(f"clause {subject}"),), ABSENT if a is None else a, ABSENT if b is None else b)
            for subject, a, b in strings.clause_diffs(old_clauses, new_clauses)
        ] or [(path, old, new)]
    return [(path, old, new)]


def _reset(old: Any, new: Any, tokens: tuple) -> Any:
    """`new` with the value at `tokens` taken from `old` (absent there: removed), as Pulumi applies ignoreChanges."""
    if not tokens:
        return old
    head, rest = tokens[0], tokens[1:]
    if isinstance(new, dict) and isinstance(head, str):
        keys = list(new) if head == "*" else [head]
        out = dict(new)
        for key in keys:
            old_child = old.get(key, ABSENT) if isinstance(old, dict) else ABSENT
            if key not in out:
                if not rest and old_child is not ABSENT:
                    out[key] = old_child
                continue
            value = _reset(old_child, out[key], rest)
            if value is ABSENT:
                del out[key]
            else:
                out[key] = value
        return out
    if isinstance(new, list) and (head == "*" or isinstance(head, int)):
        out = list(new)
        for i in range(len(out)) if head == "*" else [head] if head < len(out) else []:
            old_child = old[i] if isinstance(old, list) and i < len(old) else ABSENT
            value = _reset(old_child, out[i], rest)
            out[i] = None if value is ABSENT else value
        return out
    return new


def apply_ignore_changes(old_inputs: dict, new_inputs: dict, ignore: list[str]) -> dict:
    result = new_inputs
    for text in ignore:
        try:
            tokens = parse_path(text)
        except ValueError:
            continue
        result = _reset(old_inputs, result, tokens)
    return result


def covers(prefix: tuple, path: tuple) -> bool:
    """Whether `path` is `prefix` or below it (`*` in `prefix` matches any token)."""
    return len(prefix) <= len(path) and all(p == "*" or p == q for p, q in zip(prefix, path))


def show_pair(old: Any, new: Any, limit: int = 100) -> tuple[str, str]:
    """Two values as `show` prints them; two long strings around where they first differ, not at the same prefix."""
    if isinstance(old, str) and isinstance(new, str):
        a, b = strings.window(json.dumps(old, ensure_ascii=False), json.dumps(new, ensure_ascii=False), limit - 6)
        return a, b
    return show(old, limit), show(new, limit)


def show(value: Any, limit: int = 100) -> str:
    """A value as the outputs print it: JSON, shortened to `limit` characters; `(none)` where there is none."""
    if value is ABSENT:
        return "(none)"
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
