"""CI gates of `--diff-against`: off by default, their own exit status, after the diff's own 1 and 2."""

from __future__ import annotations

import argparse

import pytest

from plan.__main__ import parse_args
from plan.review import gates
from plan.review.change import Change
from plan.review.changes import Failure, Report, StackDiff
from plan.review.replacement import CLUSTER, NODE_POOL
from plan.review.revisions import Side

PLANNED = Side("planned", {"steps": [], "outputs": {}})


def report(*changes: Change, new: Side = PLANNED) -> Report:
    return Report("main", "0" * 40, [StackDiff("prod", "main", "0" * 40, PLANNED, new, changes=list(changes))])


RISKY = Change("replace", "urn:p", NODE_POOL, "v6e-64-0", risky=True)
SAFE = Change("update", "urn:c", CLUSTER, "ray-tpu-prod")


def judged(result: Report, argv: list[str]) -> Report:
    result.failed_gates = gates.evaluate(result, parse_args(["prod", "--diff-against", "main", *argv]))
    return result


def test_the_gate_is_off_by_default():
    assert judged(report(RISKY), []).exit_code == 0


def test_fail_on_risk_exits_3_and_names_every_risky_change():
    result = judged(report(RISKY, SAFE), ["--fail-on-risk"])
    assert result.exit_code == gates.EXIT_RISK == 3
    assert result.failed_gates == [Failure("--fail-on-risk", 3, [f"prod: replace {NODE_POOL} v6e-64-0"])]
    assert judged(report(SAFE), ["--fail-on-risk"]).exit_code == 0


def test_a_stack_that_cannot_be_diffed_comes_first():
    result = judged(report(RISKY, new=Side("failed", message="boom", exit_code=1)), ["--fail-on-risk"])
    assert result.exit_code == 1
    result = judged(report(RISKY, new=Side("invalid", message="bad", exit_code=2)), ["--fail-on-risk"])
    assert result.exit_code == 2


def test_a_gate_needs_a_diff(capsys):
    with pytest.raises(SystemExit):
        parse_args(["prod", "--fail-on-risk"])
    assert "--fail-on-risk is a gate on a diff: it needs --diff-against" in capsys.readouterr().err


def test_a_second_gate_is_one_function(monkeypatch):
    monkeypatch.setattr(gates, "GATES", list(gates.GATES))

    @gates.gate("--fail-on-many-changes", 5, type=int, metavar="N", help="a test gate")
    def many_changes(result: Report, limit: int) -> list[str]:
        return [f"{d.stack}: {len(d.changes)} changes" for d in result.stacks if len(d.changes) > limit]

    result = judged(report(SAFE, SAFE), ["--fail-on-many-changes", "1"])
    assert result.exit_code == 5 and result.failed_gates[0].problems == ["prod: 2 changes"]
    # Several failing: the lowest status.
    assert judged(report(RISKY, SAFE), ["--fail-on-many-changes", "1", "--fail-on-risk"]).exit_code == 3
    with pytest.raises(ValueError):
        gates.gate("--fail-on-more", 4, type=int)
    with pytest.raises(ValueError):
        gates.gate("--fail-on-less", 2, type=int)


def test_every_gate_is_an_option_with_its_help():
    parser = argparse.ArgumentParser()
    gates.add_arguments(parser)
    assert "--fail-on-risk" in parser.format_help()
    assert gates.requested(parser.parse_args(["--fail-on-risk"])) == gates.GATES[:1]
    assert gates.requested(parser.parse_args([])) == []
