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
