"""The cost in `python -m plan`: the JSON's top-level `cost`, the table after the capacity table, and missing rates
that leave the plan printed, each one a warning line naming the `ray-tpu-gke:pricing.rates` entry to add."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import minimal_values
from plans import program_plan

from plan import stackfile
from ray_tpu_gke.catalog import prices
from ray_tpu_gke.render import pricing


def cost_lines(stderr: str) -> list[str]:
    """The stderr lines the cost adds (the plan's own notes and the program's warnings are other tests' concern)."""
    return [line for line in stderr.splitlines() if line.startswith("warning: ray-tpu-gke:pricing")]


def rows(out: str) -> list[list[str]]:
    """The cells of every table row of a text plan."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]


def stack_file(tmp_path, values, name="test"):
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return path


def test_the_json_carries_the_cost_object(plan_output):
    result = plan_output("staging", "--json")
    assert result.returncode == 0, result.stderr
    cost = json.loads(result.stdout)["cost"]
    assert cost["currency"] == "USD" and cost["region"] == "us-east5"
    assert [(i["kind"], i["name"]) for i in cost["items"]] == [("tpuSlice", "v6e-16"), ("cpuPool", "system")]
    tpu = cost["items"][0]
    # Autoscaled from zero and started at zero (Ray's autoscaler owns the count), up to one slice: 16 chips x the
    # table's v6e onDemand us-east5 chip-hour.
    rate = next(r for r in cost["rates"] if (r["kind"], r["name"]) == ("tpu", "v6e"))
    assert tpu["hourly"] == 0 and tpu["monthly"] == 0
    assert tpu["min"]["hourly"] == 0 and tpu["max"]["hourly"] == pytest.approx(16 * rate["hourly"])
    assert all(r["asOf"] and r["source"].startswith("https://") for r in cost["rates"])
    assert set(cost["total"]) == {"hourly", "monthly", "min", "max"}
    # The GKE cluster fee on every basis (#25.4): the total is the items plus $0.10 an hour.
    assert [(f["kind"], f["name"], f["hourly"]) for f in cost["fees"]] == [("gkeClusterFee", "ray-tpu-staging", 0.1)]
    for basis in ("min", "max"):
        items = sum((i.get(basis) or i)["hourly"] for i in cost["items"])
        assert cost["total"][basis]["hourly"] == pytest.approx(items + 0.1)
    assert cost["complete"] is True and cost["budgetBasis"] == "max"
    assert cost_lines(result.stderr) == []


def test_the_cost_json_is_deterministic(plan):
    assert plan("dev", "--json").stdout == plan("dev", "--json").stdout


def test_the_text_plan_shows_dollars_per_slice_and_pool_after_the_capacity(plan_output):
    out = plan_output("staging").stdout
    assert out.index("TPU capacity") < out.index("Cost estimate (USD, us-east5") < out.index("quota needed")
    assert "$/hour" in out and "$/month" in out
    table = rows(out)
    assert ["v6e-16", "tpuSlice", "onDemand", "0 slices x 16 chips"] in [r[:4] for r in table]
    assert ["ray-tpu-staging", "gkeClusterFee", "standard", "1 cluster", "$0.10/cluster-hour", "$0.10", "$73.00",
            "fixed"] in table
    assert "total" in [r[0] for r in table] and "/chip-hour" in out
    flowing = " ".join(out.split())  # long lines wrap at words to the console's width
    assert "every TPU slice and GPU pool scales from zero" in flowing and "as configured, " in flowing
    assert "a zonal Standard cluster: the free tier's $74.40/month credit per billing account may cover it" in flowing
    assert "Stranded: none" in out
    assert "Rates used:" in out and "price table, as of" in out


def test_missing_rates_leave_the_plan_and_name_what_to_add(plan, tmp_path):
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2",
                                        "capacity": "reservation", "reservation": "r1"}])
    path = stack_file(tmp_path, values)
    result = plan("test", "--config-file", str(path), "--json")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    cost = document["cost"]
    # What is known is priced (the system pool, the cluster fee); the slice is named, never taken as zero (#22.11).
    assert document["steps"] and cost["complete"] is False
    assert [(i["kind"], i["name"]) for i in cost["items"]] == [("cpuPool", "system")]
    assert [m["neededBy"] for m in cost["missing"]] == [["tpuSlices v6e-4"]]
    assert cost["total"]["hourly"] == pytest.approx(cost["items"][0]["hourly"] + 0.1)
    line = ("warning: ray-tpu-gke:pricing.rates: no rate for tpu v6e reservation in us-east5 (tpuSlices v6e-4); "
            "add {kind: tpu, name: v6e, capacity: reservation, region: us-east5, hourly: <USD per chip-hour>}")
    assert cost_lines(result.stderr) == [line]
    text = plan("test", "--config-file", str(path))
    assert text.returncode == 0 and "total (priced items)" in text.stdout
    assert ["tpuSlices v6e-4", "tpu", "reservation", "", "no rate", "?", "?", "?"] in rows(text.stdout)
    assert line.removeprefix("warning: ") in text.stdout


def test_a_stack_rate_completes_the_estimate_and_is_shown_as_the_stacks(plan, tmp_path):
    values = minimal_values(
        tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "capacity": "reservation",
                    "reservation": "r1"}],
        pricing={"rates": [{"kind": "tpu", "name": "v6e", "capacity": "reservation", "hourly": 1.5,
                            "asOf": "2026-07-01", "source": "contract ML-2026-07"}], "monthlyBudget": 10000})
    result = plan("test", "--config-file", str(stack_file(tmp_path, values)), "--json")
    assert result.returncode == 0 and cost_lines(result.stderr) == []
    cost = json.loads(result.stdout)["cost"]
    assert cost["items"][0]["hourly"] == 6 and cost["items"][0]["rate"]["from"] == "stack"
    assert cost["rates"][0] == {"kind": "tpu", "name": "v6e", "capacity": "reservation", "region": None,
                                "hourly": 1.5, "unit": "chip-hour", "asOf": "2026-07-01",
                                "source": "contract ML-2026-07", "from": "stack"}
    assert cost["monthlyBudget"] == 10000
    text = plan("test", "--config-file", str(stack_file(tmp_path, values))).stdout
    assert "$1.50/chip-hour (stack)" in text and "Monthly budget $10,000.00: at most" in text
    assert "(the maximum basis)" in text


def test_stranded_capacity_is_a_line_with_its_cost(plan, tmp_path):
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2"},
                                       {"name": "spare", "generation": "v6e", "topology": "2x2"}])
    out = plan("test", "--config-file", str(stack_file(tmp_path, values))).stdout
    rate = next(r.hourly for r in prices.load_table() if (r.kind, r.name, r.capacity, r.region)
                == ("tpu", "v6e", "onDemand", "us-east5"))
    hourly, monthly = pricing.format_usd(4 * rate), pricing.format_usd(4 * rate * 730)
    assert (f"Stranded: {hourly}/hour, {monthly}/month provisioned that no Ray worker group uses (spare: 1 slice x 4 "
            f"chips, {hourly}/hour — no Ray worker group uses it)") in out


def test_manifests_carry_no_cost(plan_output):
    result = plan_output("dev", "--manifests")
    assert result.returncode == 0 and "cost" not in result.stdout.split("\n", 1)[0]


def test_the_harness_alone_adds_no_cost():
    """Snapshots and the policy tests plan through the harness: their JSON has no `cost` unless one is attached."""
    values, secrets = stackfile.load("dev")
    plan = program_plan("dev", values, secrets)  # the harness's plan (a copy of the one other tests read)
    assert "cost" not in plan.to_json()
    plan.cost = {"currency": "USD"}
    assert plan.to_json()["cost"] == {"currency": "USD"}


def test_a_stack_whose_accelerators_scale_from_zero_is_priced_per_hour_of_a_running_job(plan, plan_output, tmp_path):
    out = plan_output("compare").stdout
    line = " ".join(out[out.index("\nMonthly") + 1:].split())  # the paragraph wraps at words
    assert line.startswith("Monthly: every TPU slice and GPU pool scales from zero, so the stack costs ")
    rate = next(r.hourly for r in prices.load_table() if (r.kind, r.name, r.capacity, r.region)
                == ("tpu", "v6e", "onDemand", "us-central1"))
    assert f"v6e-8 {pricing.format_usd(8 * rate)}/hour" in line and "Had every pool run the whole month" in line
    # A slice that is always up keeps the monthly bases first.
    fixed = plan("test", "--config-file", str(stack_file(tmp_path, minimal_values()))).stdout
    assert next(line for line in fixed.splitlines() if line.startswith("Monthly")).startswith(
        "Monthly: $") and "scales from zero" not in fixed
