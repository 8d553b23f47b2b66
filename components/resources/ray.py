"""KubeRay objects (RayCluster, RayService, RayJob) and Autopilot ComputeClasses as Kubernetes custom resources."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..render import manifests
from ..spec.args import RayClusterArgs, RayJobArgs, RayServiceArgs
from ..spec.component_args import service_account_warning, validate_ray_args
from ..spec.problems import ConfigError, Problem
from ..spec.ray_models import RayClusterConfig, RayJobConfig, RayObjectConfig, RayServiceConfig


def custom_resource(name: str, manifest: dict, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """Wrap a manifest built by `manifests`; the type token follows it (e.g. kubernetes:ray.io/v1:RayCluster)."""
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


# KubeRay runs a RayJob once: on a finished job (JobDeploymentStatusComplete or Failed) rayjob_controller.go only runs
# the deletion and TTL logic, so a changed spec applied in place would run nothing. A changed spec replaces the
# object instead, deleted first since the new one has the same name: `pulumi up` re-runs the job.
RAYJOB_REPLACE = pulumi.ResourceOptions(replace_on_changes=["spec"], delete_before_replace=True)

# Admission rule rayservice-none-replaces-on-cluster-change. KubeRay applies a RayService's changed cluster spec by
# preparing a new cluster and switching to it (rayservice_controller.go shouldPrepareNewCluster), only where
# isZeroDowntimeUpgradeEnabled holds, which upgradeStrategy None turns off: the change is accepted and never reaches
# the running cluster (KubeRay v1.7.0; a Serve config change still does). Under None a changed cluster spec therefore
# replaces the RayService, deleted first (same name; its RayCluster goes with it): the service is down until the new
# cluster serves, which is what None, chosen where there is no room for a second cluster, already implies.
RAYSERVICE_NONE_REPLACE = pulumi.ResourceOptions(
    replace_on_changes=["spec.rayClusterConfig"], delete_before_replace=True
)


def replace_options(manifest: dict) -> pulumi.ResourceOptions | None:
    """The replacement a KubeRay object needs for its changes to take effect, if any."""
    if manifest["kind"] == "RayJob":
        return RAYJOB_REPLACE
    if manifest["kind"] == "RayService" and manifest["spec"]["upgradeStrategy"]["type"] == "None":
        return RAYSERVICE_NONE_REPLACE
    return None


def _validate(kind: str, model: type[RayObjectConfig], args, name: str):
    """The validated Ray object (spec/component_args.py), what its groups run on and the render context."""
    valid = validate_ray_args(kind, model, args, name)
    warning = service_account_warning(kind, name, args, valid.obj)
    if warning:
        pulumi.log.warn(warning)
    ctx = manifests.RenderContext(
        standard=valid.mode == "standard",
        service_account=args.get("service_account", "default"),
        bucket=args.get("bucket"),
        labels=dict(args.get("labels") or {}),
        head_pool=args.get("head_pool") or manifests.SYSTEM_POOL,
        cluster_name=valid.cluster_name,
    )
    return valid.obj, valid.targets, ctx


class RayWorkload(pulumi.ComponentResource):
    """One KubeRay object, ordered after what it runs on; the type token is its kind."""

    name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    head_service: pulumi.Output[str]
    """The Ray head's Kubernetes service, `<namespace>/<name>-head-svc` (dashboard 8265, client 10001)."""

    def __init__(
        self,
        name: str,
        manifest: dict,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(f"ray-tpu-gke:index:{manifest['kind']}", name, None, opts)
        problems = [f"{manifest['kind']} {name}: {p}" for p in manifests.label_problems(manifest)]
        if problems:
            raise ConfigError([Problem(name, p) for p in problems])
        options = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        replace = replace_options(manifest)
        if replace is not None:
            options = pulumi.ResourceOptions.merge(options, replace)
        self.resource = custom_resource(name, manifest, options)
        meta = manifest["metadata"]
        self.name = pulumi.Output.from_input(meta["name"])
        self.namespace = pulumi.Output.from_input(meta["namespace"])
        # KubeRay names the head service <cluster>-head-svc (RayService: <service>-head-svc as well).
        self.head_service = pulumi.Output.from_input(f"{meta['namespace']}/{meta['name']}-head-svc")
        self.register_outputs({"name": meta["name"], "namespace": meta["namespace"]})


class RayCluster(RayWorkload):
    """A KubeRay RayCluster whose worker groups run on TPU slices of the catalogue."""

    def __init__(self, name: str, args: RayClusterArgs, opts: pulumi.ResourceOptions | None = None):
        obj, targets, ctx = _validate("RayCluster", RayClusterConfig, args, name)
        super().__init__(
            name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"], _depends_on(opts), opts
        )


class RayService(RayWorkload):
    """A KubeRay RayService (Ray Serve) on TPU slices."""

    def __init__(self, name: str, args: RayServiceArgs, opts: pulumi.ResourceOptions | None = None):
        obj, targets, ctx = _validate("RayService", RayServiceConfig, args, name)
        super().__init__(
            name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"], _depends_on(opts), opts
        )


class RayJob(RayWorkload):
    """A KubeRay RayJob on a Ray cluster of its own, or on an existing RayCluster (`spec.cluster`)."""

    def __init__(self, name: str, args: RayJobArgs, opts: pulumi.ResourceOptions | None = None):
        obj, targets, ctx = _validate("RayJob", RayJobConfig, args, name)
        super().__init__(
            name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"], _depends_on(opts), opts
        )


def _depends_on(opts: pulumi.ResourceOptions | None) -> list:
    """The component's own dependencies, for its custom resource too (the node pools a standalone object runs on)."""
    depends_on = opts.depends_on if opts is not None else None
    if depends_on is None:
        return []
    return list(depends_on) if isinstance(depends_on, (list, tuple)) else [depends_on]
