"""A strict reader for Pulumi.yaml and stack files: hostile input is refused fast, one line per problem, never a crash.

`yaml.safe_load` trusts its input too much for a file that decides whether production is protected: an alias bomb
keeps it busy for minutes, circular aliases and deep nesting end in RecursionError, `!!set`/`!!binary`/`!!timestamp`
build values JSON cannot hold, YAML 1.1 resolution turns `on` into True and `1:20` into 80, and a duplicate key
silently keeps the last value (`deletionProtection: true` then `deletionProtection: false`). `read` parses the file
into PyYAML events (libyaml when present), composes PyYAML nodes itself with the checks below, then turns the nodes
into plain values (dict, list, str, int, float, bool, None). Every problem is a `Problem` whose path is
`FILE:LINE:COLUMN` (1-based), raised together as one `ConfigError`, so the command-line tools print one line each and
exit with status 2.

Refused: files over `MAX_BYTES`, binary (NUL bytes) or non-UTF-8 content, anchors and aliases (a stack file has no
use for them), every explicit tag (`!!str` included), merge keys (`<<`), duplicate keys at any depth, mapping keys
that are not strings, nesting deeper than `MAX_DEPTH`, more than one document, and plain scalars that YAML 1.2 and
Pulumi's own reader would read differently (see `_resolve_plain`).
"""

from __future__ import annotations

import gc
import math
import re
from pathlib import Path
from typing import Any

import yaml
from ray_tpu_gke import inputfile
from ray_tpu_gke.spec.problems import ConfigError, Problem
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner

MAX_BYTES = 1 << 20  # stack files are a few KiB; anything near this is not a stack file
MAX_DEPTH = 64  # the deepest legitimate path (rayServices[].serveConfig...) is about 12 levels
MAX_PROBLEMS = 20  # then stop: the first ones are enough to fix the file


class _PurePythonParser(Reader, Scanner, Parser):
    """PyYAML's own parser, for an installation without libyaml: the same events, about ten times slower."""

    def __init__(self, stream: str):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


try:  # libyaml parses 1 MiB in about 0.2 s; it takes the UTF-8 bytes and counts error offsets in bytes
    from yaml._yaml import CParser as _Parser

    _PARSER_TAKES_BYTES = True
except ImportError:  # pragma: no cover - PyYAML's wheels ship libyaml
    _Parser = _PurePythonParser
    _PARSER_TAKES_BYTES = False

_SURROGATE = re.compile("[\ud800-\udfff]")
_INVALID = "!invalid"  # tag of a placeholder node where a problem was reported (an alias): read as None, unchecked
_YAML_TAG_PREFIX = "tag:yaml.org,2002:"


class _Fatal(Exception):
    """A problem after which the rest of the file cannot be read sensibly."""


def read(path: Path) -> Any:
    """The single YAML document in `path` as plain values (None when empty). ConfigError on any problem; OSError when
    the file cannot be read at all."""
    return loads(inputfile.read_bytes(path, MAX_BYTES), str(path))


def loads(data: bytes, name: str) -> Any:
    """`read` on bytes already in memory; `name` names the file in every problem."""
    reader = _Reader(data, name)
    collecting = gc.isenabled()
    gc.disable()  # the cyclic collector rescans every node made so far: 1 MiB took 3 s with it, 0.8 s without
    try:
        reader.check_text()
        node = reader.compose()
        value = None if node is None else reader.value(node, 1)
    except _Fatal:
        pass
    finally:
        if collecting:
            gc.enable()
    if reader.problems:
        raise ConfigError(reader.sorted_problems())
    return value


# YAML 1.2.2, 10.3.2 "Tag Resolution" of the core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution): a plain
# scalar is null, bool, int or float only when it matches one of these, otherwise it is a string. So, unlike
# PyYAML's YAML 1.1 resolver, `yes`/`no`/`on`/`off` are strings, `1:20` is a string (no base 60), and there is no
# implicit timestamp type. ASCII classes only: Python's \d would accept other scripts' digits.
_CORE_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_CORE_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_CORE_INT10 = re.compile(r"[-+]?[0-9]+")
_CORE_INT8 = re.compile(r"0o[0-7]+")
_CORE_INT16 = re.compile(r"0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_CORE_INF = {
    ".inf": math.inf,
    ".Inf": math.inf,
    ".INF": math.inf,
    "+.inf": math.inf,
    "+.Inf": math.inf,
    "+.INF": math.inf,
    "-.inf": -math.inf,
    "-.Inf": -math.inf,
    "-.INF": -math.inf,
}
_CORE_NAN = frozenset({".nan", ".NaN", ".NAN"})


def _core(text: str) -> Any:
    if text in _CORE_NULL:
        return None
    if text in _CORE_BOOL:
        return _CORE_BOOL[text]
    if _CORE_INT10.fullmatch(text):
        return int(text)
    if _CORE_INT8.fullmatch(text):
        return int(text[2:], 8)
    if _CORE_INT16.fullmatch(text):
        return int(text[2:], 16)
    if _CORE_FLOAT.fullmatch(text):
        return float(text)
    if text in _CORE_INF:
        return _CORE_INF[text]
    if text in _CORE_NAN:
        return math.nan
    return text


# Pulumi reads stack files with gopkg.in/yaml.v3 (v3.0.1; sdk/go/common/encoding/marshal.go) into `any`
# (config/object.go). yaml.v3's resolve() (resolve.go) follows the core schema for null, bool and floats but also:
# removes every `_` and parses ints with Go's strconv.ParseInt(s, 0, 64), so `1_000` is 1000, `017` is octal 15,
# `0b101` is 5, `-0x1F` is -31; reads ints past 64 bits as floats; leaves floats that overflow (`1e400`) as strings;
# and reads `2024-01-01` as a time.Time, which Pulumi then stores as the text "2024-01-01 00:00:00 +0000 UTC"
# (object.go: unmarshalObject). Where the two readings differ the plan could not show what `pulumi up` would get, so
# the scalar is refused and must be quoted or written plainly; a timestamp-looking scalar too (quoted, both read the
# same text). yaml.v3
# also refuses duplicate keys, as YAML requires (decode.go: `mapping key "x" already defined at line N`), and takes a
# plain `<<` key as a merge.
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_GO_DOT_FLOAT = re.compile(r"\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?")
_GO_TIMESTAMP = re.compile(r"[0-9]{4}-")
_TIMESTAMP = object()  # yaml.v3 reads a timestamp here


def _go_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 0, 64), falling back to ParseUint (which takes no sign), as yaml.v3 does."""
    if not _GO_INT.fullmatch(text):
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    base = {"x": 16, "o": 8, "b": 2}.get(digits[1:2].lower(), 8) if digits[0] == "0" and len(digits) > 1 else 10
    if base != 10 and digits[1] in "xXoObB":
        digits = digits[2:]
    value = sign * int(digits, base)
    if -(1 << 63) <= value < (1 << 63) or (text[0] not in "+-" and 0 <= value < (1 << 64)):
        return value
    return None


def _go_float(text: str) -> float | None:
    value = float(text)
    return None if math.isinf(value) else value  # Go's ParseFloat fails with ErrRange on overflow


def _yaml_v3(text: str) -> Any:
    """What yaml.v3's resolve() makes of an untagged plain scalar (decoded into `any`)."""
    if text in _CORE_NULL:
        return None
    if text in _CORE_BOOL:
        return _CORE_BOOL[text]
    if text in _CORE_INF:
        return _CORE_INF[text]
    if text in _CORE_NAN:
        return math.nan
    if text[:1] == ".":
        if _GO_DOT_FLOAT.fullmatch(text):
            value = _go_float(text.replace("_", ""))
            if value is not None:
                return value
        return text
    if text[:1] in ("+", "-") or text[:1].isascii() and text[:1].isdigit():
        if _GO_TIMESTAMP.match(text) and _is_timestamp(text):
            return _TIMESTAMP
        plain = text.replace("_", "")
        value = _go_int(plain)
        if value is not None:
            return value
        if _CORE_FLOAT.fullmatch(plain):  # yaml.v3's yamlStyleFloat is the core schema's float pattern
            value = _go_float(plain)
            return text if value is None else value
    return text


# yaml.v3's allowedTimestampFormats: "2006-1-2T15:4:5.999999999Z07:00", the same with a lowercase t, "2006-1-2
# 15:4:5.999999999" and "2006-1-2" (Go layouts: one- or two-digit month, day and time fields).
_TIMESTAMP_FORMATS = (
    re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"),
    re.compile(
        r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?"
        r"(Z|[-+][0-9]{2}:[0-9]{2})"
    ),
    re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2} [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?"),
)


def _is_timestamp(text: str) -> bool:
    return any(pattern.fullmatch(text) for pattern in _TIMESTAMP_FORMATS)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _resolve_plain(text: str) -> tuple[Any, str | None]:
    """The value of an untagged plain scalar, and why it is refused (None when it is not)."""
    core, go = _core(text), _yaml_v3(text)
    if go is _TIMESTAMP:
        return text, (
            f"{_show(text)} is text in YAML 1.2 but a timestamp to Pulumi's reader (yaml.v3), which stores "
            "it reformatted; quote it"
        )
    if _same(core, go):
        return core, None
    return core, (
        f"{_show(text)} is {_describe(core)} in YAML 1.2 but {_describe(go)} to Pulumi's reader (yaml.v3); "
        f"quote it if it is text, or write the number in plain decimal"
    )


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return "an integer beyond 64 bits" if not -(1 << 63) <= value < 1 << 64 else f"the integer {value}"
    return f"the float {value!r}"


def _show(text: str, limit: int = 60) -> str:
    """A value quoted on one line: control characters and line or paragraph separators escaped, long text cut."""
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return '"' + (shown if len(shown) <= limit else shown[: limit - 3] + "...") + '"'


def _one_line(text: str) -> str:
    return " ".join("".join(c if c.isprintable() or c == "\n" else "?" for c in str(text)).split())


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG_PREFIX) :] if tag.startswith(_YAML_TAG_PREFIX) else tag


class _Reader:
    """Checks the text, composes PyYAML nodes from the parser's events, then builds plain values from the nodes."""

    def __init__(self, data: bytes, name: str):
        self.data = data
        self.name = name
        self.text = ""
        self.problems: list[Problem] = []
        self.positions: list[tuple[int, int]] = []  # of each problem, to report them in the file's order
        self.anchors_reported = False

    # Problems ---------------------------------------------------------------------------------------------------

    def problem(self, mark, message: str) -> None:
        where = self.name if mark is None else f"{self.name}:{mark.line + 1}:{mark.column + 1}"
        if len(self.problems) == MAX_PROBLEMS:
            self.problems.append(Problem(self.name, f"more problems not shown; fix these {MAX_PROBLEMS} first"))
            self.positions.append((1 << 62, 0))
            raise _Fatal()
        self.problems.append(Problem(where, _one_line(message)))
        self.positions.append((-1, -1) if mark is None else (mark.line, mark.column))

    def sorted_problems(self) -> list[Problem]:
        order = sorted(range(len(self.problems)), key=lambda i: self.positions[i])
        return [self.problems[i] for i in order]

    def fatal(self, mark, message: str):
        self.problem(mark, message)
        raise _Fatal()

    def _line_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset in the decoded text."""
        before = self.text[:offset]
        line = before.count("\n") + 1
        return line, offset - (before.rfind("\n") + 1) + 1

    # The text ---------------------------------------------------------------------------------------------------

    def check_text(self) -> None:
        data = self.data
        if len(data) > MAX_BYTES:
            self.fatal(
                None, f"is larger than {MAX_BYTES // (1 << 20)} MiB, far more than any stack file; refusing to read it"
            )
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            self.fatal(None, "is UTF-16 text; save it as UTF-8")
        nul = data.find(b"\0")
        if nul >= 0:
            self.text = data[:nul].decode("utf-8", errors="replace")
            line, column = self._line_column(len(self.text))
            self.fatal(None, f"is binary, not YAML text (a NUL byte at line {line}, column {column})")
        try:
            self.text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            self.text = data[: error.start].decode("utf-8", errors="replace")
            line, column = self._line_column(len(self.text))
            self.fatal(
                None,
                f"is not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column {column}); save it as UTF-8",
            )

    # Events to nodes --------------------------------------------------------------------------------------------

    def compose(self) -> Node | None:
        try:
            self.parser = _Parser(self.data if _PARSER_TAKES_BYTES else self.text)  # the Python one reads at once
            self.parser.get_event()  # stream start
            if self.parser.check_event(StreamEndEvent):
                return None
            self.parser.get_event()  # document start
            node = self.node(1)
            self.parser.get_event()  # document end
            if not self.parser.check_event(StreamEndEvent):
                self.fatal(
                    self.parser.peek_event().start_mark,
                    "holds more than one YAML document; a stack file is a single mapping",
                )
            return node
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            reason = error.problem or error.context or "syntax error"
            if error.context and error.problem and error.context_mark:
                reason = f"{reason} ({error.context} at line {error.context_mark.line + 1})"
            self.fatal(mark, f"is not valid YAML: {reason}")
        except yaml.reader.ReaderError as error:
            # libyaml counts the offset in bytes of the UTF-8 input, the Python reader in characters
            offset = (
                len(self.data[: error.position].decode("utf-8", errors="replace"))
                if _PARSER_TAKES_BYTES
                else error.position
            )
            line, column = self._line_column(offset)
            character = error.character if isinstance(error.character, int) else ord(error.character or "?")
            self.fatal(
                None,
                f"is not valid YAML: control character U+{character:04X} at line {line}, column {column}"
                "; YAML text may hold only printable characters, tabs and line breaks",
            )
        except yaml.YAMLError as error:  # any other parser error: still one line
            self.fatal(None, f"is not valid YAML: {error}")

    def node(self, depth: int) -> Node:
        parser = self.parser
        event = parser.peek_event()
        if depth > MAX_DEPTH:
            self.fatal(event.start_mark, f"nests deeper than {MAX_DEPTH} levels; a stack file needs far fewer")
        if isinstance(event, AliasEvent):
            parser.get_event()
            self.refuse_anchor(event.start_mark, f"alias *{event.anchor}")
            return ScalarNode(_INVALID, "", event.start_mark, event.end_mark)
        if event.anchor is not None:
            self.refuse_anchor(event.start_mark, f"anchor &{event.anchor}")
        if event.tag is not None:
            self.problem(
                event.start_mark,
                f"explicit YAML tag {_show(_tag_name(event.tag))} is not allowed in a stack "
                "file; write plain values, quoted where they are text",
            )
        if isinstance(event, ScalarEvent):
            parser.get_event()
            return ScalarNode(None, event.value, event.start_mark, event.end_mark, style=event.style or None)
        if isinstance(event, SequenceStartEvent):
            parser.get_event()
            items = []
            while not parser.check_event(SequenceEndEvent):
                items.append(self.node(depth + 1))
            end = parser.get_event()
            return SequenceNode(None, items, event.start_mark, end.end_mark)
        if isinstance(event, MappingStartEvent):
            parser.get_event()
            pairs = []
            while not parser.check_event(MappingEndEvent):
                key = self.node(depth + 1)
                pairs.append((key, self.node(depth + 1)))
            end = parser.get_event()
            return MappingNode(None, pairs, event.start_mark, end.end_mark)
        self.fatal(event.start_mark, f"is not valid YAML: unexpected {type(event).__name__}")  # pragma: no cover

    def refuse_anchor(self, mark, what: str) -> None:
        if not self.anchors_reported:
            self.anchors_reported = True
            self.problem(
                mark,
                f"{what}: anchors and aliases are not allowed in a stack file (they have no use there "
                "and can expand without bound); write the values out",
            )

    # Nodes to values --------------------------------------------------------------------------------------------

    def value(self, node: Node, depth: int) -> Any:
        if node.tag == _INVALID:
            return None
        if isinstance(node, ScalarNode):
            if node.style is not None:  # quoted, literal or folded: always a string
                return self.text_of(node)
            value, refused = _resolve_plain(node.value)
            if refused:
                self.problem(node.start_mark, refused)
            return value
        if isinstance(node, SequenceNode):
            return [self.value(item, depth + 1) for item in node.value]
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node)
            value = self.value(value_node, depth + 1)
            if key is None:
                continue
            if key in first_line:
                self.problem(
                    key_node.start_mark,
                    f"duplicate key {_show(key)} (first at line {first_line[key]}, again at line "
                    f"{key_node.start_mark.line + 1}); YAML forbids it, Pulumi refuses it, and keeping either "
                    "one silently could turn a setting off",
                )
                continue
            first_line[key] = key_node.start_mark.line + 1
            result[key] = value
        return result

    def text_of(self, node: ScalarNode) -> str:
        """A quoted scalar's text. libyaml refuses a `\\ud800` escape; PyYAML's own parser would make a lone surrogate,
        which no output can encode."""
        if _SURROGATE.search(node.value):
            self.problem(
                node.start_mark,
                f"{_show(node.value)} escapes a lone UTF-16 surrogate, which is not a "
                "character; write the character itself",
            )
        return node.value

    def key(self, node: Node) -> str | None:
        """The string a mapping key names, or None after reporting why it is refused."""
        if node.tag == _INVALID:
            return None
        if not isinstance(node, ScalarNode):
            kind = "a list" if isinstance(node, SequenceNode) else "a mapping"
            self.problem(node.start_mark, f"a mapping key is {kind}; keys must be strings")
            return None
        if node.style is not None:
            return self.text_of(node)
        if node.value == "<<":
            self.problem(node.start_mark, 'merge keys ("<<") are not allowed in a stack file; write the keys out')
            return None
        value, refused = _resolve_plain(node.value)
        if refused:
            self.problem(node.start_mark, refused)
            return None
        if not isinstance(value, str):
            self.problem(
                node.start_mark,
                f"mapping key {_show(node.value)} is {_describe(value)}, not a string; quote it if it is meant as text",
            )
            return None
        return value
