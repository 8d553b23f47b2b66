"""The policy pack's rule over the stack's alert policies (policy/rules/monitoring.py): in production every TPU node
pool is named by an alert policy, and every alert policy notifies someone."""

from __future__ import annotations

from helpers import plan_of, prod_plan
from policy import engine
from policy.rules.monitoring import names


def findings(plan: dict, stack: str, rule: str) -> list[engine.Violation]:
    return [v for v in engine.check_plan(plan, stack) if v.rule.id == rule]


def test_prod_without_channels_is_one_advisory_finding_for_the_stack():
    (finding,) = findings(prod_plan([]).to_json(), "prod", "prod-slice-alerts")
    assert finding.level == "advisory" and finding.resource is None
    assert finding.message.startswith("14 alert policies notify no channel in production (stack prod): "
                                      "[prod] ray-tpu-prod: TPU slice v6e-64-0 (v6e-64) idle; ")
    assert finding.message.endswith("; and 11 more. Set ray-tpu-gke:monitoring.notificationChannels to the IDs of "
                                    "existing channels (projects/<project>/notificationChannels/<id>)")
    for stack in ("dev", "staging", "sandbox"):  # not production
        assert findings(plan_of(stack), stack, "prod-slice-alerts") == []


def test_prod_with_channels_passes_and_prod_without_monitoring_names_every_pool():
    plan = prod_plan(["projects/acme-ml-prod/notificationChannels/42"]).to_json()
    assert [v for v in engine.check_plan(plan, "prod") if v.rule.id.startswith("prod-")] == []

    plan = prod_plan([], enabled=False).to_json()
    found = findings(plan, "prod", "prod-slice-alerts")
    assert sorted(v.resource.name for v in found) == ["ironwood-64-0", "v6e-64-0", "v6e-64-1", "v6e-8-serve-0",
                                                      "v6e-8-serve-1", "v6e-8-serve-2", "v6e-8-serve-3"]
    assert found[0].message.startswith("TPU node pool v6e-64-0 (v6e 8x8 (16 x ct6e-standard-4t)) is named by no "
                                       "alert policy in production (stack prod)")


def test_a_pool_is_named_whole_never_as_part_of_a_longer_name():
    assert names('x="v6e-64-1"', "v6e-64-1")
    assert names('monitoring.regex.full_match("v6e-64-0|v6e-64-1")', "v6e-64-1")
    assert not names('monitoring.regex.full_match("v6e-64-10|v6e-64-11")', "v6e-64-1")
    assert not names('x="a-v6e-64-1"', "v6e-64-1")
