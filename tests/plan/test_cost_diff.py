"""The cost delta of `--diff-against` (per changed slice or pool, and in total) in every output, and the
`--fail-on-cost-increase AMOUNT` gate (exit 4).

Unit tests build the two sides from plan JSONs; one module-scoped temporary git repository (as tests/plan/test_diff.py
builds it) is diffed once, each revision planned by its own code, and `python -m plan --diff-against` runs over that diff
in-process: staging's slice doubles, so its monthly cost rises by exactly one slice at list price.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, git, project_repo
from rich.console import Console

from plan import __main__ as plan_cli
from plan import diff
from plan.__main__ import parse_args
from plan.review import gates
from plan.review.changes import Report, StackDiff
from plan.review.cost import delta
from plan.review.markdown import markdown
from plan.review.revisions import Side
from plan.review.text import print_text
from ray_tpu_gke.catalog import prices
from ray_tpu_gke.render import pricing


def item(name, hourly, kind="tpuSlice", capacity="onDemand", rate=2.5, low=None, high=None, **extra):
    out = {"kind": kind, "name": name, "capacity": capacity, "quantity": int(hourly / rate), "unit": "chip",
           "rate": {"kind": "tpu", "name": "v6e", "capacity": capacity, "region": "us-east5", "hourly": rate,
                    "from": "table"},
           "hourly": hourly, "monthly": hourly * 730, **extra}
    if low is not None:
        out["min"] = {"quantity": 0, "hourly": low, "monthly": low * 730}
        out["max"] = {"quantity": 0, "hourly": high, "monthly": high * 730}
    return out


def cost(*items, budget=None):
    hourly = sum(i["hourly"] for i in items)
    low = sum(i.get("min", i)["hourly"] for i in items)
    high = sum(i.get("max", i)["hourly"] for i in items)
    out = {"currency": "USD", "region": "us-east5", "hoursPerMonth": 730, "rates": [], "items": list(items),
           "total": {"hourly": hourly, "monthly": hourly * 730, "min": {"hourly": low, "monthly": low * 730},
                     "max": {"hourly": high, "monthly": high * 730}},
           "stranded": {"hourly": 0, "monthly": 0}}
    if budget is not None:
        out["monthlyBudget"] = budget
    return out


def side(cost_object=None, status="planned"):
    plan = {"steps": [], "outputs": {}}
    if cost_object is not None:
        plan["cost"] = cost_object
    return Side(status, plan if status == "planned" else None)


def stack_diff(old, new, name="staging"):
    return StackDiff(name, "main", "0" * 40, old, new)


def judged(report: Report, *argv: str) -> Report:
    report.failed_gates = gates.evaluate(report, parse_args(["staging", "--diff-against", "main", *argv]))
    return report


# --- the delta -----------------------------------------------------------------------------------------------------


def test_a_changed_slice_and_the_total():
    d = delta(side(cost(item("a", 40), item("system", 0.25, kind="cpuPool"))),
              side(cost(item("a", 80), item("system", 0.25, kind="cpuPool"))), "main")
    assert d.known and [(i.kind, i.name, i.op) for i in d.items] == [("tpuSlice", "a", "update")]
    assert d.monthly == Decimal(40 * 730) and d.max_monthly == Decimal(40 * 730)
    out = d.to_json()
    assert out["items"][0]["hourly"] == 40 and out["items"][0]["monthly"] == 29200
    assert out["items"][0]["before"]["monthly"] == 29200 and out["items"][0]["after"]["monthly"] == 58400
    assert out["total"]["monthly"] == 29200 and out["total"]["before"]["monthly"] == 29382.5


def test_a_replaced_pool_says_replace_not_update():
    from plan.review.change import Change
    from plan.review.tpu import PoolSize

    before, after = cost(item("a", 40), item("l4", 1.0, kind="gpuPool")), cost(item("a", 40), item("l4", 2.0,
                                                                                             kind="gpuPool"))
    pool = Change("replace", "urn:a-0", "gcp:container/nodePool:NodePool", "a-0",
                  before=PoolSize("a", 4, 16), after=PoolSize("a", 4, 16))
    gpu = Change("replace", "urn:l4", "gcp:container/nodePool:NodePool", "l4")
    d = delta(side(before), side(after), "main", [pool, gpu])
    # The slice costs the same, but its pool is torn down and obtained again: it is listed, as a replacement (#25.4).
    assert [(i.kind, i.name, i.op) for i in d.items] == [("tpuSlice", "a", "replace"), ("gpuPool", "l4", "replace")]
    assert d.to_json()["items"][0]["op"] == "replace"
    assert [(i.name, i.op) for i in delta(side(before), side(after), "main").items] == [("l4", "update")]


def test_the_cluster_fee_is_an_item_of_the_delta():
    fee = {"kind": "gkeClusterFee", "name": "ray-tpu", "mode": "standard", "hourly": 0.1, "monthly": 73}
    new = cost(item("a", 40))
    new["fees"] = [fee]
    d = delta(Side("absent"), side(new), "main")
    assert [(i.kind, i.name, i.op) for i in d.items] == [("tpuSlice", "a", "create"),
                                                         ("gkeClusterFee", "ray-tpu", "create")]


def test_a_partial_estimate_makes_the_delta_unknown():
    partial = cost(item("a", 40))
    partial.update(complete=False, missing=[{"problem": "ray-tpu-gke:pricing.rates: no rate for cpu x"}])
    d = delta(side(cost(item("a", 40))), side(partial), "main")
    assert not d.known and "no rate for cpu x" in d.unknown


def test_created_and_deleted_items_and_ranges():
    d = delta(side(cost(item("old", 10))), side(cost(item("new", 20, low=0, high=20))), "main")
    assert [(i.name, i.op) for i in d.items] == [("old", "delete"), ("new", "create")]
    new = d.to_json()["items"][1]
    assert new["min"] == {"hourly": 0, "monthly": 0} and new["max"] == {"hourly": 20, "monthly": 14600}
    assert d.to_json()["total"]["min"]["monthly"] == -7300  # the old fixed slice went, the new one scales from zero


def test_a_new_stack_costs_nothing_before_and_a_removed_one_nothing_after():
    created = delta(Side("absent"), side(cost(item("a", 40))), "main")
    assert created.known and created.monthly == 29200 and created.items[0].op == "create"
    removed = delta(side(cost(item("a", 40))), Side("absent"), "main")
    assert removed.monthly == -29200


def test_unchanged_costs_are_no_change():
    c = cost(item("a", 40))
    d = delta(side(c), side(json.loads(json.dumps(c))), "main")
    assert d.known and not d.changed and d.items == []


def test_a_side_without_amounts_makes_the_delta_unknown_never_zero():
    missing = {"currency": "USD", "region": "us-east5", "missing": [{"problem": "ray-tpu-gke:pricing.rates: no rate "
                                                                                 "for tpu v6e reservation"}]}
    d = delta(side(cost(item("a", 40))), side(missing), "main")
    assert not d.known and "in the working tree is incomplete: ray-tpu-gke:pricing.rates: no rate" in d.unknown
    assert d.to_json() == {"currency": "USD", "unknown": d.unknown}
    older = delta(side(None), side(cost(item("a", 40))), "main")
    assert "the plan at main has no cost estimate" in older.unknown


def test_no_delta_where_a_side_cannot_be_planned():
    assert delta(Side("invalid", message="bad", exit_code=2), side(cost()), "main") is None
    diff = stack_diff(Side("invalid", message="bad", exit_code=2), side(cost()))
    assert "cost" not in diff.to_json()


def test_a_stack_diff_says_replace_where_its_pool_is_replaced():
    """The change list reaches the delta: a slice whose pool is replaced is listed as a replacement (#25.4)."""
    from plan.review.change import Change
    from plan.review.tpu import PoolSize

    diff = stack_diff(side(cost(item("a", 40))), side(cost(item("a", 40))))
    diff.changes.append(Change("replace", "urn:a-0", "gcp:container/nodePool:NodePool", "a-0",
                               before=PoolSize("a", 4, 16), after=PoolSize("a", 4, 16)))
    assert [(i.name, i.op) for i in diff.cost.items] == [("a", "replace")]
    assert "| `staging` | `a` | tpuSlice | replace |" in markdown(Report("main", "0" * 40, [diff]), ROOT, diagrams=False)


def test_the_stack_json_carries_the_delta():
    diff = stack_diff(side(cost(item("a", 40))), side(cost(item("a", 80))))
    assert diff.to_json()["cost"]["total"]["monthly"] == 29200


# --- the gate ------------------------------------------------------------------------------------------------------


def report_of(old_cost, new_cost) -> Report:
    return Report("main", "0" * 40, [stack_diff(side(old_cost), side(new_cost))])


def test_the_cost_gate_is_off_by_default():
    assert judged(report_of(cost(item("a", 40)), cost(item("a", 4000)))).exit_code == 0


def test_an_increase_above_the_amount_exits_4():
    result = judged(report_of(cost(item("a", 40)), cost(item("a", 80))), "--fail-on-cost-increase", "29199.99")
    assert result.exit_code == gates.EXIT_COST == 4
    (failure,) = result.failed_gates
    assert failure.option == "--fail-on-cost-increase" and failure.exit_code == 4
    assert failure.problems == ["staging: the most it can cost per month rises by $29,200.00, more than the allowed "
                                "$29,199.99 (+$29,200.00/month (+$40.00/hour): $29,200.00 -> $58,400.00 per month)"]
    assert judged(report_of(cost(item("a", 40)), cost(item("a", 80))), "--fail-on-cost-increase",
                  "29200").exit_code == 0


def test_the_gate_compares_the_most_a_month_can_cost():
    before = cost(item("a", 40, low=0, high=40))
    after = cost(item("a", 40, low=0, high=400))  # same configured size, a far higher ceiling
    assert judged(report_of(before, after), "--fail-on-cost-increase", "1000").exit_code == 4


def test_a_decrease_passes():
    assert judged(report_of(cost(item("a", 80)), cost(item("a", 40))), "--fail-on-cost-increase", "0").exit_code == 0


def test_an_unknown_change_fails_closed():
    missing = {"currency": "USD", "missing": [{"problem": "no rate"}]}
    result = judged(report_of(cost(item("a", 40)), missing), "--fail-on-cost-increase", "1000000")
    assert result.exit_code == 4
    assert result.failed_gates[0].problems[0].startswith(
        "staging: the cost change cannot be told, so it may exceed $1,000,000.00/month:")


def test_the_diff_own_exit_statuses_come_first():
    report = Report("main", "0" * 40, [stack_diff(side(cost()), Side("invalid", message="bad", exit_code=2))])
    assert judged(report, "--fail-on-cost-increase", "0").exit_code == 2


def test_risk_and_cost_together_report_the_lowest_status():
    from plan.review.change import Change
    from plan.review.replacement import NODE_POOL

    report = report_of(cost(item("a", 40)), cost(item("a", 80)))
    report.stacks[0].changes.append(Change("replace", "urn:p", NODE_POOL, "a-0", risky=True))
    assert judged(report, "--fail-on-risk", "--fail-on-cost-increase", "0").exit_code == 3


def test_the_amount_must_be_dollars(capsys):
    for bad in ("-1", "nan", "lots"):
        with pytest.raises(SystemExit):
            parse_args(["staging", "--diff-against", "main", "--fail-on-cost-increase", bad])
    with pytest.raises(SystemExit):
        parse_args(["staging", "--fail-on-cost-increase", "10"])
    assert "--fail-on-cost-increase is a gate on a diff: it needs --diff-against" in capsys.readouterr().err


# --- text and markdown ---------------------------------------------------------------------------------------------


def test_text_shows_the_delta_per_item_and_in_total():
    report = report_of(cost(item("a", 40), item("b", 10)), cost(item("a", 80), item("b", 10)))
    console = Console(record=True, width=200)
    print_text(report, console)
    text = console.export_text()
    assert "Cost: +$29,200.00/month (+$40.00/hour): $36,500.00 -> $65,700.00 per month" in text
    assert "a (tpuSlice, update): +$29,200.00/month (+$40.00/hour): $29,200.00 -> $58,400.00" in text
    assert " b (" not in text


def test_markdown_puts_the_cost_next_to_the_risky_changes():
    report = report_of(cost(item("a", 40)), cost(item("a", 80)))
    text = markdown(report, ROOT, diagrams=False)
    assert "**Monthly cost**: +$29,200.00 at the configured size" in text
    assert "| `staging` | `a` | tpuSlice | update | $29,200.00 | $58,400.00 | +$29,200.00 |" in text
    assert "| `staging` | **total** | | | $29,200.00 | $58,400.00 | **+$29,200.00** |" in text
    assert text.index("**Monthly cost**") < text.index("| stack | create |")


def test_markdown_says_when_the_cost_change_is_unknown():
    report = report_of(cost(item("a", 40)), {"currency": "USD", "missing": [{"problem": "no rate for tpu x"}]})
    text = markdown(report, ROOT, diagrams=False)
    assert "| `staging` | | | | | | unknown: the estimate in the working tree is incomplete: no rate for tpu x |" in text


# --- end to end ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The project at `base`; in the working tree staging provisions two slices instead of one."""
    repo = tmp_path_factory.mktemp("cost-project")
    project_repo(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    path = repo / "stacks" / "Pulumi.staging.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"]["ray-tpu-gke:tpuSlices"][0]["count"] = 2
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return repo


@pytest.fixture(scope="module")
def staging_diff(repo) -> Report:
    """staging between `base` and the working tree, each side planned by its own revision in a subprocess (as
    `python -m plan --diff-against` plans them): once for the module, the two gates below read the same diff."""
    return diff.diff_stacks(["staging"], "base", root=repo)


def cli(staging_diff: Report, *args: str) -> subprocess.CompletedProcess:
    """`python -m plan staging --diff-against base ARGS` in the repository, in-process: `main` parses, gates and
    prints as ever, over the module's diff (its planning is what a process of its own would repeat). The command in
    a process of its own, exit status included: tests/plan/test_diff.py (clean_run, gated_run)."""
    calls = []

    def diffed(stacks, ref, root=None, config_file=None, workers=None, any_project=False):
        calls.append((stacks, ref, config_file, any_project))
        return copy.deepcopy(staging_diff)

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.delenv("COLUMNS", raising=False)
        patch.setattr(diff, "diff_stacks", diffed)
        code = plan_cli.main(["staging", "--diff-against", "base", *args])
    assert calls == [(["staging"], "base", None, False)]
    return subprocess.CompletedProcess(["python", "-m", "plan", "staging", "--diff-against", "base", *args], code,
                                       out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def gated(staging_diff):
    return cli(staging_diff, "--format", "json", "--fail-on-cost-increase", "1000")


def test_end_to_end_json_delta_and_exit_4(gated):

    assert gated.returncode == 4, gated.stderr
    payload = json.loads(gated.stdout)
    (slice_delta,) = payload["cost"]["items"]
    rate = next(r.hourly for r in prices.load_table() if (r.kind, r.name, r.capacity, r.region)
                == ("tpu", "v6e", "onDemand", "us-east5"))
    one_slice = 16 * rate  # staging's v6e 4x4 slice: 16 chips at the table's chip-hour
    assert (slice_delta["kind"], slice_delta["name"], slice_delta["op"]) == ("tpuSlice", "v6e-16", "update")
    # A second autoscaled slice that no replica asks for: nothing more as configured, one slice more at most.
    assert Decimal(str(slice_delta["hourly"])) == 0 and Decimal(str(slice_delta["max"]["hourly"])) == one_slice
    assert Decimal(str(slice_delta["max"]["monthly"])) == one_slice * 730
    assert Decimal(str(payload["cost"]["total"]["max"]["monthly"])) == one_slice * 730
    assert gated.stderr.startswith("gate --fail-on-cost-increase (exit 4): staging: the most it can cost per month "
                                   "rises by $")


def test_end_to_end_under_the_amount_passes_and_text_shows_the_cost(staging_diff):

    rate = next(r.hourly for r in prices.load_table() if (r.kind, r.name, r.capacity, r.region)
                == ("tpu", "v6e", "onDemand", "us-east5"))
    done = cli(staging_diff, "--fail-on-cost-increase", "100000")
    assert done.returncode == 0, done.stderr
    most = pricing.format_usd(16 * rate * 730, sign=True)
    assert "Cost: +$0.00/month (+$0.00/hour)" in done.stdout and f"at most {most}/month" in done.stdout
