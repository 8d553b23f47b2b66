"""The one reader of every file the toolchain and the policy pack are given: stack files and Pulumi.yaml (through
the toolchain's plan/yamlfile.py), `--rates`, `--quotas`, `--measured` and the policy command's plan JSON. In the
library, which both may import (neither imports the other).

A file input may be a regular file, a pipe or a process substitution (`--quotas <(gcloud beta quotas info list ...)`,
`/dev/fd/N`): a command-line tool reads whatever the shell hands it. Whatever it is, at most `limit` + 1 bytes are
read, so `/dev/zero` or a runaway pipe is refused as too large instead of filling memory; and JSON is checked for its
nesting depth before Python's recursive parser sees it (100,000 nested lists raise RecursionError there). Every
problem is one `InputError` line that names the flag and the file.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# The largest JSON input taken: a plan JSON of a large stack is a few MiB, `gcloud beta quotas info list` for
# compute.googleapis.com a few MiB; anything near this is not one of them.
MAX_JSON_BYTES = 64 << 20
# Deeper than any document the toolchain reads: a plan JSON nests a stack file's values (plan/yamlfile.py MAX_DEPTH,
# 64) about a dozen levels down; far below the recursion limit of Python's json module.
MAX_JSON_DEPTH = 200
_CHUNK = 1 << 20


class InputError(ValueError):
    """A file input that cannot be taken; the message is one line naming the flag and the file."""


def read_bytes(path: Path | str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of `path` (`-`: standard input), so that the caller can tell a file over `limit`
    from one at it without reading an endless one. OSError when it cannot be opened or read."""
    if str(path) == "-":
        return _read_up_to(sys.stdin.buffer, limit + 1)
    with open(path, "rb") as file:
        return _read_up_to(file, limit + 1)


def _read_up_to(stream, size: int) -> bytes:
    """`size` bytes or what there is before the end: a pipe hands its data in pieces, read() of a file at once."""
    parts, left = [], size
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _describe(flag: str, path: Path | str) -> str:
    return f"{flag} {path}" if flag else str(path)


def read_text(path: Path | str, flag: str, limit: int, what: str) -> str:
    """UTF-8 text of a file input of at most `limit` bytes; `what` says what it should be, for the messages."""
    where = _describe(flag, path)
    try:
        data = read_bytes(path, limit)
    except OSError as error:
        raise InputError(f"{where}: cannot read it: {error.strerror or error}") from None
    if len(data) > limit:
        raise InputError(f"{where}: is larger than {_size(limit)}, far more than {what}; refusing to read it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{where}: is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def read_json(path: Path | str, flag: str, what: str, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON document in a file input, at most `limit` bytes and `MAX_JSON_DEPTH` levels deep."""
    where = _describe(flag, path)
    text = read_text(path, flag, limit, what)
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise InputError(f"{where}: nests deeper than {MAX_JSON_DEPTH} levels, far more than {what}; refusing it")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as error:  # JSONDecodeError, or a NaN/Infinity constant
        raise InputError(f"{where}: is not {what}: {_one_line(str(error))}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


# A JSON string (quotes and escapes inside it are not structure), or one bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text, without parsing it (linear, no recursion). Text that is
    not JSON gets a number all the same; the parser refuses it afterwards."""
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def _one_line(text: str) -> str:
    return " ".join(text.split())
