"""The benchmark's own pieces, fast and untimed: synthetic stacks are valid and plan; the floor registers the same
resources as the plan it replays. Timing lives in `make bench` only (docs/benchmarks.md)."""

from __future__ import annotations

from benchmarks import floor, measure, synthetic
from plan import harness
from ray_tpu_gke.spec.config import parse_stack_config


def _resource(step: dict) -> tuple:
    """What a registration is, apart from its place in the order."""
    state = step["newState"]
    return state["type"], step["urn"], state["parent"], state["provider"], state["dependencies"], state["inputs"]


def test_synthetic_stacks_are_valid_and_mixed():
    config = parse_stack_config(synthetic.values(20), "bench")
    assert len(config.tpu_slices) == 20
    assert {s.generation for s in config.tpu_slices} == set(synthetic.GENERATIONS)
    assert {s.capacity for s in config.tpu_slices} == set(synthetic.CAPACITIES)
    assert {s.shape.multi_host for s in config.tpu_slices} == {True, False}
    # One Ray object per 8 slices, each slice used by exactly one worker group.
    assert len(config.ray_objects) == 3
    assert sorted(g.slice for o in config.ray_objects for g in o.worker_groups) == [s.name for s in config.tpu_slices]


def test_a_tiny_synthetic_stack_plans_and_its_floor_registers_the_same_resources():
    plan = harness.run_program("bench", synthetic.values(2)).to_json()
    types = [s["newState"]["type"] for s in plan["steps"]]
    assert types.count("gcp:container/nodePool:NodePool") == 3  # two slices and the system pool
    assert types.count("kubernetes:ray.io/v1:RayCluster") == 1

    calls, outputs = floor.prepare(plan)
    assert len(calls) == len(plan["steps"]) - 1  # the harness registers the stack itself
    floor.CALLS, floor.OUTPUTS = calls, outputs
    try:
        bare = harness.run_program("bench", {"gcp:project": synthetic.PROJECT}, program=measure.FLOOR_PROGRAM)
    finally:
        floor.CALLS, floor.OUTPUTS = [], {}
    assert len(bare.steps) == len(plan["steps"])
    # The same resources with the same inputs, parents, providers and dependencies; only the order may differ.
    assert sorted(map(_resource, bare.to_json()["steps"]), key=repr) == sorted(map(_resource, plan["steps"]), key=repr)
    assert bare.outputs == plan["outputs"]


def test_the_largest_default_sizes_are_admitted_with_a_warning():
    from benchmarks.__main__ import DEFAULT_SIZES

    assert max(DEFAULT_SIZES) == 512 and 256 in DEFAULT_SIZES
    config = parse_stack_config(synthetic.values(256), "bench")  # 257 node pools: planned, with GKE's latency note
    assert len(config.tpu_slices) == 256
    assert any("257 node pools in one cluster" in w for w in config.warnings)


def test_each_lane_timed_is_a_makefile_target_with_a_budget():
    from benchmarks import lanes

    makefile = (lanes.ROOT / "Makefile").read_text()
    for lane, budget in lanes.BUDGETS_S.items():
        assert f"\n{lane}:" in makefile and budget > 0
        assert lanes.command(lane)[-1] == lane and lanes.command(lane)[0] == "make"


def test_the_machine_busy_time_leaves_out_idle_and_iowait():
    import os

    from benchmarks import lanes

    stat = "cpu  100 20 30 400 50 6 4 2 0 0\ncpu0 50 10 15 200 25 3 2 1 0 0\n"
    assert lanes.busy_cpu_s(stat) == (100 + 20 + 30 + 6 + 4 + 2) / os.sysconf("SC_CLK_TCK")
    assert lanes.busy_cpu_s("intr 1 2 3\n") is None


def test_a_lane_meets_its_budget_only_when_it_passes_within_it():
    from benchmarks import lanes

    def run(lane, seconds, status=0):
        return {"lane": lane, "command": f"make {lane}", "exit_status": status, "seconds": seconds,
                "summary": "66 passed in 280.00s", "busy_cpu_seconds": 540.4, "reference_loop_s": [1.52, 1.61]}

    quick, slow, failed = run("test-ray", 280.0), run("test-ray", 301.0), run("test", 90.0, status=2)
    met = [t["met"] for t in lanes.targets([quick, slow, failed])]
    assert met == [True, False, False]
    target = lanes.targets([quick])[0]
    assert target["target"] == "`make test-ray` passes warm within 300 s"
    assert target["detail"] == "280 s; 66 passed in 280.00s; machine busy 540 CPU-s; reference loop 1.52 s, 1.61 s"


def test_pytests_closing_line_is_the_lanes_summary():
    from benchmarks import lanes

    output = "ruff ok\n........ [100%]\n==== 1605 passed, 2 skipped in 93.10s (0:01:33) ====\nmake: leaving\n"
    assert lanes.summary(output) == "1605 passed, 2 skipped in 93.10s (0:01:33)"
    assert lanes.summary("make: *** [Makefile:143: test] Error 2\n") == "make: *** [Makefile:143: test] Error 2"


def test_an_unknown_lane_is_refused_naming_the_allowed_ones(capsys):
    import pytest

    from benchmarks.__main__ import parse_args

    assert parse_args([]).lanes == ["test", "test-ray"]
    assert parse_args(["--lanes", "test"]).lanes == ["test"]
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--lanes", "test,test-all"])
    assert exit_.value.code == 2
    assert "--lanes: test-all; allowed: test, test-ray" in capsys.readouterr().err
