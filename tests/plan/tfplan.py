"""Our plan JSON as a Terraform plan (`terraform show -json`), so Terraform scanners such as Checkov can read it.

Each Google resource of the plan becomes a managed resource of the root module, addressed
`<terraform type>.<pulumi name with _ for ->`, with its Pulumi inputs as its planned values in Terraform's shape:

* keys are snake_case, and the names pulumi-gcp pluralised (Terraform blocks that may repeat: `taint` is
  `taints` in Pulumi) get their Terraform names back;
* a nested object becomes a list of one block, as Terraform writes every nested block, except the attributes that
  are maps (labels, metadata, ...), whose keys are kept as they are;
* values unknown before apply (`[unknown]` in a preview) are left out of an object's values and marked in
  `after_unknown`, as Terraform does (an unknown list element stays as null);
* an input that is the id of another resource of the plan is unknown too, as it is in Terraform's plan of a first
  apply, and `configuration` holds the reference (see `convert`).

Only the inputs the program sets are known here: attributes left to the provider's defaults are absent, where
Terraform would write them out (as null or the default). Resources of other providers (Kubernetes objects,
component resources) have no Terraform counterpart here and are left out.

The renames and map attributes below come from pulumi-gcp's bridge metadata (the Terraform schema of each
resource) for the resource types listed; add a type's entries when you map a new one.
"""

from __future__ import annotations

import re
from typing import Any

FORMAT_VERSION = "1.2"
TERRAFORM_VERSION = "1.9.0"
PROVIDER = "registry.terraform.io/hashicorp/google"
UNKNOWN = "[unknown]"

# Pulumi type token -> Terraform resource type.
TF_TYPES = {
    "gcp:container/cluster:Cluster": "google_container_cluster",
    "gcp:container/nodePool:NodePool": "google_container_node_pool",
    "gcp:storage/bucket:Bucket": "google_storage_bucket",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "google_storage_bucket_iam_member",
    "gcp:compute/network:Network": "google_compute_network",
    "gcp:compute/subnetwork:Subnetwork": "google_compute_subnetwork",
    "gcp:compute/router:Router": "google_compute_router",
    "gcp:compute/routerNat:RouterNat": "google_compute_router_nat",
    "gcp:compute/firewall:Firewall": "google_compute_firewall",
    "gcp:compute/resourcePolicy:ResourcePolicy": "google_compute_resource_policy",
    "gcp:projects/iAMMember:IAMMember": "google_project_iam_member",
    "gcp:serviceaccount/account:Account": "google_service_account",
    "gcp:serviceaccount/iAMMember:IAMMember": "google_service_account_iam_member",
}

# Repeatable blocks whose Terraform name pulumi-gcp pluralised: snake_case Pulumi name -> Terraform name.
_NODE_CONFIG_RENAMES = {
    "taints": "taint",
    "guest_accelerators": "guest_accelerator",
    "node_image_configs": "node_image_config",
    "node_affinities": "node_affinity",
    "certificate_authority_domain_configs": "certificate_authority_domain_config",
    "headers": "header",
    "cas": "ca",
}
RENAMES: dict[str, dict[str, str]] = {
    "google_container_cluster": {
        **_NODE_CONFIG_RENAMES,
        "ray_operator_configs": "ray_operator_config",
        "node_pools": "node_pool",
        "maintenance_exclusions": "maintenance_exclusion",
        "autopilot_privileged_admissions": "autopilot_privileged_admission",
        "additional_ip_ranges_configs": "additional_ip_ranges_config",
        "exclusion_until_end_of_supports": "exclusion_until_end_of_support",
        "node_drain_configs": "node_drain_config",
    },
    "google_container_node_pool": {
        **_NODE_CONFIG_RENAMES,
        "exclusion_until_end_of_supports": "exclusion_until_end_of_support",
        "node_drain_configs": "node_drain_config",
    },
    "google_storage_bucket": {
        "lifecycle_rules": "lifecycle_rule",
        "methods": "method",
        "origins": "origin",
        "response_headers": "response_header",
        "matches_prefixes": "matches_prefix",
        "matches_storage_classes": "matches_storage_class",
        "matches_suffixes": "matches_suffix",
    },
    "google_compute_subnetwork": {"secondary_ip_ranges": "secondary_ip_range"},
    "google_compute_firewall": {"allows": "allow", "denies": "deny"},
    "google_compute_router_nat": {
        "subnetworks": "subnetwork",
        "nat64_subnetworks": "nat64_subnetwork",
        "source_ip_ranges_to_nats": "source_ip_ranges_to_nat",
    },
}

# Attributes that are maps in Terraform (string keys kept verbatim), not blocks: any other object is a block.
MAP_ATTRIBUTES = frozenset({
    "labels",
    "resource_labels",
    "effective_labels",
    "terraform_labels",
    "metadata",
    "resource_manager_tags",
    "sysctls",
})

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """`masterIpv4CidrBlock` -> `master_ipv4_cidr_block`, `enableK8sBetaApis` -> `enable_k8s_beta_apis`."""
    return _CAMEL.sub(r"_\1", name).lower()


def _convert(value: Any, renames: dict[str, str]) -> tuple[Any, Any]:
    """One Pulumi input value in Terraform's JSON shape, and its `after_unknown` mirror (None: all known)."""
    if isinstance(value, dict):
        block: dict[str, Any] = {}
        marks: dict[str, Any] = {}
        for key, item in value.items():
            tf_key = snake(key)
            tf_key = renames.get(tf_key, tf_key)
            if item == UNKNOWN:
                marks[tf_key] = True
            elif isinstance(item, dict) and tf_key in MAP_ATTRIBUTES:
                block[tf_key] = dict(item)
            elif isinstance(item, dict):
                converted, mark = _convert(item, renames)
                block[tf_key] = [converted]
                if mark is not None:
                    marks[tf_key] = [mark]
            else:
                block[tf_key], mark = _convert(item, renames)
                if mark is not None:
                    marks[tf_key] = mark
        return block, marks or None
    if isinstance(value, list):
        items = [_convert(item, renames) for item in value]
        if all(mark is None for _, mark in items):
            return [converted for converted, _ in items], None
        return [converted for converted, _ in items], [mark if mark is not None else {} for _, mark in items]
    if value == UNKNOWN:
        return None, True
    return value, None


def resource_name(name: str) -> str:
    """A Pulumi resource name as a Terraform resource name Checkov can follow in references (no dashes)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if re.match(r"^[A-Za-z_]", cleaned) else f"r_{cleaned}"


def _reference(key: str, value: Any, tf_type: str, dependency: dict) -> str | None:
    """Which output of `dependency` (of Terraform type `tf_type`) the top-level input `key: value` is, if any.

    Our plans hold values where Terraform's configuration holds expressions. The resource-level dependencies say
    which resources an input may come from; the value says which output: an id whose collection is the
    dependency's type (`projects/p/global/networks/<name>` of a network, `.../serviceAccounts/<account id>@...` of
    a service account), or the dependency's name under a key naming its type (`cluster`, `router`, `bucket`).
    """
    if not isinstance(value, str) or key in ("name", "project"):
        return None
    inputs = dependency.get("inputs") or {}
    name = inputs.get("name")
    account = inputs.get("accountId")
    if isinstance(account, str) and account and f"/serviceAccounts/{account}@" in value:
        return "id"
    if not isinstance(name, str) or not name:
        return None
    parts = value.split("/")
    if len(parts) >= 2 and parts[-1] == name:
        collection = snake(parts[-2])
        if collection.endswith("s") and tf_type.endswith(f"_{collection[:-1]}"):
            return "id"
    if value == name and tf_type.endswith(f"_{snake(key)}"):
        return "name"
    return None


def convert(plan: dict) -> dict:
    """The Terraform plan JSON of one of our plans, as `terraform show -json` writes it for a first apply.

    An input that is another resource's id becomes what Terraform plans for a resource created in the same run:
    an unknown value (left out, marked in `after_unknown`) with a reference in `configuration`, from which Checkov
    draws the edges its connection checks follow. A reference to a name (known at plan time) keeps its value.
    """
    steps = [s["newState"] | {"urn": s["urn"]} for s in plan["steps"]]
    addresses: dict[str, str] = {}
    for state in steps:
        tf_type = TF_TYPES.get(state["type"])
        if tf_type is None or not state.get("custom", True):
            continue
        base = f"{tf_type}.{resource_name(state['name'])}"
        address, suffix = base, 1
        while address in addresses.values():
            suffix += 1
            address = f"{base}_{suffix}"
        addresses[state["urn"]] = address
    by_urn = {state["urn"]: state for state in steps}

    resources: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    configuration: list[dict[str, Any]] = []
    for state in steps:
        address = addresses.get(state["urn"])
        if address is None:
            continue
        tf_type, name = address.split(".", 1)
        renames = RENAMES.get(tf_type, {})
        inputs = dict(state.get("inputs") or {})
        expressions: dict[str, Any] = {}
        for dependency in state.get("dependencies") or []:
            if dependency not in addresses:
                continue
            for key, value in list(inputs.items()):
                target = addresses[dependency]
                attribute = _reference(key, value, target.split(".", 1)[0], by_urn[dependency])
                if attribute is None:
                    continue
                tf_key = renames.get(snake(key), snake(key))
                expressions[tf_key] = {"references": [f"{target}.{attribute}", target]}
                if attribute == "id":
                    inputs[key] = UNKNOWN
        values, after_unknown = _convert(inputs, renames)
        common = {"address": address, "mode": "managed", "type": tf_type, "name": name}
        resources.append(common | {
            "provider_name": PROVIDER,
            "schema_version": 0,
            "values": values,
            "sensitive_values": {},
        })
        changes.append(common | {
            "provider_name": PROVIDER,
            "change": {
                "actions": ["create"],
                "before": None,
                "after": values,
                "after_unknown": after_unknown or {},
                "before_sensitive": False,
                "after_sensitive": {},
            },
        })
        configuration.append(common | {
            "provider_config_key": "google",
            "expressions": expressions,
            "schema_version": 0,
        })
    return {
        "format_version": FORMAT_VERSION,
        "terraform_version": TERRAFORM_VERSION,
        "planned_values": {"root_module": {"resources": resources}},
        "resource_changes": changes,
        "configuration": {
            "provider_config": {"google": {"name": "google", "full_name": PROVIDER}},
            "root_module": {"resources": configuration},
        },
    }
