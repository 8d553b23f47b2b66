"""Stranded capacity of a change's new revision in the diff (text, JSON, pull-request comment) and the policy pack:
what the plan's estimate reports as always provisioned and used by no Ray worker group (plan/review/stranded.py,
policy/rules/capacity.py)."""

from rich.console import Console

from helpers import minimal_values
from plan import cost, harness
from plan.review.changes import Report
from plan.review.classify import compare
from plan.review.markdown import markdown
from plan.review.revisions import Side
from plan.review.text import print_text
from policy import engine
from ray_tpu_gke.spec.config import parse_stack_config


def planned(slice_count: int, gpu_nodes: int | None = None) -> dict:
    """A plan JSON with its cost: `slice_count` fixed v6e 2x2 slices, one worker group of 1 slice."""
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2",
                                        "count": slice_count}])
    if gpu_nodes is not None:
        values["ray-tpu-gke:cpuPools"] = [{"name": "prep", "machineType": "n2-standard-16", "count": gpu_nodes}]
    plan = harness.run_program("test", values)
    cost.attach(plan, parse_stack_config(values, "test"))
    return plan.to_json()


def test_a_change_that_strands_a_slice_is_flagged_in_text_json_and_markdown():
    diff = compare(Side("planned", planned(1)), Side("planned", planned(2)), "test", "main", "0" * 40)
    (stranded,) = diff.stranded
    assert (stranded.kind, stranded.name, stranded.quantity, stranded.unit, stranded.new) == (
        "tpuSlice", "v6e-4", 4, "chip", True)
    assert stranded.monthly is not None and stranded.monthly > 0
    assert "ask for 1 of 2 always-provisioned slices" in stranded.reason
    assert diff.to_json()["stranded"] == [stranded.to_json()]

    text = markdown(Report("main", "0" * 40, [diff]), diagrams=False)
    assert "**Stranded capacity** after this change (1 newly stranded)" in text
    assert "> - **test** · tpuSlice v6e-4: 4 chips, $" in text and "newly stranded" in text
    console = Console(record=True, width=200, color_system=None)
    print_text(Report("main", "0" * 40, [diff]), console)
    assert "Stranded: tpuSlice v6e-4: 4 chips" in console.export_text()


def test_stranded_before_and_after_is_not_new_and_nothing_stranded_says_nothing():
    again = compare(Side("planned", planned(2)), Side("planned", planned(2, gpu_nodes=1)), "test", "main", "0" * 40)
    by_name = {s.name: s for s in again.stranded}
    assert by_name["v6e-4"].new is False
    assert by_name["prep"].new is True and by_name["prep"].reason == "no Ray worker group uses it"
    clean = compare(Side("planned", planned(1)), Side("planned", planned(1)), "test", "main", "0" * 40)
    assert clean.stranded == [] and "stranded" not in clean.to_json()
    assert "Stranded capacity" not in markdown(Report("main", "0" * 40, [clean]), diagrams=False)


def test_policy_pack_reports_stranded_capacity_once():
    found = [v for v in engine.check_plan(planned(2, gpu_nodes=1), "test") if v.rule.id == "stranded-capacity"]
    messages = sorted(v.message for v in found)
    assert len(messages) == 2
    assert messages[0].startswith("cpuPool prep: 1 node stranded, $") and "no Ray worker group uses it" in messages[0]
    assert messages[1].startswith("tpuSlice v6e-4: 4 chips stranded, $")
    assert all(v.level == "advisory" for v in found)
    assert not [v for v in engine.check_plan(planned(1), "test") if v.rule.id == "stranded-capacity"]
