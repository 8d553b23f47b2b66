"""The GKE cluster: Standard or Autopilot, the Ray Operator add-on, private nodes, Workload Identity, hardened."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from .. import admission
from ..render import manifests, upgrades
from ..spec.args import GkeClusterArgs
from ..spec.component_args import validate_cluster_args
from . import preflight

RAY_KSA = "ray"  # the Kubernetes service account of Ray pods in each Ray namespace

OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # access is limited by IAM, not scopes


def node_hardening(service_account: pulumi.Input[str]) -> gcp.container.NodePoolNodeConfigArgsDict:
    """Settings every node pool shares: own service account, COS, shielded VM, GKE metadata server only. Nested
    settings are plain dicts, which pulumi-gcp takes as well as its `...Args` classes (see slice_pool.py)."""
    return {
        "service_account": service_account,
        "oauth_scopes": OAUTH_SCOPES,
        "image_type": "COS_CONTAINERD",
        "metadata": {"disable-legacy-endpoints": "true"},
        "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
        "workload_metadata_config": {"mode": "GKE_METADATA"},
    }


def _keywords(settings: Mapping[str, Any]) -> dict[str, Any]:
    # The shared node settings as keywords of an `...Args` class, which takes their nested dicts as it sends them.
    return dict(settings)


def kubeconfig(name: pulumi.Input[str], endpoint: pulumi.Input[str], ca_certificate: pulumi.Input[Optional[str]]):
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin: no token is ever stored in state."""

    def render(args):
        cluster_name, host, ca = args
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": cluster_name, "cluster": {"server": f"https://{host}", "certificate-authority-data": ca}}
                ],
                "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
                "current-context": cluster_name,
                "users": [
                    {
                        "name": cluster_name,
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1beta1",
                                "command": "gke-gcloud-auth-plugin",
                                "installHint": "Install gke-gcloud-auth-plugin: gcloud components install "
                                "gke-gcloud-auth-plugin",
                                "provideClusterInfo": True,
                            }
                        },
                    }
                ],
            },
            sort_keys=True,
        )

    return pulumi.Output.secret(pulumi.Output.all(name, endpoint, ca_certificate).apply(render))


class GkeCluster(pulumi.ComponentResource):
    """A GKE cluster with the Ray Operator add-on, its system pool, a Kubernetes provider and the Ray namespaces."""

    cluster_name: pulumi.Output[str]
    """The cluster's name."""
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """A kubeconfig using gke-gcloud-auth-plugin (secret; holds no token)."""

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        c = validate_cluster_args(args, name)  # before anything is registered
        super().__init__("ray-tpu-gke:index:GkeCluster", name, None, opts)
        standard = c.mode == "standard"
        project = args["project"]
        node_email = args["node_service_account"]
        labels = args.get("labels") or {}
        protect = c.deletion_protection
        # POD: the kube state metrics of pods, kube_pod_status_unschedulable among them, which the pending-pods alert
        # reads (GKE "Collect and view kube state metrics": an explicit list overrides the defaults, so it is named).
        monitoring = ["SYSTEM_COMPONENTS", "POD"] + (
            ["APISERVER", "SCHEDULER", "CONTROLLER_MANAGER"] if standard else []
        )
        maintenance = upgrades.maintenance_policy(c.maintenance)

        self.cluster = gcp.container.Cluster(
            name,
            name=c.name,
            project=project,
            location=c.location,
            network=args["network"],
            subnetwork=args["subnetwork"],
            enable_autopilot=True if not standard else None,
            # Standard: the default pool goes; the system and TPU pools are managed as their own resources.
            remove_default_node_pool=True if standard else None,
            initial_node_count=1 if standard else None,
            node_config=gcp.container.ClusterNodeConfigArgs(
                **_keywords(node_hardening(node_email)),
            )
            if standard
            else None,
            cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
                auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                    service_account=node_email, oauth_scopes=OAUTH_SCOPES
                ),
            )
            if not standard
            else None,
            deletion_protection=protect,
            # Unset, the release channel picks the version; its default is checked against what the workloads need.
            min_master_version=c.min_master_version,
            release_channel=gcp.container.ClusterReleaseChannelArgs(
                channel=preflight.gke_version(
                    project,
                    c.location,
                    c.release_channel,
                    c.min_master_version,
                    admission.VersionNeed(
                        args.get("minimum_version") or admission.RAY_OPERATOR_MIN_GKE_VERSION,
                        args.get("minimum_version_reason") or "the Ray Operator add-on",
                    ),
                )
            ),
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args["pods_range_name"],
                services_secondary_range_name=args["services_range_name"],
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                enable_private_endpoint=c.private_endpoint,
                master_ipv4_cidr_block=c.network.master_cidr,
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block=n.cidr_block, display_name=n.display_name or None
                    )
                    for n in c.master_authorized_networks
                ],
            ),
            master_auth=gcp.container.ClusterMasterAuthArgs(
                client_certificate_config=gcp.container.ClusterMasterAuthClientCertificateConfigArgs(
                    issue_client_certificate=False
                ),
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{project}.svc.id.goog"
            ),
            addons_config=gcp.container.ClusterAddonsConfigArgs(
                ray_operator_configs=[
                    gcp.container.ClusterAddonsConfigRayOperatorConfigArgs(
                        enabled=True,
                        ray_cluster_logging_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterLoggingConfigArgs(
                            enabled=c.ray_operator.logging
                        ),
                        ray_cluster_monitoring_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterMonitoringConfigArgs(
                            enabled=c.ray_operator.monitoring
                        ),
                    )
                ],
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
            ),
            logging_config=gcp.container.ClusterLoggingConfigArgs(enable_components=["SYSTEM_COMPONENTS", "WORKLOADS"]),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=monitoring,
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            # Dataplane V2 enforces network policy itself (Autopilot always runs it), so the older Calico
            # enforcement is declared off rather than left to a default.
            datapath_provider="ADVANCED_DATAPATH" if standard else None,
            network_policy=gcp.container.ClusterNetworkPolicyArgs(enabled=False) if standard else None,
            enable_intranode_visibility=True if standard else None,
            enable_shielded_nodes=True if standard else None,
            enable_legacy_abac=False,
            binary_authorization=gcp.container.ClusterBinaryAuthorizationArgs(
                evaluation_mode="PROJECT_SINGLETON_POLICY_ENFORCE" if c.binary_authorization else "DISABLED"
            ),
            authenticator_groups_config=gcp.container.ClusterAuthenticatorGroupsConfigArgs(
                security_group=c.rbac_security_group
            )
            if c.rbac_security_group
            else None,
            security_posture_config=gcp.container.ClusterSecurityPostureConfigArgs(
                mode="BASIC", vulnerability_mode="VULNERABILITY_BASIC"
            ),
            cost_management_config=gcp.container.ClusterCostManagementConfigArgs(enabled=True),
            resource_labels=labels,
            maintenance_policy=_maintenance_policy(maintenance),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=protect,
                # The removed default pool's settings are read back differently once it is gone.
                ignore_changes=["nodeConfig", "initialNodeCount"] if standard else [],
            ),
        )

        self.system_pool = None
        if standard:
            pool = c.system_pool
            self.system_pool = gcp.container.NodePool(
                f"{name}-{manifests.SYSTEM_POOL}",
                name=manifests.SYSTEM_POOL,
                project=project,
                cluster=self.cluster.name,
                location=c.location,
                # Totals for the whole pool: per-zone limits would run in every zone of a regional cluster
                # (admission.PER_ZONE_LIMITS).
                autoscaling=gcp.container.NodePoolAutoscalingArgs(
                    total_min_node_count=pool.min_nodes, total_max_node_count=pool.max_nodes, location_policy="BALANCED"
                ),
                management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    **_keywords(node_hardening(node_email)),
                    machine_type=pool.machine_type,
                    disk_size_gb=pool.disk_size_gb,
                    disk_type="pd-balanced",
                    labels={manifests.POOL_LABEL: manifests.SYSTEM_POOL},
                    resource_labels=labels,
                ),
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount", "nodeCount"]),
            )

        self.provider_kubeconfig = kubeconfig(
            self.cluster.name,
            self.cluster.endpoint,
            self.cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate),
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.provider_kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )

        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=self.provider, depends_on=[r for r in (self.cluster, self.system_pool) if r]
        )
        self.namespaces = {}
        for namespace in args.get("namespaces") or []:
            ns = k8s.core.v1.Namespace(
                f"{name}-{namespace}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels=labels),
                opts=k8s_opts,
            )
            self.namespaces[namespace] = k8s.core.v1.ServiceAccount(
                f"{name}-{namespace}-{RAY_KSA}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=RAY_KSA,
                    namespace=ns.metadata.name,
                    annotations={"iam.gke.io/gcp-service-account": args["ray_service_account"]},
                    labels=labels,
                ),
                opts=k8s_opts,
            )

        self.cluster_name = self.cluster.name
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = self.provider_kubeconfig
        self.register_outputs(
            {"clusterName": self.cluster_name, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig}
        )


def _maintenance_policy(policy: dict | None) -> "gcp.container.ClusterMaintenancePolicyArgs | None":
    """render/upgrades.py's maintenance policy as pulumi-gcp's typed arguments."""
    if policy is None:
        return None
    window = policy.get("recurringWindow")
    return gcp.container.ClusterMaintenancePolicyArgs(
        recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=window["startTime"], end_time=window["endTime"], recurrence=window["recurrence"]
        )
        if window
        else None,
        maintenance_exclusions=[
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=e["exclusionName"],
                start_time=e["startTime"],
                end_time=e.get("endTime"),
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=e["exclusionOptions"]["scope"], end_time_behavior=e["exclusionOptions"].get("endTimeBehavior")
                ),
            )
            for e in policy.get("maintenanceExclusions", [])
        ]
        or None,
    )
