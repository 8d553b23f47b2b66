"""The documented examples are what the code renders (docs/ray-objects.md)."""

import re

import yaml
from helpers import ROOT

from ray_tpu_gke.render import manifests
from ray_tpu_gke.resources.identity import RAY_KSA
from ray_tpu_gke.spec.config import parse_stack_config


def examples():
    text = (ROOT / "docs/ray-objects.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert len(blocks) == 6, "three examples, each a stack file and its manifest"
    return [(yaml.safe_load(blocks[i]), yaml.safe_load(blocks[i + 1])) for i in range(0, len(blocks), 2)]


def rendered(stack_file: dict) -> dict:
    config = parse_stack_config(stack_file["config"], "dev")
    (obj,) = config.ray_objects
    return manifests.ray_manifest(obj, config.targets, manifests.render_context(config, RAY_KSA))


def test_each_documented_manifest_is_what_its_config_renders(request):
    if request.config.getoption("--update-snapshots"):  # `make snapshots` rewrites each manifest from its config
        path = ROOT / "docs/ray-objects.md"
        text = path.read_text()
        blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
        for i in range(0, len(blocks), 2):
            manifest = yaml.safe_dump(rendered(yaml.safe_load(blocks[i])), sort_keys=False, width=120)
            text = text.replace(f"```yaml\n{blocks[i + 1]}```", f"```yaml\n{manifest}```", 1)
        path.write_text(text)
    kinds = []
    for stack_file, documented in examples():
        assert rendered(stack_file) == documented
        kinds.append(documented["kind"])
    assert kinds == ["RayCluster", "RayService", "RayJob"]


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", readme):
        assert (ROOT / target).exists(), target
