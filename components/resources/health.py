"""The in-cluster slice check of a stack (render/health.py builds its objects): a Google service account that may
only write metrics, bound by Workload Identity to the check's Kubernetes service account; the metric descriptors
it writes to are SliceMonitoring's (resources/metric_waits.py), whose policies wait for them; and the Namespace,
ServiceAccount, read-only RBAC, ConfigMap and CronJob in the cluster."""

from __future__ import annotations

from typing import Mapping, Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ..render import health
from ..render.manifests import RenderContext
from ..spec.config import StackConfig
from ..spec.problems import ConfigError, Problem

# "Monitoring Metric Writer: ... for service accounts and agents. Doesn't permit access to Monitoring in the console"
# (IAM "Monitoring roles"): the only role the check's Google identity has.
METRIC_WRITER = "roles/monitoring.metricWriter"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"


class SliceHealth(pulumi.ComponentResource):
    """The stack's slice check: every few minutes, in the cluster, the checks of `python -m plan.verify` (hosts,
    labels, the TPU webhook's environment, Ray's own view), one Cloud Monitoring point per slice and Ray object."""

    google_service_account: pulumi.Output[str]
    """The email of the Google service account the check writes its metrics as."""

    def __init__(
        self,
        name: str,
        config: StackConfig,
        pools: Mapping[str, Sequence[str]],
        ctx: RenderContext,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource],
        labels: Mapping[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        try:
            plan = health.health_plan(config, pools, ctx)  # before anything is registered
        except health.HealthError as error:
            raise ConfigError([Problem(f"ray-tpu-gke:{error.path}", error.message)]) from None
        super().__init__("ray-tpu-gke:index:SliceHealth", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = gcp.serviceaccount.Account(
            f"{name}-health",
            account_id=plan.account_id,
            display_name=f"Slice check of {config.cluster.name} (writes metrics only)",
            project=config.project,
            opts=child,
        )
        gcp.projects.IAMMember(
            f"{name}-health-metric-writer",
            project=config.project,
            role=METRIC_WRITER,
            member=account.email.apply(lambda email: f"serviceAccount:{email}"),
            opts=child,
        )
        gcp.serviceaccount.IAMMember(
            f"{name}-health-wi",
            service_account_id=account.name,
            role=WORKLOAD_IDENTITY_USER,
            member=f"serviceAccount:{config.project}.svc.id.goog[{health.NAMESPACE}/{health.SERVICE_ACCOUNT}]",
            opts=child,
        )
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        created: list[pulumi.Resource] = []
        for manifest in health.objects(plan, labels):
            # Everything after the Namespace waits for it (the Ray namespaces come with depends_on).
            created.append(
                _k8s_object(
                    name,
                    manifest,
                    pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=created[:1])),
                )
            )
        self.objects = created
        self.google_service_account = account.email
        self.register_outputs({"googleServiceAccount": account.email})


def _k8s_object(prefix: str, manifest: dict, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One object of render/health.py as its typed pulumi-kubernetes resource."""
    kind, meta = manifest["kind"], manifest["metadata"]
    name = f"{prefix}-health-{kind.lower()}" + (f"-{meta['namespace']}" if kind in ("Role", "RoleBinding") else "")
    if kind == "Namespace":
        return k8s.core.v1.Namespace(name, metadata=meta, opts=opts)
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(name, metadata=meta, opts=opts)
    if kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(name, metadata=meta, data=manifest["data"], opts=opts)
    if kind == "ClusterRole":
        return k8s.rbac.v1.ClusterRole(name, metadata=meta, rules=manifest["rules"], opts=opts)
    if kind == "Role":
        return k8s.rbac.v1.Role(name, metadata=meta, rules=manifest["rules"], opts=opts)
    if kind == "ClusterRoleBinding":
        return k8s.rbac.v1.ClusterRoleBinding(
            name, metadata=meta, role_ref=manifest["roleRef"], subjects=manifest["subjects"], opts=opts
        )
    if kind == "RoleBinding":
        return k8s.rbac.v1.RoleBinding(
            name, metadata=meta, role_ref=manifest["roleRef"], subjects=manifest["subjects"], opts=opts
        )
    if kind == "CronJob":
        return k8s.batch.v1.CronJob(name, metadata=meta, spec=manifest["spec"], opts=opts)
    raise ValueError(f"render/health.py built a {kind}, which SliceHealth does not create")
