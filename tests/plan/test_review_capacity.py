"""TPU capacity in a diff: hosts and chips of a TPU node pool, and what a change adds and removes per slice.

Hand-made pools and changes; tests/plan/test_diff.py checks the same end to end on real plans.
"""

from __future__ import annotations

import pytest

from plan.review import capacity, tpu
from plan.review.change import Change
from plan.review.replacement import NODE_POOL
from plan.review.tpu import PoolSize


def pool(name: str, inputs: dict, type_: str = NODE_POOL) -> dict:
    return {"newState": {"type": type_, "name": name, "inputs": inputs}}


def test_a_fixed_size_pool_holds_its_node_count():
    step = pool("v5p-16-0", {"nodeCount": 2, "nodeConfig": {"machineType": "ct5p-hightpu-4t"}})
    assert tpu.size(step) == PoolSize("v5p-16", hosts=2, chips=8)  # 4 chips per v5p host


def test_an_autoscaled_pool_holds_its_maximum_and_names_its_slice_by_label():
    step = pool("train-0", {"autoscaling": {"minNodeCount": 0, "maxNodeCount": 16},
                            "nodeConfig": {"machineType": "tpu7x-standard-4t",
                                           "labels": {"ray-tpu-gke/slice": "ironwood-64"}}})
    assert tpu.size(step) == PoolSize("ironwood-64", hosts=16, chips=64)
    assert "16 hosts" in tpu.summary(step)


@pytest.mark.parametrize("machine", [m for g in tpu.catalog.GENERATIONS.values() for m in g.machine_types],
                         ids=lambda m: m.name)
def test_chips_per_host_come_from_the_catalogue(machine):
    step = pool("s-0", {"nodeCount": 3, "nodeConfig": {"machineType": machine.name}})
    assert tpu.size(step).chips == 3 * machine.chips


def test_pools_without_tpus_or_a_node_count_hold_no_tpu_capacity():
    assert tpu.size(pool("system", {"nodeCount": 3, "nodeConfig": {"machineType": "e2-standard-8"}})) is None
    assert tpu.size(pool("s-0", {"nodeConfig": {"machineType": "ct6e-standard-4t"}})) is None
    assert tpu.size(pool("b", {"nodeCount": 1}, type_="gcp:storage/bucket:Bucket")) is None
    assert tpu.size(None) is None


def change(op: str, name: str, before: PoolSize | None = None, after: PoolSize | None = None) -> Change:
    return Change(op, f"urn:{name}", NODE_POOL, name, before=before, after=after)


def test_created_deleted_replaced_and_resized_pools_by_slice():
    result = capacity.of_changes([
        change("create", "a-0", after=PoolSize("a", 1, 8)),
        change("create", "a-1", after=PoolSize("a", 1, 8)),
        change("replace", "b-0", before=PoolSize("b", 4, 16), after=PoolSize("b", 8, 32)),
        change("update", "c-0", before=PoolSize("c", 2, 8), after=PoolSize("c", 3, 12)),
        change("update", "d-0", before=PoolSize("d", 4, 16), after=PoolSize("d", 2, 8)),
        change("update", "e-0", before=PoolSize("e", 4, 16), after=PoolSize("e", 4, 16)),  # a label: nothing
        change("update", "f-0"),  # not a TPU pool
        change("delete", "g-0", before=PoolSize("g", 2, 8)),
    ])
    assert [s.to_json() for s in result.slices] == [
        {"slice": "a", "pools": [{"pool": "a-0", "op": "create"}, {"pool": "a-1", "op": "create"}],
         "chipsAdded": 16, "chipsRemoved": 0, "hostsAdded": 2, "hostsRemoved": 0},
        {"slice": "b", "pools": [{"pool": "b-0", "op": "replace"}],
         "chipsAdded": 32, "chipsRemoved": 16, "hostsAdded": 8, "hostsRemoved": 4},
        {"slice": "c", "pools": [{"pool": "c-0", "op": "update"}],
         "chipsAdded": 4, "chipsRemoved": 0, "hostsAdded": 1, "hostsRemoved": 0},
        {"slice": "d", "pools": [{"pool": "d-0", "op": "update"}],
         "chipsAdded": 0, "chipsRemoved": 8, "hostsAdded": 0, "hostsRemoved": 2},
        {"slice": "g", "pools": [{"pool": "g-0", "op": "delete"}],
         "chipsAdded": 0, "chipsRemoved": 8, "hostsAdded": 0, "hostsRemoved": 2},
    ]
    assert result.total() == {"chipsAdded": 52, "chipsRemoved": 32, "hostsAdded": 11, "hostsRemoved": 8}
    assert result.slices[0].pools_text() == "create a-0, a-1"


def test_no_tpu_change_is_an_empty_capacity():
    result = capacity.of_changes([change("update", "f-0")])
    assert not result
    assert result.to_json() == {"slices": [], "total": dict.fromkeys(
        ("chipsAdded", "chipsRemoved", "hostsAdded", "hostsRemoved"), 0)}


def test_describe():
    assert capacity.describe({"chipsAdded": 8, "hostsAdded": 1, "chipsRemoved": 0, "hostsRemoved": 0}) == \
        "8 chips (1 host) added"
    assert capacity.describe({"chipsAdded": 32, "hostsAdded": 8, "chipsRemoved": 1, "hostsRemoved": 1}) == \
        "32 chips (8 hosts) added, 1 chip (1 host) removed"
    assert capacity.describe(dict.fromkeys(("chipsAdded", "hostsAdded", "chipsRemoved", "hostsRemoved"), 0)) == \
        "no TPU capacity change"
