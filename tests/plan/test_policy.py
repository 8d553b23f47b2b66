"""The policy pack: every committed stack passes, and each handcrafted violation names its resource and rule.

Plans come from the shared harness (`plan_of`, computed once per session); violating plans are copies with one
thing broken by hand, as a contributor or a hand edit might break it.
"""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
import warnings

import pytest
import yaml

from ray_tpu_gke import catalog
from helpers import ROOT, STACKS, minimal_values, plan_of, run
import snapshot_files
from policy_findings import assert_violation, cluster, found, groups, mandatory, pool, ray, state, urn_of, worker
from policy import engine, pack, rules, slices, view
from policy.rules import ADVISORY, MANDATORY



# --- every stack passes: no mandatory violation; advisory findings are reported, as `make policy` reports them -----


def report_advisory(stack: str, violations: list[engine.Violation]) -> None:
    """Advisory findings are advice, not failures: a pytest warning per stack that has some, naming each."""
    advisory = [v for v in violations if v.level == ADVISORY]
    if advisory:
        warnings.warn(f"{stack}: {len(advisory)} advisory policy finding(s):\n{engine.render(advisory)}",
                      stacklevel=2)


@pytest.mark.parametrize("stack", STACKS)
def test_stack_plans_pass(stack):
    violations = found(plan_of(stack), stack)
    assert not [v for v in violations if v.level == MANDATORY], engine.render(violations)
    report_advisory(stack, violations)


@pytest.mark.parametrize("stack", STACKS)
def test_recorded_snapshots_pass(stack):
    recorded = snapshot_files.recorded(stack)
    if not recorded:
        pytest.skip(f"no recorded plan of {stack} yet")
    plan = snapshot_files.join(recorded)
    violations = found(plan)
    assert not [v for v in violations if v.level == MANDATORY], engine.render(violations)


def test_stacks_do_exercise_the_rules():
    """The clean result means something: the stacks hold what the TPU rules inspect."""
    prod = view.from_plan(plan_of("prod"))
    pools = slices.tpu_pools(prod)
    assert {p.name for p in pools if p.shape and p.shape.multi_host} == {"v6e-64-0", "v6e-64-1", "ironwood-64-0"}
    ironwood = next(p for p in pools if p.name == "ironwood-64-0")
    assert ironwood.source.startswith("workload policy") and ironwood.shape.hosts == 16
    tpu_groups = [g for r in prod.ray_objects for g in slices.tpu_worker_groups(r)]
    assert len(tpu_groups) == 3 and all(g.pools(pools) for g in tpu_groups)


def test_autopilot_stack_passes_and_flex_start_serving_is_advised():
    values = minimal_values(
        cluster={"name": "ray-ap", "location": "us-east5", "mode": "autopilot", "deletionProtection": True,
                 "masterAuthorizedNetworks": [{"cidrBlock": "10.0.0.0/8"}]},
        tpuSlices=[{"name": "v6e-16", "generation": "v6e", "topology": "4x4", "capacity": "flexStart",
                    "zone": "us-east5-b"}],
        rayClusters=[],
        rayServices=[{"name": "llm", "serveConfig": {"applications": []},
                      "workerGroups": [{"name": "tpu", "slice": "v6e-16", "replicas": 1}]}],
    )
    plan = run(values, stack="prod-autopilot")
    assert mandatory(plan) == []
    assert_violation(plan, "prod-serving-capacity", "ray-llm", "ComputeClass v6e-16-flex-start", level=ADVISORY)


# --- TPU invariants ------------------------------------------------------------------------------------------------


def test_wrong_num_of_hosts():
    plan = plan_of("staging")
    groups(ray(plan, "ray-train"))[0]["numOfHosts"] = 2
    assert_violation(plan, "tpu-webhook-num-of-hosts", "ray-train", "numOfHosts is 2", "must be 4")


def test_fractional_chips():
    plan = plan_of("dev")
    resources = worker(ray(plan, "ray-dev"))["resources"]
    resources["limits"][catalog.TPU_RESOURCE] = resources["requests"][catalog.TPU_RESOURCE] = "0.5"
    assert_violation(plan, "tpu-whole-chips", "ray-dev", "'0.5'", "whole")


def test_part_of_a_host():
    plan = plan_of("dev")
    group = groups(ray(plan, "ray-dev"))[0]
    resources = group["template"]["spec"]["containers"][0]["resources"]
    resources["limits"][catalog.TPU_RESOURCE] = resources["requests"][catalog.TPU_RESOURCE] = "2"
    group["numOfHosts"] = 2  # what the webhook's arithmetic alone would accept
    hit = assert_violation(plan, "tpu-whole-chips", "ray-dev", "2 per pod", "has 4 chips")
    assert not [v for v in found(plan) if v.rule.id == "tpu-webhook-num-of-hosts"], hit


def test_no_tpu_request():
    plan = plan_of("dev")
    resources = worker(ray(plan, "ray-dev"))["resources"]
    del resources["limits"][catalog.TPU_RESOURCE], resources["requests"][catalog.TPU_RESOURCE]
    assert_violation(plan, "tpu-whole-chips", "ray-dev", "no container requests google.com/tpu")


def test_requests_differ_from_limits():
    plan = plan_of("staging")
    worker(ray(plan, "ray-train"))["resources"]["requests"][catalog.TPU_RESOURCE] = "2"
    assert_violation(plan, "tpu-requests-equal-limits", "ray-train", "'2' with limit '4'")


def test_missing_topology_selector():
    plan = plan_of("prod")
    del groups(ray(plan, "training-train-ironwood"))[0]["template"]["spec"]["nodeSelector"][catalog.TOPOLOGY_LABEL]
    assert_violation(plan, "tpu-node-selectors", "training-train-ironwood", "worker group ironwood",
                     f"lacks {catalog.TOPOLOGY_LABEL}")


def test_topology_not_in_catalogue():
    plan = plan_of("prod")
    groups(ray(plan, "serving-llm", "RayService"))[0]["template"]["spec"]["nodeSelector"][
        catalog.TOPOLOGY_LABEL] = "3x3"
    assert_violation(plan, "tpu-node-selectors", "serving-llm", "3x3", "allowed:")


def test_multihost_pool_without_placement():
    plan = plan_of("staging")
    del pool(plan, "v6e-16-0")["inputs"]["placementPolicy"]
    assert_violation(plan, "tpu-multihost-placement", "v6e-16-0", "4x4", "4 hosts", "no placementPolicy")


def test_placement_not_compact():
    plan = plan_of("prod")
    pool(plan, "v6e-64-1")["inputs"]["placementPolicy"]["type"] = "SPREAD"
    assert_violation(plan, "tpu-multihost-placement", "v6e-64-1", "'SPREAD'", "COMPACT")


def test_placement_topology_not_in_catalogue():
    plan = plan_of("prod")
    pool(plan, "v6e-64-0")["inputs"]["placementPolicy"]["tpuTopology"] = "6x6"
    assert_violation(plan, "tpu-multihost-placement", "v6e-64-0", "6x6", "allowed:")


def test_placement_topology_differs_from_what_ray_expects():
    plan = plan_of("prod")
    pool(plan, "v6e-64-0")["inputs"]["placementPolicy"]["tpuTopology"] = "8x16"
    assert_violation(plan, "tpu-multihost-placement", "v6e-64-0", "RayCluster training/train worker group v6e-64",
                     "expect a v6e 8x8 slice", "8x16")


def test_workload_policy_missing_from_stack():
    plan = plan_of("prod")
    pool(plan, "ironwood-64-0")["inputs"]["placementPolicy"]["policyName"] = "elsewhere"
    assert_violation(plan, "tpu-multihost-placement", "ironwood-64-0", "policyName elsewhere")


def test_node_count_differs_from_hosts():
    plan = plan_of("prod")
    pool(plan, "v6e-64-0")["inputs"]["nodeCount"] = 8
    assert_violation(plan, "tpu-pool-node-count", "v6e-64-0", "nodeCount is 8", "must be 16")


def test_workload_policy_topology_sets_the_hosts():
    plan = plan_of("prod")
    state(plan, view.RESOURCE_POLICY, "ironwood-64-workload")["inputs"]["workloadPolicy"]["acceleratorTopology"] = \
        "4x4x8"
    assert_violation(plan, "tpu-pool-node-count", "ironwood-64-0", "workload policy ironwood-64-workload",
                     "must be 32")


def test_autoscaled_pool_bounds():
    plan = plan_of("staging")
    pool(plan, "v6e-16-0")["inputs"]["autoscaling"].update(maxNodeCount=8, minNodeCount=2)
    assert_violation(plan, "tpu-pool-node-count", "v6e-16-0", "up to 8", "maxNodeCount must be 4")
    assert_violation(plan, "tpu-pool-node-count", "v6e-16-0", "minimum is 2")


def test_regional_multihost_pool_in_several_zones():
    plan = plan_of("prod")
    pool(plan, "v6e-64-0")["inputs"]["nodeLocations"] = ["us-central1-b", "us-central1-c"]
    assert_violation(plan, "tpu-pool-node-count", "v6e-64-0", "exactly one zone")


def test_ray_object_not_after_cluster():
    plan = plan_of("staging")
    job = ray(plan, "ray-smoke", "RayJob")
    job["dependencies"].remove(urn_of(plan, view.CLUSTER, "ray-tpu-staging"))
    assert_violation(plan, "ray-after-cluster", "ray-smoke", "does not depend on the GKE cluster ray-tpu-staging")


def test_ray_object_not_after_its_pools():
    plan = plan_of("prod")
    service = ray(plan, "serving-llm", "RayService")
    service["dependencies"].remove(urn_of(plan, view.NODE_POOL, "v6e-8-serve-2"))
    assert_violation(plan, "ray-after-cluster", "serving-llm", "node pool v6e-8-serve-2")


def _add_step(plan: dict, type_: str, name: str, inputs: dict) -> None:
    plan["steps"].append({"op": "create", "urn": f"urn:pulumi:{plan['stack']}::ray-tpu-gke::{type_}::{name}",
                          "newState": {"type": type_, "name": name, "custom": True, "parent": None,
                                       "provider": None, "dependencies": [], "inputs": inputs,
                                       "options": {"protect": False, "ignoreChanges": [],
                                                   "deleteBeforeReplace": False}}})


@pytest.mark.parametrize("type_,inputs,what", [
    ("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
     {"metadata": {"name": "rayclusters.ray.io"}, "spec": {"group": "ray.io"}}, "rayclusters.ray.io"),
    ("kubernetes:helm.sh/v3:Release", {"chart": "kuberay-operator", "version": "1.3.2"}, "Helm chart"),
    ("kubernetes:helm.sh/v4:Chart", {"chart": "oci://example.com/charts/kuberay-operator"}, "Helm chart"),
    ("kubernetes:apps/v1:Deployment", {"metadata": {"name": "kuberay-operator"}}, "Deployment"),
])
def test_kuberay_installed_beside_addon(type_, inputs, what):
    plan = plan_of("dev")
    _add_step(plan, type_, "kuberay", inputs)
    assert_violation(plan, "no-kuberay-beside-addon", "kuberay", what, "Ray Operator add-on")


# --- security baseline ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path,value,rule_id,fragment", [
    ("privateClusterConfig.enablePrivateNodes", False, "gke-private-nodes", "enablePrivateNodes is False"),
    ("workloadIdentityConfig", None, "gke-workload-identity", "workloadPool is not set"),
    ("enableShieldedNodes", False, "gke-shielded-nodes", "enableShieldedNodes is False"),
    ("enableLegacyAbac", True, "gke-no-legacy-abac", "enableLegacyAbac is true"),
    ("masterAuth.clientCertificateConfig.issueClientCertificate", True, "gke-no-client-certificate",
     "issueClientCertificate is true"),
    ("releaseChannel.channel", "UNSPECIFIED", "gke-release-channel", "'UNSPECIFIED'"),
    ("releaseChannel", None, "gke-release-channel", "None"),
    ("nodeConfig.serviceAccount", "123456-compute@developer.gserviceaccount.com", "gke-node-service-account",
     "Compute Engine default service account"),
])
def test_cluster_baseline(path, value, rule_id, fragment):
    plan = plan_of("staging")
    target = cluster(plan)["inputs"]
    *parents, key = path.split(".")
    for p in parents:
        target = target[p]
    if value is None:
        del target[key]
    else:
        target[key] = value
    assert_violation(plan, rule_id, "ray-tpu-staging", fragment)


@pytest.mark.parametrize("pool_name", ["ray-tpu-dev-system", "v6e-4-0"])
@pytest.mark.parametrize("account", ["default", None, "42-compute@developer.gserviceaccount.com"])
def test_node_pool_default_service_account(pool_name, account):
    plan = plan_of("dev")
    config = pool(plan, pool_name)["inputs"]["nodeConfig"]
    if account is None:
        del config["serviceAccount"]
    else:
        config["serviceAccount"] = account
    assert_violation(plan, "gke-node-service-account", pool_name, "default service account")


def test_node_pool_metadata_server():
    plan = plan_of("dev")
    pool(plan, "v6e-4-0")["inputs"]["nodeConfig"]["workloadMetadataConfig"]["mode"] = "GCE_METADATA"
    assert_violation(plan, "gke-metadata-server", "v6e-4-0", "'GCE_METADATA'")


def test_secure_boot_off_is_advisory():
    plan = plan_of("dev")
    pool(plan, "v6e-4-0")["inputs"]["nodeConfig"]["shieldedInstanceConfig"]["enableSecureBoot"] = False
    assert_violation(plan, "gke-shielded-instance", "v6e-4-0", "enableSecureBoot", level=ADVISORY)
    assert engine.exit_code(found(plan)) == 0


# --- prod ----------------------------------------------------------------------------------------------------------


def test_prod_cluster_unprotected():
    plan = plan_of("prod")
    cluster(plan)["options"]["protect"] = False
    assert_violation(plan, "prod-protect", "ray-tpu-prod", "not protected in production (stack prod)")


def test_prod_tpu_pool_unprotected():
    plan = plan_of("prod")
    pool(plan, "ironwood-64-0")["options"]["protect"] = False
    assert_violation(plan, "prod-protect", "ironwood-64-0", "TPU node pool ironwood-64-0 is not protected")


def test_prod_without_deletion_protection():
    plan = plan_of("prod")
    cluster(plan)["inputs"]["deletionProtection"] = False
    assert_violation(plan, "prod-deletion-protection", "ray-tpu-prod", "deletionProtection is False")


@pytest.mark.parametrize("blocks,fragment", [([], "is empty"), ([{"cidrBlock": "0.0.0.0/0"}], "everyone")])
def test_prod_master_authorized_networks(blocks, fragment):
    plan = plan_of("prod")
    cluster(plan)["inputs"]["masterAuthorizedNetworksConfig"]["cidrBlocks"] = blocks
    assert_violation(plan, "prod-master-authorized-networks", "ray-tpu-prod", fragment)


def _relabel(value, environment: str):
    """Every `environment` label of a plan set to `environment`."""
    if isinstance(value, dict):
        return {k: environment if k == "environment" else _relabel(v, environment) for k, v in value.items()}
    if isinstance(value, list):
        return [_relabel(v, environment) for v in value]
    return value


def test_production_is_the_stack_name_or_the_environment_label():
    plan = plan_of("prod")
    cluster(plan)["options"]["protect"] = False
    cluster(plan)["inputs"]["deletionProtection"] = False
    expected = {"prod-protect", "prod-deletion-protection"}
    assert {v.rule.id for v in mandatory(plan, stack="staging")} == expected  # environment: prod
    relabelled = _relabel(plan, "staging")
    assert mandatory(relabelled, stack="staging") == []
    assert {v.rule.id for v in mandatory(relabelled, stack="production-eu")} == expected
    hit = assert_violation(_relabel(plan, "prod-eu"), "prod-protect", "ray-tpu-prod", stack="staging")
    assert "(environment prod-eu)" in hit.message


def test_spot_pool_under_rayservice_is_advised():
    plan = plan_of("prod")
    for name in ("v6e-8-serve-0", "v6e-8-serve-1", "v6e-8-serve-2"):
        pool(plan, name)["inputs"]["nodeConfig"]["spot"] = True
    hit = assert_violation(plan, "prod-serving-capacity", "serving-llm", "node pool v6e-8-serve-0", "Spot",
                           level=ADVISORY)
    assert engine.exit_code(found(plan)) == 0, hit


def test_spot_selector_under_rayservice_is_advised():
    plan = plan_of("prod")
    groups(ray(plan, "serving-llm", "RayService"))[0]["template"]["spec"]["nodeSelector"][
        slices.SPOT_LABEL] = "true"
    assert_violation(plan, "prod-serving-capacity", "serving-llm", "selects Spot VMs", level=ADVISORY)


# --- cost ----------------------------------------------------------------------------------------------------------


def test_unused_slice_is_advised():
    plan = plan_of("dev")
    pool(plan, "v6e-4-0")["inputs"]["nodeConfig"]["labels"]["ray-tpu-gke/slice"] = "orphan"
    hit = assert_violation(plan, "cost-unused-slice", "v6e-4-0", "slice orphan", "no Ray worker group selects it",
                           level=ADVISORY)
    assert engine.exit_code(found(plan)) == 0, hit


def test_fixed_size_tpu_pool_outside_prod_is_advised():
    plan = plan_of("staging")
    inputs = pool(plan, "v6e-16-0")["inputs"]
    del inputs["autoscaling"]
    inputs["nodeCount"] = 4
    assert_violation(plan, "cost-tpu-autoscaling", "v6e-16-0", "fixed size", level=ADVISORY)
    assert mandatory(plan) == []


# --- report and command lines --------------------------------------------------------------------------------------


def test_report_format_and_exit_code():
    plan = plan_of("staging")
    groups(ray(plan, "ray-train"))[0]["numOfHosts"] = 3
    out = __import__("io").StringIO()
    assert engine.report(plan, "staging", out) == 1
    text = out.getvalue()
    assert text.startswith("Policy Violations:\n    [mandatory]  ray-tpu-gke-policies v0.1.0  "
                           "tpu-webhook-num-of-hosts  (kubernetes:ray.io/v1:RayCluster: ray-train)\n")
    assert "1 mandatory, 0 advisory" in text
    clean = __import__("io").StringIO()
    assert engine.report(plan_of("staging"), "staging", clean) == 0
    assert clean.getvalue() == "No policy violations.\n"


def _cli(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, input=stdin,
                          timeout=120)


def test_cli_over_saved_plans(tmp_path):
    good = tmp_path / "prod.json"
    good.write_text(json.dumps(plan_of("prod")))
    bad_plan = plan_of("prod")
    cluster(bad_plan)["inputs"]["enableLegacyAbac"] = True
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_plan))
    result = _cli("-m", "policy", str(good))
    assert (result.returncode, result.stdout) == (0, "No policy violations.\n"), result.stderr
    result = _cli("-m", "policy", str(bad))
    assert result.returncode == 1
    assert "gke-no-legacy-abac  (gcp:container/cluster:Cluster: ray-tpu-prod)" in result.stdout
    result = _cli("-m", "policy", "-", stdin=bad.read_text())
    assert result.returncode == 1 and "gke-no-legacy-abac" in result.stdout
    result = _cli("-m", "policy", str(tmp_path / "missing.json"))
    assert result.returncode == 2 and "cannot read plan" in result.stderr and not result.stdout


def test_plan_cli_with_policy_pack(plan_output):
    result = plan_output("prod", "--policy-pack", "policy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("No policy violations.")


def test_plan_cli_fails_on_a_mandatory_violation(tmp_path, capsys):
    """A prod config without deletion protection plans fine, and the pack stops it (in-process: fast)."""
    from plan.__main__ import main

    values = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    values["config"]["ray-tpu-gke:cluster"]["deletionProtection"] = False
    config_file = tmp_path / "Pulumi.prod.yaml"
    config_file.write_text(yaml.safe_dump(values))
    assert main(["prod", "--config-file", str(config_file), "--json", "--policy-pack", "policy"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["stack"] == "prod"  # --json: the plan alone on stdout, the report on stderr
    assert "prod-deletion-protection  (gcp:container/cluster:Cluster: ray-tpu-prod)" in err
    assert "prod-protect  (gcp:container/nodePool:NodePool: v6e-64-0)" in err


# --- the PolicyPack the Pulumi CLI runs ----------------------------------------------------------------------------


def test_policies_mirror_the_rules():
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

    policies = pack.policies()
    assert [p.name for p in policies] == [r.id for r in rules.RULES]
    for policy, rule in zip(policies, rules.RULES):
        kind = ResourceValidationPolicy if rule.scope == "resource" else StackValidationPolicy
        assert isinstance(policy, kind)
        assert policy.enforcement_level == (EnforcementLevel.MANDATORY if rule.level == MANDATORY
                                            else EnforcementLevel.ADVISORY)
        assert policy.description == rule.description
    # No count limit: the early "up to 25 policies" per pack was dropped from Pulumi's docs in 2019
    # (pulumi/docs#1966: "A Policy Pack can contain up to 25 Policies. We can remove this now!").


def _policy_options(options: dict, parent):
    from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions

    return PolicyResourceOptions(options["protect"], options["ignoreChanges"], options["deleteBeforeReplace"], [],
                                 PolicyCustomTimeouts(0, 0, 0), [], parent)


def _resource_args(step: dict):
    """What pulumi_policy hands a resource policy: props behind its unknown-checking proxy."""
    from pulumi_policy import ResourceValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    s = step["newState"]
    return ResourceValidationArgs(s["type"], unknown_checking_proxy(json.loads(json.dumps(s["inputs"]))),
                                  step["urn"], s["name"], _policy_options(s["options"], s["parent"]), None)


def _stack_args(plan: dict):
    from pulumi_policy import PolicyResource, StackValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    resources = {}
    for step in plan["steps"]:
        s = step["newState"]
        resources[step["urn"]] = PolicyResource(s["type"], unknown_checking_proxy(json.loads(json.dumps(s["inputs"]))),
                                                step["urn"], s["name"], _policy_options(s["options"], s["parent"]),
                                                None, None, [], {})
    for step in plan["steps"]:
        r = resources[step["urn"]]
        r.parent = resources.get(step["newState"]["parent"])
        r.dependencies = [resources[d] for d in step["newState"]["dependencies"] if d in resources]
    return StackValidationArgs(list(resources.values()))


def _run_pack(plan: dict) -> list[tuple[str, str, str | None]]:
    """(policy, message, urn) of every violation the pack's policies report, as the Pulumi CLI would run them."""
    from pulumi_policy import ResourceValidationPolicy

    reported = []
    stack_args = _stack_args(plan)
    for policy in pack.policies():
        if isinstance(policy, ResourceValidationPolicy):
            for step in plan["steps"]:
                def report(message, urn=None, p=policy.name, u=step["urn"]):
                    reported.append((p, message, u))  # a resource policy's violation is about its resource

                policy.validate(_resource_args(step), report)
        else:
            policy.validate(stack_args, lambda message, urn=None, p=policy.name: reported.append((p, message, urn)))
    return reported


@pytest.mark.parametrize("stack", STACKS)
def test_pack_passes_every_stack(stack):
    """As `pulumi preview --policy-pack policy` would: no mandatory policy reports anything; the advisory ones are
    the offline engine's advisory findings."""
    plan = plan_of(stack)
    reported = _run_pack(plan)
    assert [r for r in reported if rules.by_id(r[0]).level == MANDATORY] == []
    advisory = {(v.rule.id, v.message, v.resource.urn if v.resource else None) for v in found(plan)
                if v.level == ADVISORY}
    assert {r for r in reported if rules.by_id(r[0]).level == ADVISORY} == advisory


def test_pack_reports_what_the_offline_engine_reports():
    plan = plan_of("prod")
    cluster(plan)["options"]["protect"] = False
    pool(plan, "v6e-64-0")["inputs"]["nodeCount"] = 4
    ray(plan, "training-train")["dependencies"].remove(urn_of(plan, view.CLUSTER, "ray-tpu-prod"))
    offline = {(v.rule.id, v.message, v.resource.urn) for v in found(plan)}
    assert len(offline) == 3
    assert set(_run_pack(plan)) == offline


def test_pack_skips_values_unknown_during_preview():
    from pulumi_policy.proxy import UNKNOWN_BOOLEAN_VALUE, UNKNOWN_STRING_VALUE

    plan = plan_of("dev")
    pool(plan, "v6e-4-0")["inputs"]["nodeConfig"]["serviceAccount"] = UNKNOWN_STRING_VALUE
    cluster(plan)["inputs"]["privateClusterConfig"]["enablePrivateNodes"] = UNKNOWN_BOOLEAN_VALUE
    groups(ray(plan, "ray-dev"))[0]["template"]["spec"]["nodeSelector"][catalog.TOPOLOGY_LABEL] = UNKNOWN_STRING_VALUE
    assert _run_pack(plan) == []
    ray(plan, "ray-dev")["inputs"]["spec"] = UNKNOWN_STRING_VALUE
    assert _run_pack(plan) == []


def test_pack_main_builds_the_policy_pack(monkeypatch):
    """Run by path as the Pulumi CLI runs it, `__main__.py` constructs the PolicyPack (here a stand-in)."""
    built = {}

    def fake_pack(**kwargs):
        built.update(kwargs)

    monkeypatch.setattr(pack, "PolicyPack", fake_pack)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", ["pulumi/policy/__main__.py", "127.0.0.1:12345", str(ROOT / "policy")])
    runpy.run_path(str(ROOT / "policy"), run_name="__main__")
    assert built["name"] == "ray-tpu-gke-policies"
    assert [p.name for p in built["policies"]] == [r.id for r in rules.RULES]
    assert str(ROOT / "policy") not in sys.path  # the pack's modules are never top-level imports


# --- the pack's own files ------------------------------------------------------------------------------------------


def test_rules_repeat_no_tpu_number():
    """Machine types, accelerators and generations come from the catalogue, never from a literal in policy/."""
    names = {m.name for g in catalog.GENERATIONS.values() for m in g.machine_types}
    names |= {g.accelerator for g in catalog.GENERATIONS.values()} | set(catalog.GENERATIONS)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w])")
    sources = sorted((ROOT / "policy").rglob("*.py"))
    assert len(sources) >= 8
    for source in sources:
        hits = pattern.findall(source.read_text())
        assert not hits, f"{source.relative_to(ROOT)} names {sorted(set(hits))}: ask components.catalog instead"
        assert not re.search(r"\b\d+x\d+\b", source.read_text()), f"{source} spells a topology"


def test_pack_project_file_and_requirements():
    project = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    assert (ROOT / "policy" / project["runtime"]["options"]["virtualenv"]).resolve() == ROOT / ".venv"
    assert project["version"] == engine.pack_version()

    def pins(path):
        lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
        return dict(line.split("==") for line in lines if line and not line.startswith("-"))

    ours, project_pins = pins(ROOT / "policy" / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert "pulumi-policy" in ours
    assert {k: project_pins.get(k) for k in ours} == ours


def test_docs_list_every_rule():
    text = (ROOT / "docs" / "policy.md").read_text()
    for rule in rules.RULES:
        assert f"`{rule.id}`" in text, f"docs/policy.md does not document {rule.id}"
    assert "pulumi preview --policy-pack policy" in text and "python -m policy" in text
