"""The Mermaid diagram of a stack: cluster -> TPU slices (with their shapes) -> Ray worker groups."""

from __future__ import annotations

import re

import pytest
from helpers import STACKS, config_of, minimal_values

from plan import diagram
from ray_tpu_gke.spec.config import parse_stack_config


def edges(chart: str) -> set[tuple[str, str]]:
    return {(a, b) for a, b in re.findall(r"^\s*(\w+) -(?:->|\.->)(?:\|[^|]*\|)? (\w+)$", chart, re.M)}


def node_label(chart: str, node: str) -> str:
    match = re.search(rf'^\s*{node}\["(.*)"\]$', chart, re.M)
    assert match, f"no node {node}"
    return match.group(1)


def test_prod_diagram_shows_every_slice_shape_and_who_uses_it():
    config = config_of("prod")
    chart = diagram.mermaid(config)
    assert chart.startswith("flowchart LR\n")
    assert "GKE cluster ray-tpu-prod" in node_label(chart, "cluster")
    assert "e2-standard-16 × 3–6 nodes" in node_label(chart, "system")

    v6e = node_label(chart, "slice_v6e_64")
    for text in ("<b>v6e-64</b>", "TPU v6e 8x8 · 64 chips", "ct6e-standard-4t × 16 hosts", "2 slices",
                 "reservation ml-training-v6e", "us-central1-b"):
        assert text in v6e
    ironwood = node_label(chart, "slice_ironwood_64")
    assert "TPU tpu7x 4x4x4 · 64 chips" in ironwood and "tpu7x-standard-4t × 16 hosts" in ironwood
    serve = node_label(chart, "slice_v6e_8_serve")
    assert "ct6e-standard-8t × 1 host<" in serve and "4 slices · on-demand" in serve

    assert ("cluster", "system") in edges(chart)
    assert '-->|"2 node pools"| slice_v6e_64' in chart
    assert {("slice_v6e_64", "RayCluster_training_train_v6e_64"),
            ("slice_ironwood_64", "RayCluster_training_train_ironwood_ironwood"),
            ("slice_v6e_8_serve", "RayService_serving_llm_v6e_8")} <= edges(chart)
    assert 'subgraph RayService_serving_llm["RayService serving/llm"]' in chart
    group = node_label(chart, "RayCluster_training_train_v6e_64")
    assert "2 replicas (min 2, max 2)" in group and "16 pods per replica × 4 TPU chips" in group


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_draws_each_slice_and_worker_group_once(stack):
    config = config_of(stack)
    chart = diagram.mermaid(config)
    for s in config.tpu_slices:
        assert chart.count(f"  {diagram.node_id('slice', s.name)}[") == 1
    for pool in (*config.gpu_pools, *config.cpu_pools):
        assert chart.count(f"  {diagram.node_id('pool', pool.name)}[") == 1
    groups = [g for obj in config.ray_objects for g in obj.worker_groups]
    assert sum(1 for a, b in edges(chart) if a.startswith(("slice_", "pool_"))) == len(groups)
    # Mermaid-safe: identifiers are words, labels carry no raw double quote.
    for line in chart.splitlines()[1:]:
        assert line.count('"') % 2 == 0, line


def test_autopilot_has_no_node_pools_and_marks_show_changes():
    values = minimal_values(cluster={"name": "ap", "location": "us-east5", "mode": "autopilot",
                                     "deletionProtection": False})
    config = parse_stack_config(values, "test")
    chart = diagram.mermaid(config, marks={"v6e-4": "risky"})
    assert "system" not in edges_nodes(chart)
    assert 'cluster -.->|"Autopilot, node selectors"| slice_v6e_4' in chart
    assert "class slice_v6e_4 risky" in chart and "classDef risky" in chart


def edges_nodes(chart: str) -> set[str]:
    return {n for edge in edges(chart) for n in edge}


def test_quotes_in_labels_are_escaped():
    assert diagram.label('a "b"') == '"a #quot;b#quot;"'
    assert diagram.node_id("RayJob", "ray-jobs", "smoke.v2") == "RayJob_ray_jobs_smoke_v2"


def test_cli(capsys):
    assert diagram.main(["dev", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("```mermaid\nflowchart LR\n") and out.endswith("```\n")
    assert diagram.main(["no-such-stack"]) == 1
