"""Pulumi input paths and the differences between two sets of inputs.

A path is Pulumi's camelCase property path: `nodeConfig.labels["ray-tpu-gke/slice"]`, `spec.workerGroupSpecs[0]`,
`items[*]`. `leaf_diffs` lists every changed path of two input trees, `apply_ignore_changes` applies a resource's
`ignoreChanges` as Pulumi does, and `ABSENT` marks a side that has no value at a path.
"""

from __future__ import annotations

import json
import re
from typing import Any

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


def format_path(tokens: tuple) -> str:
    out = ""
    for token in tokens:
        if isinstance(token, int) or token == "*":
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
        if isinstance(value, dict) and isinstance(token, str) and token in value:
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
        out = []
        for i in range(max(len(old), len(new))):
            out += leaf_diffs(old[i] if i < len(old) else ABSENT, new[i] if i < len(new) else ABSENT, path + (i,))
        return out
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
        for i in (range(len(out)) if head == "*" else [head] if head < len(out) else []):
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


def show(value: Any, limit: int = 100) -> str:
    """A value as the outputs print it: JSON, shortened to `limit` characters; `(none)` where there is none."""
    if value is ABSENT:
        return "(none)"
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."
