"""Ray's own KubeRay autoscaler config code, run on every Ray cluster spec the stacks, the examples and the docs emit
(issue #22 item 14): the TPU and GPU resources, the TPU-<type>-head resources and the worker counts Ray derives from
each worker group must be what the group claims (its node selectors, through the catalogue).

Ray's code is run once, in one subprocess of the workloads virtualenv (Ray 2.60, $WORKLOADS_PYTHON), over all specs:
`_node_type_from_group_spec` per group, the function `_generate_available_node_types_from_ray_cr_spec` maps over a
spec's groups (ray/autoscaler/_private/kuberay/autoscaling_config.py), so one group Ray cannot read (Ironwood before
2.56) is reported without hiding the others.
"""

from __future__ import annotations

import json
import math
import re
import subprocess

import pytest
import yaml
from helpers import ROOT, STACKS, workloads_python
from examples_run import EXAMPLES, EXISTING_VALUES, run_example

from plan import stackfile
from ray_tpu_gke import catalog
from ray_tpu_gke.catalog import ray_versions
from ray_tpu_gke.render import manifests
from ray_tpu_gke.spec.config import parse_stack_config

RUNNER = r"""
import json, sys
import ray
from ray.autoscaler._private.kuberay import autoscaling_config, utils

out = {"rayVersion": ray.__version__, "generations": utils.gke_tpu_accelerator_to_generation, "specs": {}}
for name, spec in json.load(sys.stdin).items():
    groups = {"headgroup": (spec["headGroupSpec"], True)}
    groups.update({g["groupName"]: (g, False) for g in spec.get("workerGroupSpecs", [])})
    derived = {}
    for group_name, (group, is_head) in groups.items():
        try:
            derived[group_name] = autoscaling_config._node_type_from_group_spec(group, is_head)
        except Exception as error:  # what Ray's autoscaler would fail with, for the test to judge
            derived[group_name] = {"error": type(error).__name__, "message": str(error)}
    out["specs"][name] = derived
json.dump(out, sys.stdout, default=str)
"""

GENERATION_OF_ACCELERATOR = {catalog.generation(g).accelerator: g for g in catalog.GENERATIONS}
GENERATION_OF_ACCELERATOR.setdefault("tpu-v5-lite-device", "v5e")


def _cluster_spec(manifest: dict) -> dict | None:
    spec = manifest.get("spec", {})
    return spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or (spec if "headGroupSpec" in spec else None)


def stack_specs() -> dict[str, tuple[dict, str]]:
    """Every Ray cluster spec of every stack, rendered by the same pure builder the program uses."""
    specs = {}
    for stack in STACKS:
        values, _ = stackfile.load(stack)
        config = parse_stack_config(values, stack)
        ctx = manifests.render_context(config, "ray")
        for obj in config.ray_objects:
            spec = _cluster_spec(manifests.ray_manifest(obj, config.targets, ctx))
            if spec is not None:
                specs[f"stacks/{stack}:{obj.namespace}/{obj.name}"] = spec
    return specs


def docs_specs() -> dict[str, dict]:
    """The Ray objects docs/ray-objects.md shows, as written there."""
    text = (ROOT / "docs/ray-objects.md").read_text()
    specs = {}
    for k, block in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)):
        document = yaml.safe_load(block)
        if isinstance(document, dict) and document.get("apiVersion") == "ray.io/v1":
            specs[f"docs/ray-objects.md#{k}:{document['kind']}"] = _cluster_spec(document)
    return specs


@pytest.fixture(scope="module")
def example_specs(request) -> dict[str, dict]:
    """The Ray clusters the Python example programs create, under the plan harness."""
    monkeypatch = pytest.MonkeyPatch()
    request.addfinalizer(monkeypatch.undo)
    specs = {}
    for example, stack, values in (("existing-cluster", "dev", EXISTING_VALUES), ("own-config", "dev", {}),
                                   ("own-config", "prod", {})):
        plan = run_example(monkeypatch, EXAMPLES / example, stack, values)
        for step in plan.steps:
            if step.type.startswith("kubernetes:ray.io/v1:"):
                specs[f"examples/{example}/{stack}:{step.name}"] = _cluster_spec(step.inputs)
        monkeypatch.undo()
    return specs


@pytest.fixture(scope="module")
def derived(example_specs):
    python = workloads_python()
    specs = {**stack_specs(), **docs_specs(), **example_specs}
    run = subprocess.run([python, "-c", RUNNER], input=json.dumps(specs), capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-4000:]
    return specs, json.loads(run.stdout)


def _expected(group: dict, ray_version: str) -> dict:
    """What the group claims, read through the catalogue: resources per pod and workers per replica."""
    container = group["template"]["spec"]["containers"][0]
    limits = container.get("resources", {}).get("limits", {})
    selector = group["template"]["spec"].get("nodeSelector", {})
    want = {"min": group["minReplicas"] * group["numOfHosts"], "max": group["maxReplicas"] * group["numOfHosts"]}
    accelerator = selector.get(catalog.ACCELERATOR_LABEL)
    if accelerator:
        shape = catalog.resolve(GENERATION_OF_ACCELERATOR[accelerator], selector[catalog.TOPOLOGY_LABEL])
        assert group["numOfHosts"] == shape.hosts and int(limits[catalog.TPU_RESOURCE]) == shape.chips_per_host
        want["TPU"] = shape.chips_per_host
        names = ray_versions.autoscaler_tpu_generations(ray_version)
        want["head"] = f"TPU-{names[accelerator]}-{shape.tensorcores}-head" if accelerator in names else None
    if catalog.GPU_RESOURCE in limits:
        want["GPU"] = int(limits[catalog.GPU_RESOURCE])
    return want


def test_ray_versions_table_matches_the_installed_rays_own_map(derived):
    _, out = derived
    assert ray_versions.autoscaler_tpu_generations(out["rayVersion"]) == out["generations"]
    assert ray_versions.ray_has(out["rayVersion"], "autoscaler-tpu7x") == ("tpu7x" in out["generations"])


def test_every_emitted_ray_cluster_spec_is_read_by_rays_autoscaler_as_its_groups_claim(derived):
    specs, out = derived
    assert any(name.startswith("stacks/prod:") for name in specs) and any(n.startswith("docs/") for n in specs)
    assert any(name.startswith("examples/") for name in specs)
    checked_tpu = checked_head = 0
    for name, spec in specs.items():
        result = out["specs"][name]
        head = result["headgroup"]
        assert "error" not in head and head["min_workers"] == head["max_workers"] == 0, (name, head)
        assert head["resources"].get("CPU") == 0 and "TPU" not in head["resources"], (name, head)  # num-cpus "0"
        for group in spec["workerGroupSpecs"]:
            got, want = result[group["groupName"]], _expected(group, out["rayVersion"])
            where = (name, group["groupName"])
            if "TPU" in want and want["head"] is None:
                # Ray 2.55's autoscaler cannot map this accelerator (Ironwood): the rules keep autoscaling off there.
                assert got.get("error") == "KeyError", (where, got)
                assert not spec.get("enableInTreeAutoscaling"), where
                continue
            assert "error" not in got, (where, got)
            assert (got["min_workers"], got["max_workers"]) == (want["min"], want["max"]), where
            resources = got["resources"]
            assert resources.get("GPU", 0) == want.get("GPU", 0), (where, resources)
            if "TPU" in want:
                checked_tpu += 1
                assert resources["TPU"] == want["TPU"], (where, resources)
                heads = [key for key in resources if key.endswith("-head")]
                assert heads == [want["head"]] and resources[want["head"]] == 1, (where, resources)
                checked_head += 1
            else:
                assert "TPU" not in resources, (where, resources)
    assert checked_tpu and checked_head


def test_ironwood_head_resource_counts_two_cores_per_chip():
    # The name Ray 2.56's autoscaler gives an Ironwood 2x2x2 slice (8 chips x 2 cores: ray-project/ray#62786).
    shape = catalog.resolve("tpu7x", "2x2x2")
    names = ray_versions.autoscaler_tpu_generations("2.56.0")
    assert f"TPU-{names[shape.accelerator]}-{shape.tensorcores}-head" == "TPU-v7x-16-head"
    assert math.prod(int(d) for d in shape.topology.split("x")) == shape.chips == 8
