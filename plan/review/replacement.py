"""Which input changes the Google provider can only apply by replacing the resource.

Paths are Pulumi's camelCase input paths; a change at or below a listed path replaces the resource. Derived from the
`ForceNew` fields (and `ForceNewIfChange` rules) of the Terraform Google provider that pulumi-gcp bridges:
resource_container_node_pool.go, node_config.go, resource_container_cluster.go and the compute, storage and IAM
resources. "*" means every input change replaces (the resource has no update). tests/plan/test_diff.py checks that every
path names a real pulumi-gcp input.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Callable

from ray_tpu_gke.catalog.resource_types import CLUSTER, NODE_POOL, RESOURCE_POLICY

from .paths import ABSENT, covers, lookup, parse_path, same

# node_config fields that cannot be updated in place (shared by node pools and the cluster's default node config).
_NODE_CONFIG_FORCE_NEW = (
    "advancedMachineFeatures",
    "bootDiskKmsKey",
    "confidentialNodes.confidentialInstanceType",
    "enableConfidentialStorage",
    "ephemeralStorageLocalSsdConfig",
    "guestAccelerators",
    "hostMaintenancePolicy",
    "localNvmeSsdBlockConfig",
    "localSsdCount",
    "localSsdEncryptionMode",
    "maxRunDuration",
    "metadata",
    "minCpuPlatform",
    "nodeGroup",
    "oauthScopes",
    "preemptible",
    "reservationAffinity",
    "sandboxConfig",
    "secondaryBootDisks",
    "serviceAccount",
    "shieldedInstanceConfig",
    "soleTenantConfig",
    "spot",
    "flexStart",
)


def _shrinks_cidr(old: Any, new: Any) -> bool:
    """A subnetwork's primary range can grow in place; any other change replaces it."""
    try:
        return not ipaddress.ip_network(old).subnet_of(ipaddress.ip_network(new))
    except (TypeError, ValueError):
        return True


def _disables(old: Any, new: Any) -> bool:
    return bool(old) and not new


REPLACE_PATHS: dict[str, tuple[str, ...]] = {
    NODE_POOL: (
        "cluster",
        "initialNodeCount",
        "location",
        "maxPodsPerNode",
        "name",
        "namePrefix",
        "placementPolicy",
        "project",
        "queuedProvisioning",
        "networkConfig.acceleratorNetworkProfile",
        "networkConfig.additionalNodeNetworkConfigs",
        "networkConfig.additionalPodNetworkConfigs",
        "networkConfig.createPodRange",
        "networkConfig.podCidrOverprovisionConfig",
        "networkConfig.podIpv4CidrBlock",
        "networkConfig.podRange",
        "networkConfig.subnetwork",
        *(f"nodeConfig.{p}" for p in _NODE_CONFIG_FORCE_NEW),
    ),
    CLUSTER: (
        "clusterIpv4Cidr",
        "confidentialNodes",
        "datapathProvider",
        "dataplaneOptimizationMode",
        "defaultMaxPodsPerNode",
        "description",
        "enableAutopilot",
        "enableKubernetesAlpha",
        "enableTpu",
        "initialNodeCount",
        "ipAllocationPolicy",
        "location",
        "masterAuth.clientCertificateConfig",
        "name",
        "network",
        "networkingMode",
        "nodePools",
        "privateClusterConfig.masterIpv4CidrBlock",
        "privateClusterConfig.privateEndpointSubnetwork",
        "project",
        "subnetwork",
        "clusterAutoscaling.autoProvisioningDefaults.bootDiskKmsKey",
        "userManagedKeysConfig.aggregationCa",
        "userManagedKeysConfig.clusterCa",
        "userManagedKeysConfig.etcdApiCa",
        "userManagedKeysConfig.etcdPeerCa",
        *(f"nodeConfig.{p}" for p in _NODE_CONFIG_FORCE_NEW),
    ),
    "gcp:compute/network:Network": (
        "autoCreateSubnetworks",
        "description",
        "internalIpv6Range",
        "name",
        "networkProfile",
        "params",
        "project",
    ),
    "gcp:compute/subnetwork:Subnetwork": (
        "description",
        "externalIpv6Prefix",
        "internalIpv6Prefix",
        "name",
        "network",
        "params",
        "project",
        "region",
        "reservedInternalRange",
        "resolveSubnetMask",
    ),
    "gcp:compute/router:Router": (
        "encryptedInterconnectRouter",
        "name",
        "nccGateway",
        "network",
        "params",
        "project",
        "region",
    ),
    "gcp:compute/routerNat:RouterNat": (
        "endpointTypes",
        "initialNatIps",
        "name",
        "project",
        "region",
        "router",
        "type",
    ),
    # Workload policies (Ironwood placement) cannot be changed in place in the provider versions this project pins
    # against: treat every change as a replacement, the cautious reading.
    RESOURCE_POLICY: ("*",),
    "gcp:serviceaccount/account:Account": ("accountId", "project"),
    "gcp:projects/iAMMember:IAMMember": ("*",),
    "gcp:serviceaccount/iAMMember:IAMMember": ("*",),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("*",),
    "gcp:storage/bucket:Bucket": (
        "customPlacementConfig",
        "enableObjectRetention",
        "hierarchicalNamespace",
        "location",
        "name",
        "project",
    ),
    # Monitoring (components/resources/monitoring.py): only the project is ForceNew (resource_monitoring_dashboard.go,
    # resource_monitoring_alert_policy.go); a new dashboard JSON, condition, threshold or channel list is a PATCH.
    "gcp:monitoring/dashboard:Dashboard": ("project",),
    "gcp:monitoring/alertPolicy:AlertPolicy": ("project",),
}

# Changes that replace only when a predicate of (old, new) holds (the provider's ForceNewIfChange rules).
CONDITIONAL_REPLACE: dict[str, dict[str, Callable[[Any, Any], bool]]] = {
    "gcp:compute/subnetwork:Subnetwork": {"ipCidrRange": _shrinks_cidr},
    CLUSTER: {"enableL4IlbSubsetting": _disables, "enableFqdnNetworkPolicy": _disables},
}

# A TPU pool's machine type and zone can be changed through the API, but only by recreating every node: the running
# slice is torn down and its capacity must be found again, which is a replacement in all but name.
TPU_POOL_REPLACE_PATHS = ("nodeConfig.machineType", "nodeLocations")

# Kubernetes objects: a new name or namespace is a new object.
KUBERNETES_REPLACE_PATHS = ("metadata.name", "metadata.namespace")


def replace_rule(type_: str, tokens: tuple, old_inputs: dict, new_inputs: dict, tpu_pool: bool) -> bool:
    """Whether a change at `tokens` can only be applied by replacing a resource of this type."""
    rules = REPLACE_PATHS.get(type_, ())
    if type_.startswith("kubernetes:"):
        rules = KUBERNETES_REPLACE_PATHS
    if tpu_pool:
        rules = rules + TPU_POOL_REPLACE_PATHS
    for rule in rules:
        if rule == "*":
            return True
        rule_tokens = parse_path(rule)
        if covers(rule_tokens, tokens):
            return True
        # A whole block added or removed: replaces when the rule's own value differs.
        if covers(tokens, rule_tokens) and not same(lookup(old_inputs, rule_tokens), lookup(new_inputs, rule_tokens)):
            return True
    for rule, predicate in CONDITIONAL_REPLACE.get(type_, {}).items():
        rule_tokens = parse_path(rule)
        if covers(rule_tokens, tokens) or covers(tokens, rule_tokens):
            old, new = lookup(old_inputs, rule_tokens), lookup(new_inputs, rule_tokens)
            if not same(old, new) and old is not ABSENT and predicate(old, new):
                return True
    return False
