"""Issue #17: hostile stack files never crash or hang the plan.

Every hostile file ends in exit status 2 with one line per problem on stderr naming the file (and line:column where
known), never a traceback, and never hangs: each read runs under a generous deadline (HANG_GUARD_S), as the readers
that choked on these files took minutes. How fast they are refused is measured, not asserted: `make bench`
(benchmarks/hostile.py) reports it. plan/yamlfile.py is the strict reader; these tests run it through the real
command line (a few, in a subprocess) and in-process (the rest), then fuzz the committed stacks.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, deadline, problems

from plan import stackfile, yamlfile
from ray_tpu_gke.spec.problems import ConfigError

PYTHON = sys.executable  # the interpreter running the tests, wherever its venv lives
CLI_TIMEOUT_S = 180  # a whole `python -m plan` in a subprocess, the interpreter's start and a plan included

ALIAS_BOMB = (
    "config:\n"
    "  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"  {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
              for prev, name in zip("abcdefgh", "bcdefghi"))
    + "  ray-tpu-gke:team: *i\n"
)

MINIMAL = (
    "config:\n"
    "  gcp:project: acme-ml-dev\n"
    "  ray-tpu-gke:cluster:\n"
    "    name: ray-tpu-dev\n"
    "    location: us-east5-b\n"
    "    deletionProtection: true\n"
)


def write(tmp_path: Path, content: str | bytes, name: str = "Pulumi.hostile.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def run_cli(path: Path, stack: str = "dev") -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "plan", stack, "--config-file", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=CLI_TIMEOUT_S)


def assert_rejected(result: subprocess.CompletedProcess, path: Path, lines: int) -> list[str]:
    """Exit 2, `lines` lines on stderr, each naming the file, nothing on stdout, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stdout == ""
    got = result.stderr.splitlines()
    assert len(got) == lines, got
    assert all(line.startswith(str(path)) for line in got), got
    return got


# Through the real command line --------------------------------------------------------------------------------------


def test_alias_bomb_is_refused_at_once_by_the_cli(tmp_path):
    path = write(tmp_path, ALIAS_BOMB)
    with deadline(), pytest.raises(ConfigError):  # yaml.safe_load + json.dumps of this took minutes
        stackfile.load(stack="dev", config_file=path)
    (line,) = assert_rejected(run_cli(path), path, lines=1)
    assert line.startswith(f"{path}:2:6: anchor &a: anchors and aliases are not allowed"), line


def test_binary_file_is_refused_by_the_cli(tmp_path):
    path = write(tmp_path, b"config:\n  gcp:project: x\n\x00\x01\x02\xff\xfe" + bytes(range(256)))
    (line,) = assert_rejected(run_cli(path), path, lines=1)
    assert line == f"{path}: is binary, not YAML text (a NUL byte at line 3, column 1)"


def test_non_utf8_file_is_refused_by_the_cli(tmp_path):
    path = write(tmp_path, MINIMAL.encode() + "  ray-tpu-gke:team: équipe\n".encode("latin-1"))
    (line,) = assert_rejected(run_cli(path), path, lines=1)
    assert line == f"{path}: is not UTF-8 text (byte 0xe9 at line 7, column 21); save it as UTF-8"


def test_duplicate_deletion_protection_is_refused_by_the_cli(tmp_path):
    """The last value used to win silently: production protection turned off by a second line."""
    path = write(tmp_path, MINIMAL + "    deletionProtection: false\n")
    (line,) = assert_rejected(run_cli(path, stack="prod"), path, lines=1)
    assert line.startswith(f'{path}:7:5: duplicate key "deletionProtection" (first at line 6, again at line 7)')


def test_several_problems_one_line_each_through_the_cli(tmp_path):
    path = write(tmp_path, MINIMAL + "    deletionProtection: false\n  ray-tpu-gke:team: !!binary aGk=\n"
                                     "  ray-tpu-gke:costCenter: !!set {a}\n")
    lines = assert_rejected(run_cli(path), path, lines=3)
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:7:5", f"{path}:8:21", f"{path}:9:27"]


# In-process ---------------------------------------------------------------------------------------------------------


def test_circular_alias(tmp_path):
    (line,) = problems(write(tmp_path, "config: &c\n  gcp:project: x\n  loop: *c\n"), "dev", one_line=True)
    assert line.endswith("write the values out") and ":1:9: anchor &c" in line


def test_a_lone_alias_is_refused_too(tmp_path):
    (line,) = problems(write(tmp_path, "config:\n  gcp:project: *nowhere\n"), "dev", one_line=True)
    assert ":2:16: alias *nowhere: anchors and aliases are not allowed" in line


@pytest.mark.parametrize("tag", ["!!set", "!!binary", "!!timestamp", "!!str", "!!int", "!!float", "!!map", "!!omap",
                                 "!!python/object:os.system", "!local", "!"])
def test_every_explicit_tag_is_refused(tmp_path, tag):
    value = {"!!set": "{a, b}", "!!binary": "aGVsbG8=", "!!timestamp": "'2024-01-01'", "!!int": "3",
             "!!float": "1.5", "!!map": "{a: 1}", "!!omap": "[a: 1]"}.get(tag, "text")
    path = write(tmp_path, f"config:\n  gcp:project: acme\n  ray-tpu-gke:team: {tag} {value}\n")
    (line,) = problems(path, "dev", one_line=True)
    assert line.startswith(f'{path}:3:21: explicit YAML tag "{tag}" is not allowed in a stack file'), line


def test_yaml_1_1_scalars_stay_strings_as_in_yaml_1_2_and_pulumi(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: acme\n  ray-tpu-gke:x:\n"
                           "    date: '2024-01-01'\n    stamp: '2024-01-01T10:00:00Z'\n    yes: yes\n    on: on\n"
                           "    off: OFF\n    sexagesimal: 1:20\n    y: y\n    n: No\n"
                           "    t: true\n    f: False\n    nil: ~\n    null2: null\n    empty:\n"
                           "    int: 42\n    neg: -7\n    hex: 0x1F\n    oct: 0o17\n    float: 1.5\n    exp: 1e3\n"
                           "    inf: -.inf\n    quoted: '017'\n    block: |\n      text\n")
    values, _ = stackfile.load("dev", config_file=path)
    got = values["ray-tpu-gke:x"]
    assert got == {"date": "2024-01-01", "stamp": "2024-01-01T10:00:00Z", "yes": "yes", "on": "on", "off": "OFF",
                   "sexagesimal": "1:20", "y": "y", "n": "No", "t": True, "f": False, "nil": None, "null2": None,
                   "empty": None, "int": 42, "neg": -7, "hex": 31, "oct": 15, "float": 1.5, "exp": 1000.0,
                   "inf": -math.inf, "quoted": "017", "block": "text\n"}
    assert all(type(got[k]) is str for k in ("date", "stamp", "yes", "on", "sexagesimal"))
    assert type(got["int"]) is int and type(got["t"]) is bool and type(got["exp"]) is float


def test_an_unquoted_timestamp_is_refused_as_pulumi_would_reformat_it(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: acme-ml-dev\n  ray-tpu-gke:environment: 2024-01-01\n")
    with pytest.raises(ConfigError) as error:
        stackfile.load("dev", config_file=path)
    (problem,) = error.value.problems
    assert "a timestamp to Pulumi's reader (yaml.v3)" in str(problem) and "quote it" in str(problem)


@pytest.mark.parametrize("text, why", [
    ("017", "is the integer 17 in YAML 1.2 but the integer 15 to Pulumi's reader (yaml.v3)"),
    ("1_000", "is a string in YAML 1.2 but the integer 1000 to Pulumi's reader (yaml.v3)"),
    ("0b101", "is a string in YAML 1.2 but the integer 5 to Pulumi's reader (yaml.v3)"),
    ("-0x10", "is a string in YAML 1.2 but the integer -16 to Pulumi's reader (yaml.v3)"),
    ("99999999999999999999", "is an integer beyond 64 bits in YAML 1.2 but the float 1e+20 to Pulumi's reader"),
    ("1e400", "is the float inf in YAML 1.2 but a string to Pulumi's reader (yaml.v3)"),
])
def test_scalars_yaml_1_2_and_pulumi_read_differently_are_refused(tmp_path, text, why):
    (line,) = problems(write(tmp_path, f"config:\n  gcp:project: acme\n  ray-tpu-gke:count: {text}\n"), "dev",
                       one_line=True)
    assert f':3:22: "{text}" {why}' in line, line


def test_deep_nesting(tmp_path):
    depth = 100_000
    path = write(tmp_path, "config:\n  gcp:project: " + "[" * depth + "]" * depth + "\n")
    with deadline():
        (line,) = problems(path, "dev", one_line=True)
    assert line.startswith(f"{path}:2:") and "nests deeper than 64 levels" in line
    block = "config:\n" + "".join("  " * level + f"k{level}:\n" for level in range(1, 200)) + "  " * 200 + "v: 1\n"
    (line,) = problems(write(tmp_path, block, "block.yaml"), "dev", one_line=True)
    assert "nests deeper than 64 levels" in line


def test_nesting_within_the_limit_is_read(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: acme\n  ray-tpu-gke:x: " + "[" * 60 + "]" * 60 + "\n")
    values, _ = stackfile.load("dev", config_file=path)
    assert values["ray-tpu-gke:x"] is not None


def test_duplicate_key_at_top_level(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: a\n  gcp:project: b\nconfig:\n  gcp:project: c\n")
    assert problems(path, "dev", one_line=True) == [
        f'{path}:3:3: duplicate key "gcp:project" (first at line 2, again at line 3); YAML forbids it, Pulumi '
        "refuses it, and keeping either one silently could turn a setting off",
        f'{path}:4:1: duplicate key "config" (first at line 1, again at line 4); YAML forbids it, Pulumi refuses '
        "it, and keeping either one silently could turn a setting off",
    ]


def test_duplicate_key_deep_inside_a_slice(tmp_path):
    path = write(tmp_path, MINIMAL + "  ray-tpu-gke:tpuSlices:\n    - name: a\n      generation: v6e\n"
                                     "    - name: b\n      autoscaling: {enabled: true, minNodes: 0, enabled: false}\n"
                                     "      generation: v6e\n      'generation': v5e\n")
    lines = problems(path, "dev", one_line=True)
    assert [line.split(": duplicate key ")[0] for line in lines] == [f"{path}:11:49", f"{path}:13:7"], lines
    assert '"enabled" (first at line 11, again at line 11)' in lines[0]
    assert '"generation" (first at line 12, again at line 13)' in lines[1]


def test_non_string_keys(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: a\n  1: x\n  true: y\n  ~: z\n  ? [a, b]\n  : w\n"
                           "  ? {a: 1}\n  : v\n  <<: {deletionProtection: false}\n  '1': quoted keys are strings\n")
    lines = problems(path, "dev", one_line=True)
    assert [line.split(": ", 1)[1] for line in lines] == [
        'mapping key "1" is the integer 1, not a string; quote it if it is meant as text',
        'mapping key "true" is the boolean true, not a string; quote it if it is meant as text',
        'mapping key "~" is null, not a string; quote it if it is meant as text',
        "a mapping key is a list; keys must be strings",
        "a mapping key is a mapping; keys must be strings",
        'merge keys ("<<") are not allowed in a stack file; write the keys out',
    ]
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:{n}" for n in
                                                           ("3:3", "4:3", "5:3", "6:5", "8:5", "10:3")]


def test_huge_file_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "Pulumi.huge.yaml"
    with open(path, "wb") as file:
        file.write(MINIMAL.encode())
        file.write(b"#" * 1024 + b"\n")
        file.truncate(200 * (1 << 20))  # a sparse 200 MiB file
    with deadline():  # refused from its size, never read
        assert problems(path, "dev", one_line=True) == [
            f"{path}: is larger than 1 MiB, far more than any stack file; refusing to read it"]


def test_a_file_just_under_the_limit_is_read(tmp_path):
    entries = "".join(f"    key{i}: {{a: [1, 2, 'x'], b: value{i}}}\n" for i in range(24_000))
    text = "config:\n  gcp:project: acme\n  ray-tpu-gke:big:\n" + entries
    text = text[:text.rfind("\n    key", 0, yamlfile.MAX_BYTES)] + "\n"
    path = write(tmp_path, text)
    with deadline():
        values, _ = stackfile.load("dev", config_file=path)
    assert len(values["ray-tpu-gke:big"]) > 20_000


@pytest.mark.parametrize("content, expected", [
    ("config:\n  gcp:project: [unclosed\n  x: y\n",
     ":3:4: is not valid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 2)"),
    ("config:\n  a: 1\n - b\n", ":3:2: is not valid YAML: did not find expected key (while parsing a block mapping"),
    ("config:\n\ta: 1\n", ":2:1: is not valid YAML: found character that cannot start any token"),
    ("config: {}\n---\nconfig: {}\n", ":2:1: holds more than one YAML document; a stack file is a single mapping"),
    ("config:\n  a: x\x07y\n",
     ": is not valid YAML: control character U+0007 at line 2, column 7; YAML text may hold only printable"),
    ("a: 1\n".encode("utf-16"), ": is UTF-16 text; save it as UTF-8"),
])
def test_yaml_errors_are_one_line_with_line_and_column(tmp_path, content, expected):
    path = write(tmp_path, content)
    (line,) = problems(path, "dev", one_line=True)
    assert line.startswith(f"{path}{expected}"), line


def test_values_are_shown_escaped_on_one_line(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: a\n  \"x\\u2028y\\nz\": 1\n  \"x\\u2028y\\nz\": 2\n")
    (line,) = problems(path, "dev", one_line=True)
    assert 'duplicate key "x\\u2028y\\nz"' in line and len(line.splitlines()) == 1


def test_many_problems_are_capped(tmp_path):
    path = write(tmp_path, "config:\n" + "".join(f"  k{i}: !!str {i}\n" for i in range(500)))
    lines = problems(path, "dev", one_line=True)
    assert len(lines) == yamlfile.MAX_PROBLEMS + 1
    assert lines[-1] == f"{path}: more problems not shown; fix these {yamlfile.MAX_PROBLEMS} first"


def test_pulumi_yaml_is_read_just_as_strictly(tmp_path, monkeypatch):
    (tmp_path / "stacks").mkdir()
    write(tmp_path, "name: p\nstackConfigDir: stacks\nconfig:\n  ray-tpu-gke:team: {type: string, default: a}\n"
                    "  ray-tpu-gke:team: {type: string, default: b}\n", "Pulumi.yaml")
    write(tmp_path / "stacks", MINIMAL, "Pulumi.dev.yaml")
    monkeypatch.setattr(stackfile, "ROOT", tmp_path)
    with pytest.raises(ConfigError) as error:
        stackfile.load("dev")
    assert [str(p) for p in error.value.problems] == [
        f'{tmp_path / "Pulumi.yaml"}:5:3: duplicate key "ray-tpu-gke:team" (first at line 4, again at line 5); '
        "YAML forbids it, Pulumi refuses it, and keeping either one silently could turn a setting off"]


def test_committed_stacks_read_as_before(monkeypatch):
    """Same values as yaml.safe_load gave: project defaults from Pulumi.yaml, stack values over them, secure values
    as "[secret]"."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    defaults = {k: v["default"] for k, v in project["config"].items()}
    for stack in stackfile.stacks():
        document = yaml.safe_load(stackfile.stack_file(stack).read_text())
        expected = {**defaults, **{k if ":" in k else f"ray-tpu-gke:{k}": v for k, v in document["config"].items()}}
        assert stackfile.load(stack) == (expected, []), stack


def test_secure_values_and_missing_files_as_before(tmp_path):
    path = write(tmp_path, "config:\n  gcp:project: acme\n  ray-tpu-gke:token:\n    secure: AAABAJ\n")
    values, secrets = stackfile.load("dev", config_file=path)
    assert values["ray-tpu-gke:token"] == stackfile.SECRET_PLACEHOLDER and secrets == ["ray-tpu-gke:token"]
    assert values["ray-tpu-gke:team"] == "ml-platform"  # the project default
    with pytest.raises(stackfile.StackNotFound):
        stackfile.load("dev", config_file=tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="must be a mapping with a `config:` mapping"):
        stackfile.load("dev", config_file=write(tmp_path, "- a\n- b\n"))


PARSER_CASES = [
    ALIAS_BOMB, MINIMAL + "    deletionProtection: false\n", "config:\n  a: !!set {x}\n  b: &x 1\n  c: *x\n",
    "config:\n  1: a\n  <<: {b: 1}\n  c: 017\n  d: 2024-01-01\n  e: on\n", "config:\n  a: x\x07y\n",
    "config:\n  a: " + "[" * 100 + "]" * 100 + "\n", "config: {}\n---\n", "\ufeffconfig:\n  \u00e9t\u00e9: \U0001f680\n",
    "config:\n  a: [unclosed\n", "config:\n  a: 1\n - b\n", "config:\n\ta: 1\n", "",
]


@pytest.mark.parametrize("content", PARSER_CASES)
def test_pure_python_parser_reads_the_same(tmp_path, monkeypatch, content):
    """Without libyaml, PyYAML's own parser gives the same values and problems (syntax errors in its own words)."""
    def outcome():
        try:
            return yamlfile.loads(content.encode("utf-8"), "F")
        except ConfigError as error:
            return [str(problem) for problem in error.problems]

    with_libyaml = outcome()
    monkeypatch.setattr(yamlfile, "_Parser", yamlfile._PurePythonParser)
    monkeypatch.setattr(yamlfile, "_PARSER_TAKES_BYTES", False)
    without = outcome()
    if isinstance(with_libyaml, list) and "is not valid YAML: " in with_libyaml[0] and "control" not in with_libyaml[0]:
        assert len(without) == 1 and without[0].startswith("F:") and "is not valid YAML: " in without[0], without
        assert without[0].split(": ")[0] == with_libyaml[0].split(": ")[0] or content == "config:\n  a: 1\n - b\n"
    else:
        assert without == with_libyaml


def test_a_surrogate_escape_is_refused_by_either_parser(monkeypatch):
    content = b'config:\n  a: "x\\ud800"\n'
    with pytest.raises(ConfigError, match="F:2:10: is not valid YAML: found invalid Unicode character escape"):
        yamlfile.loads(content, "F")
    monkeypatch.setattr(yamlfile, "_Parser", yamlfile._PurePythonParser)
    monkeypatch.setattr(yamlfile, "_PARSER_TAKES_BYTES", False)
    with pytest.raises(ConfigError, match=r'F:2:6: "x\\ud800" escapes a lone UTF-16 surrogate'):
        yamlfile.loads(content, "F")


# Crashes the fuzz test found in code this file does not own --------------------------------------------------------

def test_a_tpu_slice_name_that_is_not_a_string_is_a_config_error(tmp_path):
    """Found by the fuzz test below: components/spec/cross_section.py (check_ray_objects) collected the names of
    unparsable tpuSlices entries into a set, so a name that is a list or a mapping raised TypeError: unhashable type."""
    path = write(tmp_path, "config:\n  gcp:project: acme-ml-dev\n  ray-tpu-gke:cluster:\n    name: ray-tpu-dev\n"
                           "    location: us-east5-b\n  ray-tpu-gke:tpuSlices:\n    - name: [v6e-4]\n"
                           "    - name: {a: 1}\n")
    lines = problems(path, "dev", one_line=True)
    assert any(line.startswith("ray-tpu-gke:tpuSlices[0].name") for line in lines), lines


# Fuzzing the committed stacks ---------------------------------------------------------------------------------------

SEED = 17
MUTANTS = 400
TAGS = ["!!set", "!!binary", "!!timestamp", "!!python/object:os.system", "!foo", "!!str", "!!int", "!!float",
        "!!map", "!!seq", "!!null", "!!bool", "!!omap", "!!pairs", "!", "!<tag:yaml.org,2002:str>"]
ODD_UNICODE = ["\u202e", "\u200b", "\ufeff", "\U0001f680", "e\u0301", "\u2028", "\u0085", "\uff11\uff16", "\u0430",
               "\u00a0", "\x7f", "\t", "\U000e0041", "\ufffd", "\x00", "\ud800"]
SCALARS = ["10000000000000000000000000000000", str(2**63), str(-2**63 - 1), str(2**64), "1e308", "1e400", ".nan",
           ".inf", "-.inf", "017", "0x10", "1_0", "0b11", "-0", "1.5", "2024-01-01", "1:20", "yes", "off", "~", "",
           "99999999999", "-1", "0o777", "4x4x4", "1e-400", "NaN", "+12", "{a: 1}", "[1, 2]", "x", "null", "[]", "{}",
           "true", "0", "-5", "''", '"\\u0000"', "[[[]]]", "{secure: abc}", "{type: string}", "|\n  block",
           ">-\n  folded"]


def _byte_flip(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 5)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _truncate(rng, data):
    return data[:rng.randrange(len(data))]


def _lines(rng, data):
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    operation = rng.choice(["duplicate", "delete", "swap"])
    if operation == "duplicate":
        lines.insert(j, lines[i])
    elif operation == "delete":
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _indentation(rng, data):
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    operation = rng.choice(["deeper", "shallower", "tab"])
    if operation == "deeper":
        lines[i] = b" " * rng.randint(1, 4) + lines[i]
    elif operation == "shallower":
        lines[i] = lines[i][rng.randint(1, 4):] if lines[i].startswith(b" ") else lines[i]
    else:
        lines[i] = b"\t" + lines[i].lstrip(b" ")
    return b"\n".join(lines)


def _value_lines(lines):
    return [i for i, line in enumerate(lines) if b": " in line and not line.lstrip().startswith(b"#")] or [0]


def _inject(rng, data):
    """Tags, anchors, aliases, an alias bomb, a circular alias or a merge key on a `key: value` line."""
    lines = data.split(b"\n")
    spots = _value_lines(lines)
    i = rng.choice(spots)
    head, _, tail = lines[i].partition(b": ")
    indent = head[:len(head) - len(head.lstrip())]
    kind = rng.choice(["tag", "anchor", "alias", "bomb", "circular", "merge"])
    if kind == "tag":
        lines[i] = head + b": " + rng.choice(TAGS).encode() + b" " + tail
    elif kind == "anchor":
        lines[i] = head + b": &a " + tail
    elif kind == "alias":
        lines[i] = head + b": *a"
        j = rng.choice(spots)
        other, _, value = lines[j].partition(b": ")
        lines[j] = other + b": &a " + value
    elif kind == "bomb":
        lines[i] = head + b": &x [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
        for level in range(1, 9):
            lines.insert(i + level, indent + b"b%d: &x [" % level + b", ".join([b"*x"] * 9) + b"]")
    elif kind == "circular":
        lines[i] = head + b": &c [*c]"
    else:
        lines.insert(i, indent + b"<<: {deletionProtection: false}")
    return b"\n".join(lines)


def _scalar(rng, data):
    """A value swapped for another type or an edge-case scalar: mapping, list, huge ints, YAML 1.1 literals."""
    lines = data.split(b"\n")
    i = rng.choice(_value_lines(lines))
    head, _, _ = lines[i].partition(b": ")
    lines[i] = head + b": " + rng.choice(SCALARS).encode()
    return b"\n".join(lines)


def _unicode(rng, data):
    text = data.decode("utf-8")
    i = rng.randrange(len(text))
    return (text[:i] + rng.choice(ODD_UNICODE) + text[i:]).encode("utf-8", errors="surrogatepass")


def _paths(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, path + (index,))


def _structure(rng, data):
    """Type swaps on the parsed document (mapping <-> list <-> scalar), huge ints, odd unicode, long strings, deep
    nesting, stray keys; written back with yaml.safe_dump."""
    document = yamlfile.loads(data, "mutant")  # ConfigError on an earlier hostile mutation: this one is skipped
    path = rng.choice([p for p, _ in _paths(document) if p])
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    old = parent[path[-1]]
    nested = "leaf"
    for level in range(rng.randint(10, 60)):
        nested = [nested] if level % 2 else {"k": nested}
    parent[path[-1]] = rng.choice([
        list(old.values()) if isinstance(old, dict) else [old],
        {str(i): v for i, v in enumerate(old)} if isinstance(old, list) else {"value": old},
        "scalar",
        rng.choice([10**30, 2**63 - 1, -(2**63), 2**64 - 1, 1e308, -1, 0, 1.5, True, None]),
        rng.choice(ODD_UNICODE[:-2]) + (old if isinstance(old, str) else "x"),
        "x" * rng.choice([64, 1000, 100_000]),
        nested, {}, [], [old, old], {"secure": "AAABA"},
    ])
    if isinstance(parent, dict) and rng.random() < 0.2:
        parent[rng.choice(["typo", "Name", "count ", "", "1"])] = old
    return yaml.safe_dump(document, allow_unicode=rng.random() < 0.5, sort_keys=False).encode("utf-8")


OPERATORS = [_byte_flip, _truncate, _lines, _indentation, _inject, _scalar, _unicode, _structure]


def mutants(seed: int = SEED, count: int = MUTANTS):
    """(index, stack, bytes): the four committed stacks in turn, each mutated by one to three operators."""
    rng = random.Random(seed)
    bases = {stack: stackfile.stack_file(stack).read_bytes() for stack in stackfile.stacks()}
    names = sorted(bases)
    for index in range(count):
        stack = names[index % len(names)]
        data = bases[stack]
        for _ in range(rng.randint(1, 3)):
            operator = rng.choice(OPERATORS)
            try:
                data = operator(rng, data) if data else data
            except (ConfigError, UnicodeError, ValueError, IndexError, TypeError, KeyError, AttributeError):
                continue  # an operator that needs well-formed input skips a broken one
        yield index, stack, data


@pytest.fixture(scope="module")
def fuzz_results(tmp_path_factory):
    """Every mutant through `load_checked`: (index, stack, path, outcome, seconds); outcome is "ok", "invalid",
    "missing" or the traceback of anything else."""
    folder = tmp_path_factory.mktemp("mutants")
    results = []
    for index, stack, data in mutants():
        path = folder / f"Pulumi.{stack}.mutant{index}.yaml"
        path.write_bytes(data)
        start = time.perf_counter()
        try:
            with deadline():
                stackfile.load_checked(stack, config_file=path)
            outcome = "ok"
        except ConfigError as error:
            outcome = "invalid"
            assert error.problems and all("\n" not in str(p) for p in error.problems), (index, error.problems)
        except stackfile.StackNotFound:
            outcome = "missing"
        except Exception as error:  # the point of the test
            outcome = "".join(traceback.format_exception(error))
        results.append((index, stack, path, outcome, time.perf_counter() - start))
    return results


def test_fuzzed_stacks_load_or_raise_config_errors(fuzz_results):
    assert len(fuzz_results) == MUTANTS
    crashes = [(index, path.read_text(errors="replace"), outcome) for index, _, path, outcome, _ in fuzz_results
               if outcome not in ("ok", "invalid", "missing")]
    assert not crashes, f"{len(crashes)} crashes; the first, mutant {crashes[0][0]}:\n{crashes[0][1]}\n{crashes[0][2]}"
    outcomes = {outcome for *_, outcome, _ in fuzz_results}
    assert {"ok", "invalid"} <= outcomes  # the mutations neither all break nor all miss


def test_fuzz_is_deterministic():
    assert [data for *_, data in mutants(count=12)] == [data for *_, data in mutants(count=12)]


def test_fuzzed_stacks_through_the_cli(fuzz_results, capsys):
    """Ten mutants through `python -m plan`'s entry point in-process (the tests above run the real command line in a
    subprocess; an interpreter per mutant proves nothing more): nine that the reader or the validation refuses, and
    one that plans (the whole program under mocks). Each under the hang guard; an exception escaping `main` fails."""
    from plan import __main__ as plan_cli

    refused = [r for r in fuzz_results if r[3] == "invalid"][::25][:9]
    planned = [r for r in fuzz_results if r[3] == "ok"][:1]
    assert len(refused) == 9 and len(planned) == 1
    for index, stack, path, outcome, _ in planned + refused:
        with deadline(CLI_TIMEOUT_S):
            code = plan_cli.main([stack, "--config-file", str(path)])
        out, err = capsys.readouterr()
        assert code in (0, 2), (index, code, err[-3000:])
        assert "Traceback" not in err, (index, err[-3000:])
        assert code == (2 if outcome == "invalid" else 0), (index, err[-3000:])
        assert (out == "") == (code == 2), (index, out[-3000:])  # a refused file prints no plan; a planned one does
