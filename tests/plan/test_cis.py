"""CIS GKE benchmark checks as Checkov implements them, run for real on the committed stacks' plans.

Each stack's plan is converted to a Terraform plan (tests/plan/tfplan.py) and scanned by Checkov's `terraform_plan`
framework with every GCP check (CKV_GCP_*, CKV2_GCP_*: the CIS mapping itself is only served by Checkov's
platform, so the offline run takes the superset). The findings must be exactly the expected ones, each with its
reason: a waiver by design, a control the stack's own configuration leaves off (`by_config`: no per-stack table, so a
new stack file needs no entry), or a gap awaiting a fix. An expected finding that stops failing fails the test too,
so the expectations stay true. One Checkov run scans the plans of every stack this session tests.

Checkov runs as a program, from its own virtualenv: it pins `packaging<24`, which pulumi (`packaging>=26`) and
pytest (`packaging>=24`) exclude, so it cannot share the project's. The test looks for it in $CHECKOV (a path;
set but missing is an error), then .venv-checkov/bin/checkov, then PATH, and is skipped if there is none, naming
`make test-tools` (which builds .venv-checkov from requirements-checkov.txt).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

import tfplan
from helpers import STACKS, checkov_path, config_of, plan_of

CHECKOV_VERSION = "3.3.30"  # the findings below are this version's
CHECKS = "CKV_GCP_*,CKV2_GCP_*"

# README.md, "Security defaults": CMEK for Kubernetes secrets and boot disks, and a private endpoint in prod, are
# not met by design. Checkov 3.3.30 implements none of them for GKE (no check reads `database_encryption` or a
# node pool's `boot_disk_kms_key`, and CKV_GCP_18 only rejects 0.0.0.0/0 among master authorized networks), so
# there is nothing to waive; a later Checkov that adds such a check fails here until it is listed.
WAIVED: dict[str, str] = {}

# Optional controls a stack's configuration leaves off (README: "where configured"), and Autopilot-managed settings
# the program rightly does not set: derived from each stack's own config, so a new stack file needs no entry here.
AUTOPILOT_MANAGED = {
    # Autopilot: Google manages these, and the provider rejects them beside enable_autopilot.
    "CKV_GCP_12": "Autopilot always runs Dataplane V2; network_policy conflicts with enable_autopilot",
    "CKV_GCP_61": "Autopilot: enable_intranode_visibility conflicts with enable_autopilot",
    "CKV_GCP_69": "Autopilot: no node_config; Autopilot always runs the GKE metadata server",
}


def by_config(config) -> dict[str, str]:
    """The findings a stack's config chooses, each with the key that chooses it."""
    found: dict[str, str] = {}
    if config.storage.enabled:
        if config.storage.access_log_bucket is None:
            found["CKV_GCP_62"] = "storage.accessLogBucket is not set"
        if not config.storage.versioning:
            found["CKV_GCP_78"] = "storage.versioning is false"
    if config.cluster.rbac_security_group is None:
        found["CKV_GCP_65"] = "cluster.rbacSecurityGroup is not set"
    if not config.cluster.binary_authorization:
        found["CKV_GCP_66"] = "cluster.binaryAuthorization is false"
    if not config.standard:
        found |= AUTOPILOT_MANAGED
    return found


# Fixable findings, in every stack that creates the resource, awaiting a change to components/ (then delete the
# entry: the test says when).
PENDING: dict[str, str] = {}

# CIS controls the prod plan must be seen to pass: proof that Checkov read the converted fields, not absent ones.
PROVEN_IN_PROD = {
    "CKV_GCP_7",    # legacy ABAC disabled
    "CKV_GCP_9",    # node auto-repair
    "CKV_GCP_10",   # node auto-upgrade
    "CKV_GCP_13",   # no client certificate
    "CKV_GCP_18",   # control plane not open to 0.0.0.0/0
    "CKV_GCP_20",   # master authorized networks
    "CKV_GCP_21",   # cluster labels
    "CKV_GCP_23",   # alias IP ranges (VPC-native)
    "CKV_GCP_25",   # private cluster
    "CKV_GCP_26",   # subnet flow logs
    "CKV_GCP_29",   # uniform bucket-level access
    "CKV_GCP_61",   # intranode visibility
    "CKV_GCP_62",   # bucket access logs
    "CKV_GCP_63",   # bucket does not log to itself
    "CKV_GCP_64",   # private nodes
    "CKV_GCP_65",   # Google Groups for RBAC
    "CKV_GCP_66",   # Binary Authorization
    "CKV_GCP_68",   # secure boot
    "CKV_GCP_69",   # GKE metadata server
    "CKV_GCP_70",   # release channel
    "CKV_GCP_71",   # shielded nodes
    "CKV_GCP_72",   # integrity monitoring
    "CKV_GCP_74",   # private Google access
    "CKV_GCP_78",   # bucket versioning
    "CKV_GCP_114",  # public access prevention
}

# A weakened prod plan: each change must turn up as its check's failure (the converter cannot hide a finding).
WEAKENED = "prod-weakened"
WEAKENINGS = {
    "CKV_GCP_7": ("gcp:container/cluster:Cluster", ["enableLegacyAbac"], True),
    "CKV_GCP_13": ("gcp:container/cluster:Cluster",
                   ["masterAuth", "clientCertificateConfig", "issueClientCertificate"], True),
    "CKV_GCP_18": ("gcp:container/cluster:Cluster", ["masterAuthorizedNetworksConfig", "cidrBlocks"],
                   [{"cidrBlock": "0.0.0.0/0", "displayName": "anywhere"}]),
    "CKV_GCP_25": ("gcp:container/cluster:Cluster", ["privateClusterConfig"], None),
    "CKV_GCP_68": ("gcp:container/nodePool:NodePool", ["nodeConfig", "shieldedInstanceConfig", "enableSecureBoot"],
                   False),
    "CKV_GCP_69": ("gcp:container/nodePool:NodePool", ["nodeConfig", "workloadMetadataConfig", "mode"],
                   "GCE_METADATA"),
    "CKV_GCP_26": ("gcp:compute/subnetwork:Subnetwork", ["logConfig"], None),
    "CKV_GCP_29": ("gcp:storage/bucket:Bucket", ["uniformBucketLevelAccess"], False),
    "CKV_GCP_114": ("gcp:storage/bucket:Bucket", ["publicAccessPrevention"], "inherited"),
}


def _set(inputs: dict, path: list[str], value) -> None:
    for key in path[:-1]:
        inputs = inputs[key]
    if value is None:
        inputs.pop(path[-1], None)
    else:
        inputs[path[-1]] = value


def weakened(plan: dict) -> dict:
    plan = copy.deepcopy(plan)
    for type_, path, value in WEAKENINGS.values():
        step = next(s for s in plan["steps"] if s["newState"]["type"] == type_)
        _set(step["newState"]["inputs"], path, value)
    return plan


def scanned_stacks(items) -> list[str]:
    """The stacks the session's tests of the scan look at (every stack in `make test`; one under `-k STACK`); the
    tests that take no stack read prod and the weakened prod."""
    wanted: set[str] = set()
    for item in items:
        if "scan" in getattr(item, "fixturenames", ()):
            callspec = getattr(item, "callspec", None)
            wanted |= {callspec.params["stack"]} if callspec and "stack" in callspec.params else {"prod", WEAKENED}
    return [stack for stack in [*STACKS, WEAKENED] if stack in wanted]


@pytest.fixture(scope="module")
def scan(request, tmp_path_factory) -> dict:
    """One Checkov run over the plans of the stacks tested: {stack: {"failed"|"passed": [...], "resources": ...}}."""
    checkov = checkov_path()
    if checkov is None:
        pytest.skip("checkov not found ($CHECKOV, .venv-checkov/bin/checkov, PATH): `make test-tools` builds "
                    f".venv-checkov (checkov=={CHECKOV_VERSION}), or set CHECKOV to its path")
    folder = tmp_path_factory.mktemp("cis")
    stacks = scanned_stacks(request.session.items)
    plans = {stack: plan_of(stack) for stack in stacks if stack != WEAKENED}
    if WEAKENED in stacks:
        plans[WEAKENED] = weakened(plan_of("prod"))
    files, resources = [], {}
    for stack, plan in plans.items():
        converted = tfplan.convert(plan)
        resources[stack] = {r["address"] for r in converted["planned_values"]["root_module"]["resources"]}
        path = folder / f"{stack}.json"
        path.write_text(json.dumps(converted, indent=1))
        files += ["-f", str(path)]
    env = dict(os.environ, CKV_SKIP_PACKAGE_UPDATE_CHECK="true", LOG_LEVEL="WARNING")
    run = subprocess.run(
        [checkov, *files, "--framework", "terraform_plan", "--check", CHECKS, "--compact", "--skip-download",
         "-o", "json"],
        capture_output=True, text=True, env=env, cwd=folder, timeout=600)
    assert run.returncode in (0, 1), f"checkov exited {run.returncode}:\n{run.stderr[-4000:]}"
    reports = json.loads(run.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    assert [r["check_type"] for r in reports] == ["terraform_plan"], run.stdout[:2000]
    report = reports[0]
    summary = report["summary"]
    if summary["checkov_version"] != CHECKOV_VERSION:
        pytest.skip(f"checkov {summary['checkov_version']} found; the expected findings are {CHECKOV_VERSION}'s")
    assert summary["parsing_errors"] == 0, report.get("results", {}).get("parsing_errors")
    assert summary["resource_count"] == sum(len(r) for r in resources.values())
    by_stack: dict[str, dict[str, list[dict]]] = {s: {"failed": [], "passed": []} for s in plans}
    for outcome in ("failed", "passed"):
        for result in report["results"][f"{outcome}_checks"]:
            by_stack[Path(result["file_path"]).stem][outcome].append(result)
    for stack, outcomes in by_stack.items():
        outcomes["resources"] = resources[stack]  # type: ignore[assignment]
    return by_stack


def failures(results: list[dict]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in results:
        found.setdefault(r["check_id"], []).append(f"{r['resource']} ({r['check_name']})")
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_findings_are_exactly_the_listed_ones(scan, stack):
    expected = WAIVED | by_config(config_of(stack)) | PENDING
    found = failures(scan[stack]["failed"])
    unexpected = {k: v for k, v in found.items() if k not in expected}
    fixed = {k: v for k, v in expected.items() if k not in found}
    assert not unexpected, f"{stack}: new Checkov findings (fix the component, or list them with a reason): " \
                           f"{json.dumps(unexpected, indent=1)}"
    assert not fixed, f"{stack}: listed findings no longer fail (delete them from the lists): {sorted(fixed)}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_scanned_resource_is_checked(scan, stack):
    """Checkov recognised the converted resources: each cluster, pool, bucket and subnetwork got its checks."""
    checked = {r["resource"] for r in scan[stack]["failed"] + scan[stack]["passed"]}
    kinds = ("google_container_cluster.", "google_container_node_pool.", "google_storage_bucket.",
             "google_compute_subnetwork.", "google_compute_network.")
    expected = {a for a in scan[stack]["resources"] if a.startswith(kinds)}
    assert expected and expected <= checked, sorted(expected - checked)


def test_prod_passes_the_core_controls(scan):
    passed = {r["check_id"] for r in scan["prod"]["passed"]}
    assert PROVEN_IN_PROD <= passed, sorted(PROVEN_IN_PROD - passed)
    pools = {a for a in scan["prod"]["resources"] if a.startswith("google_container_node_pool.")}
    for check in ("CKV_GCP_68", "CKV_GCP_69", "CKV_GCP_72", "CKV_GCP_9", "CKV_GCP_10"):
        seen = {r["resource"] for r in scan["prod"]["passed"] if r["check_id"] == check}
        assert pools <= seen, (check, sorted(pools - seen))


def test_a_weakened_prod_fails_each_weakened_check(scan):
    found = failures(scan[WEAKENED]["failed"])
    missing = sorted(set(WEAKENINGS) - set(found))
    assert not missing, f"weakenings Checkov did not report: {missing}"


# The expectations derived from a config, and the converter alone (no Checkov needed).

def test_expected_findings_follow_the_config():
    from helpers import minimal_values
    from ray_tpu_gke.spec.config import parse_stack_config

    def expected(**overrides):
        return set(by_config(parse_stack_config(minimal_values(**overrides), "test")))

    assert expected() == {"CKV_GCP_62", "CKV_GCP_65", "CKV_GCP_66"}  # versioning is on by default
    assert expected(storage={"enabled": False}) == {"CKV_GCP_65", "CKV_GCP_66"}  # no bucket, no bucket checks
    assert expected(storage={"versioning": False, "accessLogBucket": "acme-logs"}) == {
        "CKV_GCP_78", "CKV_GCP_65", "CKV_GCP_66"}
    hardened = {"name": "ray-tpu", "location": "us-east5-b", "binaryAuthorization": True,
                "rbacSecurityGroup": "gke-security-groups@example.com"}
    assert expected(cluster=hardened, storage={"accessLogBucket": "acme-logs"}) == set()
    autopilot = dict(hardened, location="us-east5", mode="autopilot")
    assert expected(cluster=autopilot, storage={"accessLogBucket": "acme-logs"},
                    tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "zone": "us-east5-b"}]) \
        == set(AUTOPILOT_MANAGED)



def _state(type_: str, name: str, inputs: dict, deps: list[str] | None = None, urn: str | None = None) -> dict:
    return {"urn": urn or f"urn:{name}", "newState": {"type": type_, "name": name, "custom": True,
                                                      "inputs": inputs, "dependencies": deps or []}}


def test_converter_shapes_blocks_maps_and_renames():
    plan = {"steps": [_state("gcp:container/nodePool:NodePool", "v6e-8-0", {
        "nodeConfig": {"labels": {"ray-tpu-gke/pool": "x"}, "metadata": {"disable-legacy-endpoints": "true"},
                       "taints": [{"key": "google.com/tpu", "effect": "NO_SCHEDULE"}],
                       "shieldedInstanceConfig": {"enableSecureBoot": True},
                       "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]},
        "maxPodsPerNode": 16,
    }), _state("kubernetes:core/v1:Namespace", "ns", {"metadata": {"name": "ns"}})]}
    out = tfplan.convert(plan)
    [resource] = out["planned_values"]["root_module"]["resources"]
    assert resource["address"] == "google_container_node_pool.v6e_8_0"
    assert resource["values"] == {
        "node_config": [{
            "labels": {"ray-tpu-gke/pool": "x"},
            "metadata": {"disable-legacy-endpoints": "true"},
            "taint": [{"key": "google.com/tpu", "effect": "NO_SCHEDULE"}],
            "shielded_instance_config": [{"enable_secure_boot": True}],
            "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        }],
        "max_pods_per_node": 16,
    }
    assert out["resource_changes"][0]["change"]["actions"] == ["create"]
    assert {"format_version", "terraform_version", "planned_values", "resource_changes"} <= set(out)


def test_converter_turns_ids_of_planned_resources_into_references():
    network = _state("gcp:compute/network:Network", "vpc", {"name": "vpc"}, urn="urn:net")
    subnet = _state("gcp:compute/subnetwork:Subnetwork", "vpc", {
        "name": "vpc", "network": "projects/p/global/networks/vpc",
        "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.0.0.0/14"}],
        "region": "[unknown]",
    }, deps=["urn:net"], urn="urn:subnet")
    out = tfplan.convert({"steps": [network, subnet]})
    change = out["resource_changes"][1]
    assert change["address"] == "google_compute_subnetwork.vpc"
    assert change["change"]["after"] == {"name": "vpc", "secondary_ip_range": [
        {"range_name": "pods", "ip_cidr_range": "10.0.0.0/14"}]}
    assert change["change"]["after_unknown"] == {"network": True, "region": True}
    config = out["configuration"]["root_module"]["resources"][1]
    assert config["expressions"] == {"network": {"references": [
        "google_compute_network.vpc.id", "google_compute_network.vpc"]}}
