"""The policy pack and the plan's `cost`: the mandatory monthly budget rule, and the advisory cost rules quoting
what the capacity they flag costs. Plans are the committed stacks' (shared harness) with the estimate attached as
`python -m plan STACK --json` attaches it."""

from __future__ import annotations

from decimal import Decimal

import yaml
from helpers import plan_of

from plan import stackfile
from policy import engine
from policy.rules import ADVISORY, MANDATORY
from ray_tpu_gke.render import pricing
from ray_tpu_gke.spec.config import parse_stack_config


def with_cost(stack: str, **pricing_section) -> dict:
    """The stack's plan JSON with the cost estimate of its config (its pricing section replaced by the given one)."""
    values, _ = stackfile.load(stack)
    if pricing_section:
        values["ray-tpu-gke:pricing"] = pricing_section
    plan = plan_of(stack)
    config = parse_stack_config(values, stack)
    try:
        plan["cost"] = pricing.estimate(config).to_json()
    except pricing.PricingError as error:
        plan["cost"] = pricing.incomplete_json(error, config)
    return plan


def violations(plan: dict, rule_id: str):
    return [v for v in engine.check_plan(plan) if v.rule.id == rule_id]


def test_a_plan_within_its_budget_passes():
    plan = with_cost("staging", monthlyBudget=1_000_000)
    assert violations(plan, "cost-monthly-budget") == []
    assert engine.exit_code(engine.check_plan(plan)) == 0


def test_a_plan_over_its_budget_breaks_a_mandatory_rule():
    plan = with_cost("staging", monthlyBudget=1000)
    (hit,) = violations(plan, "cost-monthly-budget")
    most = plan["cost"]["total"]["max"]["monthly"]
    assert hit.level == MANDATORY and hit.resource is None
    assert hit.message.startswith(f"the stack can cost {pricing.format_usd(Decimal(str(most)))}/month")
    assert "over its monthly budget $1,000.00" in hit.message and "tpuSlice v6e-16" in hit.message
    assert engine.exit_code(engine.check_plan(plan)) == 1


def test_the_budget_is_checked_against_the_most_a_month_can_cost():
    plan = with_cost("staging")
    total = plan["cost"]["total"]
    between = (total["monthly"] + total["max"]["monthly"]) / 2  # above the configured size, below the maximum
    plan["cost"]["monthlyBudget"] = between
    assert violations(plan, "cost-monthly-budget")


def test_missing_rates_with_a_budget_fail_the_rule():
    plan = with_cost("prod", monthlyBudget=500_000)
    (hit,) = violations(plan, "cost-monthly-budget")
    assert hit.message.startswith("monthly budget $500,000.00 cannot be checked: the estimate is incomplete")
    assert "no rate for tpu v6e reservation in us-central1" in hit.message


def test_no_budget_or_no_estimate_means_nothing_to_check():
    assert violations(with_cost("staging"), "cost-monthly-budget") == []
    assert violations(plan_of("staging"), "cost-monthly-budget") == []  # e.g. what the Pulumi CLI hands the pack


def test_a_fixed_size_pool_outside_prod_quotes_what_a_slice_costs():
    plan = with_cost("staging")
    pool = next(s["newState"]["inputs"] for s in plan["steps"] if s["newState"]["name"] == "v6e-16-0")
    del pool["autoscaling"]
    pool["nodeCount"] = 4
    (hit,) = violations(plan, "cost-tpu-autoscaling")
    item = plan["cost"]["items"][0]
    hourly = Decimal(str(item["perSlice"]["hourly"]))  # one slice of staging's v6e-16
    assert hit.level == ADVISORY and hit.resource.name == "v6e-16-0"
    assert (f"has a fixed size outside production, which costs {pricing.format_usd(hourly)}/hour "
            f"({pricing.format_usd(hourly * 730)}/month) at its onDemand rate") in hit.message


def test_an_unused_slice_quotes_its_cost_and_reads_without_an_estimate():
    plan = with_cost("staging")
    pool = next(s["newState"]["inputs"] for s in plan["steps"] if s["newState"]["name"] == "v6e-16-0")
    pool["nodeConfig"]["labels"]["ray-tpu-gke/slice"] = "orphan"
    plan["cost"]["items"][0]["name"] = "orphan"
    (hit,) = violations(plan, "cost-unused-slice")
    hourly = Decimal(str(plan["cost"]["items"][0]["perSlice"]["hourly"]))  # staging's one slice, on demand
    assert (f"no Ray worker group selects it, which costs {pricing.format_usd(hourly)}/hour "
            f"({pricing.format_usd(hourly * 730)}/month) at its onDemand rate") in hit.message
    del plan["cost"]
    (bare,) = violations(plan, "cost-unused-slice")
    assert bare.message.endswith("no Ray worker group selects it while its nodes run")


def test_an_unused_slice_that_scales_from_zero_still_quotes_one_slice():
    """dev's slice runs at zero slices as configured; what one slice costs is still what an orphan would cost."""
    plan = with_cost("dev")
    (item,) = [i for i in plan["cost"]["items"] if i["kind"] == "tpuSlice"]
    assert item["slices"] == 0 and item["perSlice"]["hourly"] > 0
    pool = next(s["newState"]["inputs"] for s in plan["steps"] if s["newState"]["name"] == f"{item['name']}-0")
    pool["nodeConfig"]["labels"]["ray-tpu-gke/slice"] = "orphan"
    item["name"] = "orphan"
    (hit,) = violations(plan, "cost-unused-slice")
    assert f"which costs {pricing.format_usd(Decimal(str(item['perSlice']['hourly'])))}/hour" in hit.message


def test_the_offline_pack_sees_the_cost_through_the_cli(plan, tmp_path):
    """`python -m plan STACK --policy-pack policy` passes the plan JSON, `cost` included, to the rules."""
    values, _ = stackfile.load("staging")
    values["ray-tpu-gke:pricing"] = {"monthlyBudget": 100}
    path = tmp_path / "Pulumi.staging.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    done = plan("staging", "--config-file", str(path), "--policy-pack", "policy")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cost-monthly-budget" in done.stdout and "over its monthly budget $100.00" in done.stdout
