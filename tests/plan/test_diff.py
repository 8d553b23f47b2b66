"""`python -m plan --diff-against REF`: resource-level changes between a git revision and the working tree.

End to end on a temporary git repository holding a copy of the project: a clean tree diffs to nothing, an added slice
creates node pools, a changed topology of a multi-host slice replaces its pool and is flagged, a removed slice deletes
its pool; each reports the TPU chips and hosts it adds or removes, and `--fail-on-risk` turns the risky ones into exit
status 3. Each revision is planned in a subprocess (~3 s), so the repository and its diffs are built once per module.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest
import yaml
from rich.console import Console

from plan import diff
from plan.review import classify, paths, replacement, revisions
from plan.review.markdown import MARKER, markdown
from plan.review.text import print_text

from helpers import ROOT, git, project_repo


def edit_stack(repo: Path, stack: str, change) -> None:
    path = repo / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    change(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def add_slice(config: dict) -> None:
    config["ray-tpu-gke:tpuSlices"].append({"name": "v6e-8", "generation": "v6e", "topology": "2x4", "count": 2,
                                             "capacity": "spot", "autoscaling": {"enabled": True, "minNodes": 0}})


def change_topology(config: dict) -> None:
    config["ray-tpu-gke:tpuSlices"][0]["topology"] = "4x8"  # v6e 16 -> 32 chips, 4 -> 8 hosts


def add_spare_slice(config: dict) -> None:
    config["ray-tpu-gke:tpuSlices"].append({"name": "v6e-4", "generation": "v6e", "topology": "2x2",
                                             "capacity": "spot"})


def break_topology(config: dict) -> None:
    config["ray-tpu-gke:tpuSlices"][0]["topology"] = "4x5"
    config["ray-tpu-gke:rayJobs"] = []


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git repository with the project: `broken` (with a stack `legacy` that cannot plan), then `base` (without it),
    `extra` (base with a spare single-host slice in staging, on a branch of its own), and a clean working tree at
    base."""
    repo = tmp_path_factory.mktemp("project")
    project_repo(repo)
    shutil.copy2(repo / "stacks" / "Pulumi.staging.yaml", repo / "stacks" / "Pulumi.legacy.yaml")
    edit_stack(repo, "legacy", break_topology)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a legacy stack with an invalid topology")
    git(repo, "tag", "broken")
    git(repo, "rm", "-q", "stacks/Pulumi.legacy.yaml")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    edit_stack(repo, "staging", add_spare_slice)
    git(repo, "commit", "-qam", "a spare slice")
    git(repo, "tag", "extra")
    git(repo, "reset", "-q", "--hard", "base")
    return repo


@pytest.fixture(scope="module")
def clean_run(repo):
    """The CLI on the clean tree, before any edit: JSON of one stack."""
    done = subprocess.run([sys.executable, "-m", "plan", "dev", "--diff-against", "base", "--format", "json"],
                          cwd=repo, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(repo)))
    return done


@pytest.fixture(scope="module")
def changed(repo, clean_run):
    """staging gains a slice, and its multi-host slice changes topology (one stack: two plans)."""
    edit_stack(repo, "staging", add_slice)
    edit_stack(repo, "staging", change_topology)
    report = diff.diff_stacks(["staging"], "base", root=repo)
    return {d.stack: d for d in report.stacks}, report


@pytest.fixture(scope="module")
def gated_run(repo, changed):
    """The CLI with --fail-on-risk, against `extra`: staging's spare slice is removed besides the changes above."""
    return subprocess.run([sys.executable, "-m", "plan", "staging", "--diff-against", "extra", "--fail-on-risk",
                           "--format", "json"], cwd=repo, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(repo)))


def grow_prod_training_slices(config: dict) -> None:
    slices = config["ray-tpu-gke:tpuSlices"]
    assert (slices[0]["name"], slices[0]["topology"], slices[0]["count"]) == ("v6e-64", "8x8", 2)
    slices[0]["topology"] = "8x16"  # v6e 64 -> 128 chips, 16 -> 32 hosts per slice, both slices


@pytest.fixture(scope="module")
def prod_grown(repo, changed):
    """prod's two reserved v6e-64 training slices grow from 8x8 to 8x16 (the other stacks as `changed` left them)."""
    edit_stack(repo, "prod", grow_prod_training_slices)
    report = diff.diff_stacks(["prod"], "base", root=repo)
    return report.stacks[0], report


def by_name(stack_diff, name):
    return next(c for c in stack_diff.changes if c.name == name)


# --- end to end -------------------------------------------------------------------------------------------------------


def test_clean_tree_diffs_to_nothing(clean_run):
    """Through the CLI, as CI runs it."""
    assert clean_run.returncode == 0, clean_run.stderr
    payload = json.loads(clean_run.stdout)
    assert payload["stack"] == "dev"
    assert payload["changes"] == []
    assert payload["summary"]["same"] > 20


def test_worktree_is_removed(repo, changed):
    assert git(repo, "worktree", "list").count("\n") == 1


def test_added_slice_creates_its_node_pools(changed):
    staging = changed[0]["staging"]
    creates = {(c.type, c.name) for c in staging.changes if c.op == "create"}
    alert = "gcp:monitoring/alertPolicy:AlertPolicy"  # every slice entry comes with its alert policies (issue #15)
    assert creates == {("ray-tpu-gke:index:TpuSlicePools", "v6e-8"), ("gcp:container/nodePool:NodePool", "v6e-8-0"),
                       ("gcp:container/nodePool:NodePool", "v6e-8-1"), (alert, "ray-tpu-staging-v6e-8-idle"),
                       (alert, "ray-tpu-staging-v6e-8-unavailable"), (alert, "ray-tpu-staging-v6e-8-interruptions")}
    pool = by_name(staging, "v6e-8-0")
    assert not pool.risky and "ct6e-standard-8t" in pool.summary


def test_changed_topology_replaces_the_pool_and_is_flagged(changed):
    staging = changed[0]["staging"]
    pool = by_name(staging, "v6e-16-0")
    assert pool.op == "replace"
    assert pool.risky
    assert "placementPolicy.tpuTopology" in pool.diffs
    detail = next(d for d in pool.details if d.path == "placementPolicy.tpuTopology")
    assert (detail.old, detail.new, detail.replaces) == ("4x4", "4x8", True)
    assert any("TPU node pool v6e-16-0" in r and "capacity" in r for r in pool.reasons)
    # The Ray objects follow the new shape: an update, not a replacement.
    ray = by_name(staging, "ray-train")
    assert ray.op == "update" and not ray.risky
    assert any(p.endswith("numOfHosts") for p in ray.diffs)
    # The system pool and the cluster are untouched.
    assert all(c.type != "gcp:container/cluster:Cluster" for c in staging.changes)
    assert staging.risky == [pool]


# TPU numbers as Google documents them (v6e: ct6e-standard-8t one 8-chip host, ct6e-standard-4t 4 chips per host),
# written out here to check the catalogue-derived counts against.


def test_added_and_replaced_slices_report_the_chips_and_hosts_they_add_and_remove(changed):
    capacity = changed[0]["staging"].capacity
    slices = {s.slice: s for s in capacity.slices}
    assert set(slices) == {"v6e-8", "v6e-16"}
    # Two new 2x4 slices, each one 8-chip host (autoscaled: its maximum).
    added = slices["v6e-8"]
    assert added.pools == [("v6e-8-0", "create"), ("v6e-8-1", "create")]
    assert (added.chips_added, added.hosts_added, added.chips_removed, added.hosts_removed) == (16, 2, 0, 0)
    # 4x4 (16 chips on 4 hosts) torn down, 4x8 (32 chips on 8 hosts) to be obtained.
    replaced = slices["v6e-16"]
    assert replaced.pools == [("v6e-16-0", "replace")]
    assert (replaced.chips_added, replaced.hosts_added, replaced.chips_removed,
            replaced.hosts_removed) == (32, 8, 16, 4)
    assert capacity.total() == {"chipsAdded": 48, "chipsRemoved": 16, "hostsAdded": 10, "hostsRemoved": 4}


def test_removed_slice_reports_the_chips_and_hosts_it_removes(gated_run):
    capacity = json.loads(gated_run.stdout)["capacity"]
    removed = next(s for s in capacity["slices"] if s["slice"] == "v6e-4")
    # One 2x2 slice on one 4-chip host, not autoscaled: its node count.
    assert removed == {"slice": "v6e-4", "pools": [{"pool": "v6e-4-0", "op": "delete"}],
                       "chipsAdded": 0, "chipsRemoved": 4, "hostsAdded": 0, "hostsRemoved": 1}
    assert capacity["total"] == {"chipsAdded": 48, "chipsRemoved": 20, "hostsAdded": 10, "hostsRemoved": 5}


def test_fail_on_risk_exits_3_on_a_risky_replacement_or_deletion(gated_run):
    assert gated_run.returncode == 3, gated_run.stderr
    assert json.loads(gated_run.stdout)["risky"] == 2  # the output is complete: the gate only sets the status
    assert gated_run.stderr.splitlines() == [
        "gate --fail-on-risk (exit 3): staging: replace gcp:container/nodePool:NodePool v6e-16-0",
        "gate --fail-on-risk (exit 3): staging: delete gcp:container/nodePool:NodePool v6e-4-0",
    ]


def test_risky_change_exits_0_without_the_gate_and_3_with_it(monkeypatch, capsys, changed):
    _, report = changed
    monkeypatch.setattr(diff, "diff_stacks", lambda *a, **k: dataclasses.replace(report))
    args = argparse.Namespace(stack="staging", all_stacks=False, diff_against="base", format="markdown", json=False,
                              config_file=None, fail_on_risk=False)
    assert diff.run(args) == 0
    out = capsys.readouterr()
    assert "[!IMPORTANT]" not in out.out and not out.err
    args.fail_on_risk = True
    assert diff.run(args) == 3
    out = capsys.readouterr()
    assert "> `--fail-on-risk` is on, so this check fails (exit status 3):" in out.out
    assert "> - staging: replace gcp:container/nodePool:NodePool v6e-16-0" in out.out
    assert "gate --fail-on-risk (exit 3): staging: replace" in out.err


def test_stack_missing_at_a_revision_is_all_creates_or_all_deletes(repo):
    assert revisions.plan_revision(repo, "qa").status == "absent"
    assert set(revisions.stacks_at(repo)) >= {"dev", "staging", "prod"}
    pool = step(replacement.NODE_POOL, "p", TPU_POOL)
    created = classify.compare(revisions.Side("absent"), planned(pool), "qa", "base")
    assert [c.op for c in created.changes] == ["create"] and not created.risky
    assert "does not exist at base" in created.to_json()["note"]
    deleted = classify.compare(planned(pool), revisions.Side("absent"), "qa", "base")
    assert [c.op for c in deleted.changes] == ["delete"] and deleted.changes[0].risky
    assert "removed in the working tree" in deleted.to_json()["note"]


def test_json_shape(changed):
    _, report = changed
    payload = json.loads(json.dumps(report.to_json(), default=repr))
    assert payload["against"] == "base" and len(payload["commit"]) == 40
    staging = next(s for s in payload["stacks"] if s["stack"] == "staging")
    assert set(staging) >= {"stack", "changes"}
    for change in staging["changes"]:
        assert set(change) >= {"op", "urn", "type", "diffs"}
        assert change["op"] in ("create", "update", "replace", "delete")
        assert change["urn"].startswith("urn:pulumi:staging::ray-tpu-gke::")
        assert all(isinstance(p, str) for p in change["diffs"])
    assert set(staging["capacity"]) == {"slices", "total"}
    for entry in staging["capacity"]["slices"]:
        assert set(entry) == {"slice", "pools", "chipsAdded", "chipsRemoved", "hostsAdded", "hostsRemoved"}
    replaced = next(c for c in staging["changes"] if c["op"] == "replace")
    assert replaced["risky"] is True and replaced["type"] == "gcp:container/nodePool:NodePool"


def test_markdown_comment(changed, repo):
    _, report = changed
    text = markdown(report, repo)
    assert text.startswith(MARKER)
    assert "| stack | create | update | replace | delete | unchanged | risky |" in text
    # 3 creates for the new slice entry's pools, and 3 for its alert policies (issue #15)
    assert re.search(r"\| `staging` \| 6 \| \d+ \| 1 \| 0 \| \d+ \| \*\*1\*\* :warning: \|", text)
    assert "> [!CAUTION]" in text
    # Risky first: the caution block precedes the table, and the replaced pool heads staging's details.
    assert text.index("[!CAUTION]") < text.index("| stack |")
    staging_details = text[text.index("<summary><b>staging</b>"):]
    assert staging_details.index("v6e-16-0") < staging_details.index("ray-train")
    assert "<details>" in text and "</details>" in text
    assert "placementPolicy.tpuTopology: \"4x4\" => \"4x8\"  (forces replacement)" in text
    assert "```mermaid" in text and "class slice_v6e_16 risky" in text and "class slice_v6e_8 created" in text
    assert "-/+ replace gcp:container/nodePool:NodePool v6e-16-0" in text  # red in GitHub's diff colouring
    # The capacity next to the risky changes, before the table of every stack.
    assert "**TPU capacity**: 48 chips (10 hosts) added, 16 chips (4 hosts) removed" in text
    assert "| `staging` | `v6e-16` | replace v6e-16-0 | 32 | 16 | 8 | 4 |" in text
    assert "| `staging` | `v6e-8` | create v6e-8-0, v6e-8-1 | 16 | 0 | 2 | 0 |" in text
    assert text.index("[!CAUTION]") < text.index("**TPU capacity**") < text.index("| stack |")


def test_text_output(changed):
    _, report = changed
    console = Console(record=True, width=200, color_system=None)
    print_text(report, console)
    out = console.export_text()
    assert "RISKY" in out and "forces replacement" in out
    assert "+- replace" in out and "v6e-16-0" in out
    assert "Resources:" in out
    assert "TPU capacity: 48 chips (10 hosts) added, 16 chips (4 hosts) removed" in out
    assert "v6e-8 (create v6e-8-0, v6e-8-1): 16 chips (2 hosts) added" in out


def test_revision_that_cannot_plan_is_reported(repo, changed):
    report = diff.diff_stacks(["legacy"], "broken", root=repo)
    (legacy,) = report.stacks
    assert legacy.old.status == "invalid" and legacy.new.status == "absent"
    assert "cannot plan stack legacy at broken: the configuration is invalid" in legacy.error
    assert "ray-tpu-gke:tpuSlices[0].topology" in legacy.error
    assert report.exit_code == 1
    assert "cannot plan" in markdown(report, repo)


def test_unknown_ref(repo):
    report = diff.diff_stacks(["dev"], "no-such-ref", root=repo)
    assert report.error and "no-such-ref" in report.error
    assert report.exit_code == 1


def test_run_formats(monkeypatch, capsys, changed):
    _, report = changed
    monkeypatch.setattr(diff, "diff_stacks", lambda *a, **k: report)
    args = argparse.Namespace(stack=None, all_stacks=True, diff_against="base", format="json", json=False,
                              config_file=None)
    assert diff.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [s["stack"] for s in payload["stacks"]] == ["staging"]
    args.all_stacks, args.stack = False, "staging"
    assert diff.run(args) == 0
    assert json.loads(capsys.readouterr().out)["stack"] == "staging"
    args.format = "markdown"
    diff.run(args)
    assert capsys.readouterr().out.startswith(MARKER)
    args.format = "text"
    diff.run(args)
    assert "Stack staging: the working tree against base" in capsys.readouterr().out
    args.all_stacks, args.config_file = True, Path("x.yaml")
    assert diff.run(args) == 1
    assert "--config-file" in capsys.readouterr().err


# --- the comparison on hand-made plans --------------------------------------------------------------------------------


def step(type_, name, inputs=None, parent="urn:pulumi:s::p::pulumi:pulumi:Stack::p-s", protect=False, ignore=(),
         parent_type="pulumi:pulumi:Stack"):
    return {"op": "create", "urn": f"urn:pulumi:s::p::{parent_type}${type_}::{name}",
            "newState": {"type": type_, "name": name, "custom": True, "parent": parent, "provider": None,
                         "dependencies": [], "inputs": inputs or {},
                         "options": {"protect": protect, "ignoreChanges": list(ignore), "deleteBeforeReplace": False}}}


def planned(*steps):
    return revisions.Side("planned", {"steps": list(steps), "outputs": {}})


TPU_POOL = {"name": "v5p-0", "location": "us-east5-a", "nodeCount": 2,
            "nodeConfig": {"machineType": "ct5p-hightpu-4t", "labels": {"a": "1"}},
            "placementPolicy": {"type": "COMPACT", "tpuTopology": "2x2x2"}}


def test_update_of_a_tpu_pool_label_is_not_risky():
    new = json.loads(json.dumps(TPU_POOL))
    new["nodeConfig"]["labels"]["a"] = "2"
    result = classify.compare(planned(step(replacement.NODE_POOL, "p", TPU_POOL)),
                              planned(step(replacement.NODE_POOL, "p", new)), "s")
    (change,) = result.changes
    assert (change.op, change.diffs, change.risky) == ("update", ['nodeConfig.labels.a'], False)


def test_a_tpu_pool_resized_in_place_adds_the_difference():
    new = json.loads(json.dumps(TPU_POOL))
    new["nodeCount"] = 4
    result = classify.compare(planned(step(replacement.NODE_POOL, "v5p-0", TPU_POOL)),
                              planned(step(replacement.NODE_POOL, "v5p-0", new)), "s")
    assert [c.op for c in result.changes] == ["update"]
    # ct5p-hightpu-4t: 4 chips per host; 2 -> 4 hosts.
    assert result.to_json()["capacity"]["slices"] == [{"slice": "v5p", "pools": [{"pool": "v5p-0", "op": "update"}],
                                                        "chipsAdded": 8, "chipsRemoved": 0, "hostsAdded": 2,
                                                        "hostsRemoved": 0}]


def test_ignored_changes_are_not_diffs():
    new = json.loads(json.dumps(TPU_POOL))
    new["nodeCount"] = 0
    new["placementPolicy"]["type"] = None
    old_step = step(replacement.NODE_POOL, "p", TPU_POOL, ignore=["nodeCount", "placementPolicy.type"])
    new_step = step(replacement.NODE_POOL, "p", new, ignore=["nodeCount", "placementPolicy.type"])
    assert classify.compare(planned(old_step), planned(new_step), "s").changes == []


def test_machine_type_zone_and_spot_replace_a_tpu_pool():
    for path, value in ((("nodeConfig", "machineType"), "ct5p-hightpu-8t"), (("location",), "us-east5-b"),
                        (("nodeConfig", "spot"), True), (("placementPolicy",), None)):
        new = json.loads(json.dumps(TPU_POOL))
        target = new
        for key in path[:-1]:
            target = target[key]
        if value is None:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        (change,) = classify.compare(planned(step(replacement.NODE_POOL, "p", TPU_POOL)),
                                 planned(step(replacement.NODE_POOL, "p", new)), "s").changes
        assert change.op == "replace" and change.risky, path


def test_cpu_pool_machine_type_is_an_update_and_deleting_a_tpu_pool_is_risky():
    cpu = {"name": "system", "nodeConfig": {"machineType": "e2-standard-4"}}
    bigger = {"name": "system", "nodeConfig": {"machineType": "e2-standard-8"}}
    (change,) = classify.compare(planned(step(replacement.NODE_POOL, "system", cpu)),
                             planned(step(replacement.NODE_POOL, "system", bigger)), "s").changes
    assert change.op == "update" and not change.risky
    (change,) = classify.compare(planned(step(replacement.NODE_POOL, "p", TPU_POOL)), planned(), "s").changes
    assert change.op == "delete" and change.risky
    assert "ct5p-hightpu-4t, topology 2x2x2, 2 hosts" in change.summary


def test_cluster_replacement_and_protected_deletion_are_risky():
    old = step(replacement.CLUSTER, "c", {"name": "a", "location": "us-east5"}, protect=True)
    new = step(replacement.CLUSTER, "c", {"name": "a", "location": "us-east5-b"}, protect=True)
    (change,) = classify.compare(planned(old), planned(new), "s").changes
    assert change.op == "replace" and change.risky
    assert any("GKE cluster" in r for r in change.reasons) and any("protected" in r for r in change.reasons)
    bucket = step("gcp:storage/bucket:Bucket", "b", {"name": "b"}, protect=True)
    (change,) = classify.compare(planned(bucket), planned(), "s").changes
    assert change.op == "delete" and change.risky and change.protected


def test_new_parent_is_a_replacement():
    old = step(replacement.NODE_POOL, "p", TPU_POOL, parent="urn:a", parent_type="x:index:A")
    new = step(replacement.NODE_POOL, "p", TPU_POOL, parent="urn:b", parent_type="x:index:B")
    (change,) = classify.compare(planned(old), planned(new), "s").changes
    assert change.op == "replace" and change.diffs == ["[parent]"] and change.risky
    assert change.old_urn == old["urn"] and change.urn == new["urn"]


def test_renamed_resource_with_same_physical_name_is_a_replacement():
    old = step("kubernetes:core/v1:Namespace", "ns-a", {"metadata": {"name": "ray"}})
    new = step("kubernetes:core/v1:Namespace", "ns-b", {"metadata": {"name": "ray"}})
    (change,) = classify.compare(planned(old), planned(new), "s").changes
    assert change.op == "replace" and "[name]" in change.diffs


def test_subnetwork_range_grows_in_place_and_shrinks_by_replacement():
    sub = "gcp:compute/subnetwork:Subnetwork"
    grow = classify.compare(planned(step(sub, "s", {"ipCidrRange": "10.0.0.0/20"})),
                        planned(step(sub, "s", {"ipCidrRange": "10.0.0.0/16"})), "s").changes
    shrink = classify.compare(planned(step(sub, "s", {"ipCidrRange": "10.0.0.0/16"})),
                          planned(step(sub, "s", {"ipCidrRange": "10.0.0.0/20"})), "s").changes
    assert [c.op for c in grow] == ["update"] and [c.op for c in shrink] == ["replace"]


def test_property_paths_round_trip():
    for text in ('nodeConfig.labels["ray-tpu-gke/topology"]', "spec.workerGroupSpecs[0].numOfHosts", "items[*].x"):
        tokens = paths.parse_path(text)
        assert paths.format_path(tokens) == text
    assert paths.parse_path('a["b.c"][2]') == ("a", "b.c", 2)


# --- the replacement table names real inputs --------------------------------------------------------------------------


def _args_class(type_token: str):
    package, module_and_kind = type_token.split(":", 1)
    module, _, kind = module_and_kind.rpartition(":")
    return getattr(getattr(gcp, module.split("/")[0]), f"{kind}Args")


def _walk(cls, tokens):
    names = pulumi._types.input_type_py_to_pulumi_names(cls)
    by_pulumi = {v: k for k, v in names.items()}
    head, rest = tokens[0], tokens[1:]
    assert head in by_pulumi, f"{cls.__name__} has no input {head!r}"
    if not rest:
        return
    annotation = str(inspect.signature(cls.__init__).parameters[by_pulumi[head]].annotation)
    nested = re.search(r"'(\w+Args)'", annotation)
    assert nested, f"{cls.__name__}.{head} is not an object"
    _walk(getattr(sys.modules[cls.__module__], nested.group(1)), rest)


@pytest.mark.parametrize("type_token", sorted(replacement.REPLACE_PATHS))
def test_replace_paths_are_inputs_of_the_provider(type_token):
    cls = _args_class(type_token)
    for rule in replacement.REPLACE_PATHS[type_token] + tuple(replacement.CONDITIONAL_REPLACE.get(type_token, {})):
        if rule != "*":
            _walk(cls, paths.parse_path(rule))
    if type_token == replacement.NODE_POOL:
        for rule in replacement.TPU_POOL_REPLACE_PATHS:
            _walk(cls, paths.parse_path(rule))


def test_documented_sample_comment_has_the_current_format():
    """docs/review.md pastes a real comment; a change of format must refresh it."""
    review = (ROOT / "docs" / "review.md").read_text()
    assert MARKER in review
    assert "| stack | create | update | replace | delete | unchanged | risky |" in review
    assert "-/+ replace gcp:container/nodePool:NodePool v6e-16-0" in review
    assert "placementPolicy.tpuTopology: \"4x4\" => \"4x8\"  (forces replacement)" in review
    assert "```mermaid\nflowchart LR" in review


def test_a_changed_rayjob_is_replaced_and_the_diff_says_it_runs_again():
    from ray_tpu_gke.resources import ray

    # The program's option, as the plan records it (plan/harness.py): a changed spec replaces the job.
    job = {"metadata": {"name": "smoke", "namespace": "ray"}, "spec": {"entrypoint": "python -m a"}}
    edited = {"metadata": job["metadata"], "spec": {"entrypoint": "python -m b"}}
    options = {"protect": False, "ignoreChanges": [], "deleteBeforeReplace": True,
               "replaceOnChanges": list(ray.RAYJOB_REPLACE.replace_on_changes)}
    old, new = step(classify.RAYJOB, "ray-smoke", job), step(classify.RAYJOB, "ray-smoke", edited)
    for s in (old, new):
        s["newState"]["options"] = options
    (change,) = classify.compare(planned(old), planned(new), "s").changes
    assert change.op == "replace" and change.diffs == ["spec.entrypoint"] and change.risky
    assert any("the job runs again" in r for r in change.reasons)
    new["newState"]["options"] = {**options, "replaceOnChanges": []}  # without the option: an update, run by nobody
    (change,) = classify.compare(planned(old), planned(new), "s").changes
    assert change.op == "update"


def test_rayjobs_are_planned_to_be_replaced_when_their_spec_changes():
    from helpers import plan_of, steps_of_type

    (job,) = steps_of_type(plan_of("staging"), classify.RAYJOB)
    assert job["newState"]["options"]["replaceOnChanges"] == ["spec"]
    assert job["newState"]["options"]["deleteBeforeReplace"] is True


def test_growing_prod_slices_states_the_budget_breach_the_reservation_and_the_name(prod_grown):
    """The prod 8x8 -> 8x16 change: over the monthly budget (the policy rule's own verdict), the reservation must
    hold twice the chips, and `v6e-64` is no longer 64 chips."""
    from policy import engine

    prod, report = prod_grown
    assert prod.error is None, prod.error
    found = prod.to_json()["consequences"]
    # The budget: policy/rules/cost.py's rule on the new plan fails, and held on the old one.
    verdict = [v for v in engine.check_plan(prod.new.plan, "prod") if v.rule.id == "cost-monthly-budget"]
    assert len(verdict) == 1 and not [v for v in engine.check_plan(prod.old.plan, "prod")
                                      if v.rule.id == "cost-monthly-budget"]
    assert found["budget"] == {"rule": "cost-monthly-budget", "level": "mandatory", "verdict": "fail",
                               "message": verdict[0].message, "before": "pass"}
    assert "over its monthly budget $450,000.00" in verdict[0].message
    # The reservation: 2 slices x 8x16 = 2 x 32 ct6e-standard-4t hosts of 4 chips (the catalogue's v6e).
    from ray_tpu_gke import slice_shape

    old_shape, new_shape = slice_shape("v6e", "8x8"), slice_shape("v6e", "8x16")
    (reservation,) = found["reservations"]
    assert reservation["reservation"] == "ml-training-v6e" and reservation["zone"] == "us-central1-b"
    assert reservation["machineType"] == new_shape.machine_type.name
    assert reservation["needs"] == {"vms": 2 * new_shape.hosts, "chips": 2 * new_shape.chips} == {"vms": 64,
                                                                                                   "chips": 256}
    assert reservation["before"] == {"vms": 2 * old_shape.hosts, "chips": 2 * old_shape.chips}
    assert sorted(reservation["pools"]) == ["v6e-64-0", "v6e-64-1"]
    assert "does not state what the reservation holds" in reservation["said"]
    # The name: v6e-64 states 64 chips; the slice now has 128.
    assert found["names"] == [{"kind": "slice", "name": "v6e-64", "states": "v6e with 64 chips",
                               "is": "v6e with 128 chips"}]
    # Each output states them: text, markdown (the pull-request comment) and JSON (above).
    console = Console(width=300, record=True)
    print_text(report, console)
    text = console.export_text()
    comment = markdown(report, diagrams=False)
    for output in (text, comment):
        assert "policy rule cost-monthly-budget (mandatory) fails" in output
        assert "Reservation ml-training-v6e in us-central1-b: must hold 64 ct6e-standard-4t VMs, 256 chips" in output
        assert "Name: slice v6e-64 states v6e with 64 chips, but is now v6e with 128 chips" in output
    assert "> **Consequences** of this change" in comment


def test_a_name_states_a_shape_by_the_catalogues_generations_or_a_topology():
    from plan.review.consequences import stated

    assert stated("v6e-64") == {"generation": "v6e", "chips": 64}
    assert stated("train-v5p-128-a") == {"generation": "v5p", "chips": 128}
    assert stated("tpu7x-4x4x4") == {"topology": "4x4x4"}
    assert stated("v6e-8-serve") == {"generation": "v6e", "chips": 8}
    assert stated("pool-2x4") == {"topology": "2x4"}
    assert stated("ironwood-64") == {} and stated("v7-64") == {} and stated("system") == {}

