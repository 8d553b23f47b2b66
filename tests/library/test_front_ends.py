"""One home for validation: the platform validates the stack once (spec/config.py), and the components it builds take
what it validated without validating it again (spec/component_args.py `Validated`); a component on its own still
validates its arguments, with the same rules."""

import pytest
from helpers import minimal_values, run

from ray_tpu_gke.spec import cross_section, ray_cross_section


@pytest.fixture
def calls(monkeypatch):
    counted: dict[str, int] = {}
    for module, rule in ((cross_section, "check_cluster"), (cross_section, "check_slices"),
                         (cross_section, "check_worker_pools"), (ray_cross_section, "check_ray_objects")):
        original = getattr(module, rule)

        def counting(*args, _rule=rule, _original=original, **kwargs):
            counted[_rule] = counted.get(_rule, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, rule, counting)
    return counted


def test_the_platform_checks_each_rule_across_sections_once(calls):
    values = minimal_values(
        gpuPools=[{"name": "l4", "accelerator": "nvidia-l4", "zone": "us-east5-b"}],
        cpuPools=[{"name": "cpu", "machineType": "n2-standard-8"}])
    plan = run(values)
    assert plan["outputs"].get("error") is None, plan["outputs"]
    types = [s["newState"]["type"] for s in plan["steps"]]
    # TpuSlicePools, WorkerPool (GPU and CPU), GkeCluster and SliceMonitoring were built, none re-checking its entry.
    assert {"ray-tpu-gke:index:TpuSlicePools", "ray-tpu-gke:index:WorkerPool", "ray-tpu-gke:index:GkeCluster",
            "ray-tpu-gke:index:SliceMonitoring"} <= set(types)
    assert calls == {"check_cluster": 1, "check_slices": 1, "check_worker_pools": 1, "check_ray_objects": 1}
