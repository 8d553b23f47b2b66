"""Fuzzing every input a user hands the toolchain finds no traceback and no hang.

Four fuzzers, deterministic (fixed seeds) and bounded (a few hundred runs, seconds in all):

- stack files with a wrong type at every key of the committed stacks in turn (the companion of test_hostile_input.py's
  byte-level and YAML mutants: binary, aliases, tags, deep nesting), each through the whole reader and validation;
- the same stacks with a key deleted, a list entry doubled, or a value another entry holds for that key (a topology
  of another generation, a name taken twice): the right type in the wrong place, through the checks across entries;
- the job result documents and comparison reports `compare --estimate --measured` reads, with a value deleted or of
  another type at any key path;
- command lines of the console script (`ray-tpu-gke plan|compare|policy|diagram`) and of `python -m plan` and
  `python -m plan.compare`, built from hostile values (NaN, infinities, zero, negatives, huge numbers, paths that are
  not files, endless, binary or deeply nested files, an output folder inside a file), run in-process.

Every run ends in exit status 0, 1 or 2 (the documented exit statuses) with no "Traceback" on stderr, under a hang guard. The
program's run under the mocks is the same for the same stack and quotas whatever the flags, so the command-line fuzz
plans each such stack once and hands each run a copy: the flags, not the plan, are what it fuzzes. Larger campaigns
(other seeds, thousands of runs, each in its own process through the installed console script) use the same
generators.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import traceback

import pytest
import yaml
from helpers import HANG_GUARD_S, ROOT, deadline

from plan import harness, stackfile
from ray_tpu_gke.spec.problems import ConfigError

SEED = 39
STACK_RUNS = 300
STRUCTURAL_RUNS = 240
FLAG_RUNS = 120
EXIT_CODES = {0, 1, 2}

# --- stack files: a wrong type at any key ----------------------------------------------------------------------------

WRONG_TYPES = [None, True, 0, -1, 1.5, float("nan"), 10**30, "", "x" * 300, [], [1, "a"], {}, {"k": "v"}, [[[]]],
               {"secure": "AAAB"}, "\u202e", "[secret]"]


def _key_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _key_paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _key_paths(item, path + (index,))


def wrong_type_stacks(seed: int = SEED, count: int = STACK_RUNS):
    """(stack, path, document) with the value at `path` of a committed stack replaced by a value of another type:
    every key path of every stack in turn, the replacement drawn from WRONG_TYPES."""
    rng = random.Random(seed)
    documents = _committed_stacks()
    paths = [(stack, path) for stack, doc in sorted(documents.items()) for path in _key_paths(doc["config"]) if path]
    for index in range(count):
        stack, path = paths[index * 7919 % len(paths)]  # a stride through all of them, prime to their number
        document = copy.deepcopy(documents[stack])
        parent = _at(document["config"], path[:-1])
        parent[path[-1]] = rng.choice([v for v in WRONG_TYPES if type(v) is not type(parent[path[-1]])])
        yield stack, path, document


def load_each(mutants, folder) -> dict[str, int]:
    """Each (stack, what, document) through the reader and the whole validation: how many were admitted and how many
    refused, every refusal one line a problem; a crash fails the test with its traceback."""
    outcomes, crashes = {"ok": 0, "invalid": 0}, []
    for index, (stack, what, document) in enumerate(mutants):
        file = folder / f"Pulumi.{stack}.{index}.yaml"
        file.write_text(yaml.safe_dump(document, allow_unicode=True))
        try:
            with deadline():
                stackfile.load_checked(stack, config_file=file)
            outcomes["ok"] += 1
        except ConfigError as error:
            outcomes["invalid"] += 1
            assert error.problems and all("\n" not in str(p) for p in error.problems), (what, error.problems)
        except Exception as error:  # noqa: BLE001 - the point of the test
            crashes.append(f"{stack} {what}: {''.join(traceback.format_exception(error))}")
    assert not crashes, f"{len(crashes)} crashes; the first:\n{crashes[0]}"
    return outcomes


def test_a_wrong_type_anywhere_in_a_stack_is_a_config_error_or_plans(tmp_path):
    outcomes = load_each(wrong_type_stacks(), tmp_path)
    assert outcomes["invalid"] > outcomes["ok"] > 0, outcomes  # most wrong types refused, some harmless


def _committed_stacks() -> dict[str, dict]:
    return {stack: yaml.safe_load(stackfile.stack_file(stack).read_text()) for stack in stackfile.stacks()}


def structural_mutants(seed: int = SEED, count: int = STRUCTURAL_RUNS):
    """(stack, path, operation, document): a committed stack with the key at `path` deleted, its list entry doubled
    (a name then taken twice), or its string replaced by another value that key holds in the committed stacks (a
    topology of another generation, a machine type of another accelerator, a name another entry holds): values of
    the right type in the wrong place, which reach the checks across entries."""
    rng = random.Random(seed)
    documents = _committed_stacks()
    paths = [(stack, path) for stack, doc in sorted(documents.items()) for path in _key_paths(doc["config"]) if path]
    seen: dict[str, set] = {}
    for stack, path in paths:
        value = _at(documents[stack]["config"], path)
        if isinstance(value, str) and isinstance(path[-1], str):
            seen.setdefault(path[-1], set()).add(value)
    for index in range(count):
        stack, path = paths[index * 7919 % len(paths)]
        document = copy.deepcopy(documents[stack])
        parent, key = _at(document["config"], path[:-1]), path[-1]
        others = [v for v in sorted(seen.get(key, ())) if v != parent[key]] if isinstance(key, str) else []
        operation = ("swap", "double", "delete")[index % 3]
        if operation == "swap" and others:
            parent[key] = rng.choice(others)
        elif operation == "double" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            operation = "delete"
            del parent[key]
        yield stack, path, operation, document


def _at(value, path):
    for part in path:
        value = value[part]
    return value


def test_a_key_deleted_doubled_or_given_anothers_value_is_a_config_error_or_plans(tmp_path):
    mutants = ((stack, f"{operation} {path}", document) for stack, path, operation, document in structural_mutants())
    outcomes = load_each(mutants, tmp_path)
    assert outcomes["invalid"] > 0 and outcomes["ok"] > 0, outcomes  # an optional key deleted still plans


# --- command lines -----------------------------------------------------------------------------------------------------

NUMBERS = ["nan", "NaN", "inf", "-inf", "1e309", "0", "-0", "-1", "1e-320", "3", "0.5", "1e12", "", "x", "1,2",
           "9" * 400, "0x10", "1_000", "+1", " 2 "]
STRINGS = ["", "x", "=", "a=b", "bench-tpu=", "bench-tpu=python -m workloads.train", "\u202e", "é" * 50,
           "steady,steady", "nope,", "a" * 5000, "--json"]
# --entrypoint takes what the stack's entrypoint does; its quoting rule is tested with the rules, so its pool here holds balanced quotes.
ENTRYPOINTS = ["bench-tpu=python -m workloads.train --steps 5", "nope=python x.py", "=x", "bench-tpu="]
STACKS = ["dev", "compare", "staging", "nope", "", "../x", "Pulumi"]

COMPARE_NUMBERS = ["--flops-per-step", "--tokens-per-step", "--steps", "--timeout", "--poll", "--wait-for-removal",
                   "--tolerance", "--report-every", "--seed", "--slo-ms", "--steady-rps", "--steady-s",
                   "--sparse-requests", "--sparse-gap-s", "--request-timeout-s", "--tokens", "--inject-failure"]
COMPARE_STRINGS = ["--mfu", "--sides", "--run", "--patterns", "--burst-rps", "--burst-s"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    """Hostile file inputs, and a few sound ones."""
    folder = tmp_path_factory.mktemp("inputs")
    made = {
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "deep-object.json": '{"a":' * 50_000 + "1" + "}" * 50_000,
        "nan.json": '{"sides": [{"name": "bench-tpu", "flopsPerStep": NaN}]}',
        "huge-number.json": '{"sides": [{"name": "bench-tpu", "flopsPerStep": 1e400}]}',
        "list.json": "[1, 2, 3]",
        "empty.json": "",
        "plan.json": json.dumps({"stack": "dev", "steps": [{"urn": 1, "newState": []}, None, "x"]}),
        "quotas.json": json.dumps([{"quotaId": "X", "dimensionsInfos": [{"dimensions": [], "details": 5}]}]),
        "rates.yaml": "rates:\n  - {kind: tpu, name: x, hourly: .nan}\n",
        "deep.yaml": "a: " + "[" * 10_000 + "]" * 10_000 + "\n",
        "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
        "tags.yaml": "config:\n  gcp:project: !!binary aGk=\n",
    }
    for name, text in made.items():
        (folder / name).write_text(text)
    (folder / "binary.json").write_bytes(bytes(range(256)) * 8)
    (folder / "latin1.yaml").write_bytes("config: {gcp:project: é}".encode("latin-1"))
    sparse = folder / "sparse.json"
    with open(sparse, "wb") as stream:
        stream.truncate(80 << 20)  # 80 MiB of NUL bytes, on no disk
    (folder / "dir").mkdir()
    return [str(folder / name) for name in (*made, "binary.json", "latin1.yaml", "sparse.json", "dir")] + [
        str(folder / "missing.json"), "/dev/zero", "/dev/null", "/dev/null/x", "-", str(ROOT / "stacks")]


def command_lines(rng: random.Random, files: list[str], count: int):
    """(front end, argv) pairs: each a command with one to four options, values drawn from the hostile pools."""
    for _ in range(count):
        front = rng.choice(["console", "module"])
        command = rng.choice(["plan", "plan", "compare", "compare", "compare", "policy", "diagram"])
        if front == "module" and command in ("policy", "diagram"):
            front = "console"
        argv = [command] if front == "console" else []
        if command == "policy":
            argv += rng.choice([[rng.choice(files)], ["--list"], [rng.choice(files), "--stack", rng.choice(STRINGS)]])
            yield "console", argv
            continue
        argv.append(rng.choice(STACKS))
        if command == "diagram":
            argv += rng.choice([[], ["--markdown"], ["--config-file", rng.choice(files)]])
        elif command == "plan":
            for _ in range(rng.randint(1, 3)):
                argv += rng.choice([["--json"], ["--manifests"], ["--quotas", rng.choice(files)],
                                    ["--rates", rng.choice(files)], ["--config-file", rng.choice(files)],
                                    ["--policy-pack"], ["--fail-on-risk"], ["--format", rng.choice(STRINGS)]])
        else:
            # --estimate and --dry-run run nothing; --local (a Ray cluster) and --context (kubectl) are left out.
            argv += rng.choice([["--estimate"], ["--dry-run"], ["--serve", "--dry-run", "--context", "fuzz"]])
            for _ in range(rng.randint(1, 4)):
                kind = rng.random()
                if kind < 0.5:
                    argv.append(f"{rng.choice(COMPARE_NUMBERS)}={rng.choice(NUMBERS)}")
                elif kind < 0.7:
                    argv.append(f"{rng.choice(COMPARE_STRINGS)}={rng.choice(STRINGS + NUMBERS)}")
                elif kind < 0.8:
                    argv += ["--entrypoint", rng.choice(ENTRYPOINTS)]
                else:
                    argv += [rng.choice(["--measured", "--out", "--config-file", "--kubeconfig"]), rng.choice(files)]
        yield front, argv


def run_command(front: str, argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of one command line, in-process; an exception escaping the command is a failure."""
    from plan import __main__ as plan_main
    from plan import cli
    from plan.compare import __main__ as compare_main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            if front == "console":
                code = cli.main(argv)
            elif argv[0] == "plan":
                code = plan_main.main(argv[1:])
            else:
                code = compare_main.main(argv[1:])
        except SystemExit as exit_:  # argparse: --help, or a refused argument
            code = exit_.code if isinstance(exit_.code, int) else 2
        except Exception as error:  # noqa: BLE001 - reported as the traceback it is
            err.write("".join(traceback.format_exception(error)))
            code = -1
    return code, err.getvalue()


@pytest.fixture
def planned_once(monkeypatch):
    """The program's run under the mocks, once per stack, config and quotas; each command gets its own copy."""
    runs: dict[str, harness.Plan] = {}
    original = harness.run_program

    def run_program(stack, values, secret_keys=None, **options):
        key = json.dumps([stack, values, secret_keys, {k: v for k, v in options.items()}], sort_keys=True,
                         default=str)
        if key not in runs:
            runs[key] = original(stack, values, secret_keys, **options)
        return copy.deepcopy(runs[key])

    monkeypatch.setattr(harness, "run_program", run_program)


def test_fuzzed_command_lines_end_in_0_1_or_2_without_a_traceback(files, planned_once, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    failures, codes = [], set()
    for front, argv in command_lines(random.Random(SEED), files, FLAG_RUNS):
        monkeypatch.chdir(ROOT)  # the console script moves into the program's folder
        if argv[0] == "compare" and "--out" not in argv:
            argv += ["--out", str(tmp_path / "out")]  # an estimate writes its report: never into the repository
        with deadline(HANG_GUARD_S):
            code, err = run_command(front, argv)
        codes.add(code)
        if code not in EXIT_CODES or "Traceback" in err:
            failures.append(f"{front} {argv!r}: exit {code}\n{err[-3000:]}")
    assert not failures, f"{len(failures)} of {FLAG_RUNS} failed; the first:\n{failures[0]}"
    assert {0, 2} <= codes, codes  # the pools reach both planned and refused command lines


# --- measured documents: a wrong type anywhere in what `--estimate --measured` reads --------------------------------

MEASURED_RUNS = 120


def measured_documents(seed: int = SEED, count: int = MEASURED_RUNS):
    """(path, document): tests/data/compare/result.json with what workloads.train also declares (FLOPs and tokens
    per step, its model and batch), alone or as a report's two sides, the value at one key path deleted or replaced
    by a value of another type from WRONG_TYPES."""
    rng = random.Random(seed)
    result = json.loads((ROOT / "tests" / "data" / "compare" / "result.json").read_text())
    result.update(flopsPerStep=2.4e12, tokensPerStep=8192, batchSize=32,
                  model={"parameters": 1.2e8, "layers": 12, "dModel": 768, "heads": 12, "seqLen": 256})
    seeds = [result, {"mode": "local", "sides": [{**result, "name": "bench-tpu"}, {**result, "name": "bench-a100"}]}]
    for index in range(count):
        document = copy.deepcopy(seeds[index % 2])
        paths = [path for path in _key_paths(document) if path]
        path = paths[index * 7919 % len(paths)]
        parent = _at(document, path[:-1])
        if index % 5 == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice([v for v in WRONG_TYPES if type(v) is not type(parent[path[-1]])])
        yield path, document


def test_a_measured_document_with_a_wrong_type_anywhere_ends_in_0_1_or_2_without_a_traceback(planned_once,
                                                                                               monkeypatch, tmp_path):
    from plan.compare import estimate_render

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(estimate_render, "draw", lambda report, out: [])  # the fuzzed input is the document
    failures, codes = [], set()
    for index, (path, document) in enumerate(measured_documents()):
        file = tmp_path / f"measured{index}.json"
        file.write_text(json.dumps(document))
        argv = ["compare", "compare", "--estimate", "--measured", str(file), "--out", str(tmp_path / "out")]
        with deadline(HANG_GUARD_S):
            code, err = run_command("module", argv)
        codes.add(code)
        if code not in EXIT_CODES or "Traceback" in err:
            failures.append(f"{path}: exit {code}\n{err[-3000:]}")
    assert not failures, f"{len(failures)} of {MEASURED_RUNS} failed; the first:\n{failures[0]}"
    assert {0, 2} <= codes, codes  # the mutants reach both estimated and refused documents


def test_the_generators_are_deterministic(files):
    first = list(command_lines(random.Random(SEED), files, 30))
    assert first == list(command_lines(random.Random(SEED), files, 30))
    assert [p for _, p, _ in wrong_type_stacks(count=20)] == [p for _, p, _ in wrong_type_stacks(count=20)]
    assert [m[:3] for m in structural_mutants(count=20)] == [m[:3] for m in structural_mutants(count=20)]
    assert list(measured_documents(count=20)) == list(measured_documents(count=20))

