"""The plan/ tests' shared fixtures: `python -m plan.verify` run in-process against the stand-in cluster of
tests/stand_in_cluster.py (plan/test_verify.py, plan/test_versions.py)."""

from __future__ import annotations

import functools
import json

import pytest
from plans import program_plan
from stand_in_cluster import CONTEXT, fake_kubectl

from plan import harness
from plan.verify import cli, expected


@functools.lru_cache(maxsize=None)
def _program(stack: str, values: str, secrets: tuple) -> harness.Plan:
    return program_plan(stack, json.loads(values), list(secrets))


def program_once(stack, values, secret_keys=None, **options):
    """harness.run_program, run once per stack and config in the session: verify only reads the plan."""
    assert not options
    return _program(stack, json.dumps(values, sort_keys=True), tuple(secret_keys or ()))


def _runner(tmp_path, monkeypatch, capsys, on_path: bool):
    monkeypatch.setattr(expected.harness, "run_program", program_once)
    path = fake_kubectl(tmp_path, monkeypatch, on_path)

    def go(stack: str, state: dict, *args: str, text: bool = False):
        path.write_text(json.dumps(state))
        code = cli.main([stack, "--context", CONTEXT, "--poll", "0", *args, *([] if text else ["--json"])])
        out, go.err = capsys.readouterr()
        checks = {} if text else {(c["subject"], c["name"]): c for c in json.loads(out)["checks"]}
        return code, checks, out, json.loads(path.read_text())

    return go


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """Run `python -m plan.verify STACK --context CONTEXT ...` in-process against a state; returns
    (exit status, checks by (subject, name), stdout, the stand-in kubectl's state afterwards); `run.err` is stderr."""
    return _runner(tmp_path, monkeypatch, capsys, on_path=False)


@pytest.fixture
def run_on_path(tmp_path, monkeypatch, capsys):
    """`run`, each kubectl call a child process: the stand-in is the `kubectl` on PATH."""
    return _runner(tmp_path, monkeypatch, capsys, on_path=True)
