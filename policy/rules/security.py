"""Security baseline of every GKE cluster and node pool, whatever the stack."""

from __future__ import annotations

from ..view import CLUSTER, NODE_POOL, UNKNOWN, Resource, is_known
from .base import ADVISORY, MANDATORY, Messages, resource_rule

DEFAULT_COMPUTE_SA_SUFFIX = "-compute@developer.gserviceaccount.com"


def autopilot(cluster: Resource) -> bool:
    return cluster.get("enableAutopilot") is True


def _unset(value) -> bool:
    return value is None or value == "" or value == [] or value == {}


@resource_rule(
    "gke-private-nodes",
    MANDATORY,
    "GKE nodes have no public IP addresses (privateClusterConfig.enablePrivateNodes).",
    "TPU hosts and the system pool reach the internet through Cloud NAT only; nothing on the internet reaches them.",
    types=(CLUSTER,),
)
def private_nodes(r: Resource) -> Messages:
    value = r.get("privateClusterConfig.enablePrivateNodes")
    if value != UNKNOWN and value is not True:
        yield f"cluster {r.name}: privateClusterConfig.enablePrivateNodes is {value!r}; it must be true"


@resource_rule(
    "gke-workload-identity",
    MANDATORY,
    "Workload Identity is enabled (workloadIdentityConfig.workloadPool is set).",
    "Pods get Google credentials through their Kubernetes service account, never from the node's identity.",
    types=(CLUSTER,),
)
def workload_identity(r: Resource) -> Messages:
    if _unset(r.get("workloadIdentityConfig.workloadPool")):
        yield f"cluster {r.name}: workloadIdentityConfig.workloadPool is not set; set it to PROJECT.svc.id.goog"


@resource_rule(
    "gke-shielded-nodes",
    MANDATORY,
    "Standard clusters enable shielded nodes (enableShieldedNodes: true).",
    "Shielded GKE nodes prove their identity to the control plane; a node that cannot is not allowed to join.",
    types=(CLUSTER,),
)
def shielded_nodes(r: Resource) -> Messages:
    value = r.get("enableShieldedNodes")
    if not autopilot(r) and value != UNKNOWN and value is not True:
        yield f"cluster {r.name}: enableShieldedNodes is {value!r}; set it to true"


@resource_rule(
    "gke-no-legacy-abac",
    MANDATORY,
    "Legacy ABAC is off (enableLegacyAbac is not true).",
    "ABAC grants permissions outside RBAC, which no audit of roles would show.",
    types=(CLUSTER,),
)
def no_legacy_abac(r: Resource) -> Messages:
    if r.get("enableLegacyAbac") is True:
        yield f"cluster {r.name}: enableLegacyAbac is true; it must be false"


@resource_rule(
    "gke-no-client-certificate",
    MANDATORY,
    "The cluster issues no client certificate (masterAuth.clientCertificateConfig.issueClientCertificate).",
    "A client certificate is a long-lived credential that cannot be revoked short of rotating the cluster CA.",
    types=(CLUSTER,),
)
def no_client_certificate(r: Resource) -> Messages:
    if r.get("masterAuth.clientCertificateConfig.issueClientCertificate") is True:
        yield f"cluster {r.name}: masterAuth.clientCertificateConfig.issueClientCertificate is true; it must be false"


@resource_rule(
    "gke-release-channel",
    MANDATORY,
    "The cluster is enrolled in a release channel (releaseChannel.channel is RAPID, REGULAR or STABLE).",
    "Outside a channel, control plane and nodes miss security patches, and the Ray Operator add-on and TPU "
    "versions are not kept compatible.",
    types=(CLUSTER,),
)
def release_channel(r: Resource) -> Messages:
    channel = r.get("releaseChannel.channel")
    if channel != UNKNOWN and (_unset(channel) or channel == "UNSPECIFIED"):
        yield f"cluster {r.name}: releaseChannel.channel is {channel!r}; choose RAPID, REGULAR or STABLE"


def _service_account_problem(value) -> str | None:
    if value == UNKNOWN:
        return None
    if _unset(value) or value == "default":
        return "not set, so nodes run as the Compute Engine default service account"
    if isinstance(value, str) and value.endswith(DEFAULT_COMPUTE_SA_SUFFIX):
        return f"{value}, the Compute Engine default service account"
    return None


@resource_rule(
    "gke-node-service-account",
    MANDATORY,
    "Nodes run as a dedicated service account, never the Compute Engine default one.",
    "The default compute service account has Editor on the project: any pod that reached the node's identity "
    "could change the whole project.",
    types=(CLUSTER, NODE_POOL),
)
def node_service_account(r: Resource) -> Messages:
    if r.type == NODE_POOL:
        checks = [("nodeConfig.serviceAccount", r.get("nodeConfig.serviceAccount"))]
    elif autopilot(r):
        path = "clusterAutoscaling.autoProvisioningDefaults.serviceAccount"
        checks = [(path, r.get(path))]
    else:
        # Even a removed default pool is created first, with this identity.
        checks = [("nodeConfig.serviceAccount", r.get("nodeConfig.serviceAccount"))]
    kind = "node pool" if r.type == NODE_POOL else "cluster"
    for path, value in checks:
        problem = _service_account_problem(value)
        if problem:
            yield f"{kind} {r.name}: {path} is {problem}; use the stack's node service account"


@resource_rule(
    "gke-metadata-server",
    MANDATORY,
    "Node pools serve pods the GKE metadata server (nodeConfig.workloadMetadataConfig.mode: GKE_METADATA).",
    "Without it, pods read the node's credentials from the Compute Engine metadata server, bypassing "
    "Workload Identity.",
    types=(CLUSTER, NODE_POOL),
)
def metadata_server(r: Resource) -> Messages:
    if r.type == CLUSTER and (autopilot(r) or r.get("nodeConfig") is None):
        return
    mode = r.get("nodeConfig.workloadMetadataConfig.mode")
    if mode != UNKNOWN and mode != "GKE_METADATA":
        kind = "node pool" if r.type == NODE_POOL else "cluster"
        yield f"{kind} {r.name}: nodeConfig.workloadMetadataConfig.mode is {mode!r}; it must be GKE_METADATA"


@resource_rule(
    "gke-shielded-instance",
    ADVISORY,
    "Node pools boot shielded VMs with secure boot and integrity monitoring.",
    "Secure boot and integrity monitoring detect tampered boot components on the nodes.",
    types=(NODE_POOL,),
)
def shielded_instance(r: Resource) -> Messages:
    config = r.get("nodeConfig.shieldedInstanceConfig") or {}
    if not is_known(config):
        return
    # GKE's defaults: secure boot off, integrity monitoring on.
    off = [
        k
        for k, default in (("enableSecureBoot", False), ("enableIntegrityMonitoring", True))
        if (default if config.get(k) is None else config.get(k)) is False
    ]
    if off:
        yield f"node pool {r.name}: nodeConfig.shieldedInstanceConfig.{' and '.join(off)} should be true"
