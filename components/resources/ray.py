"""KubeRay objects (RayCluster, RayService, RayJob) and Autopilot ComputeClasses as Kubernetes custom resources."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import ValidationError

from ..render import manifests
from ..spec.args import RayClusterArgs, RayJobArgs, RayServiceArgs
from ..spec.models import (
    CpuPoolConfig,
    GpuPoolConfig,
    RayClusterConfig,
    RayJobConfig,
    RayObjectConfig,
    RayServiceConfig,
    TpuSliceConfig,
    validate_as,
)
from ..spec.paths import ClusterContext, Paths
from ..spec.problems import ConfigError, Problem, _problems, component_args, show


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

_TARGET_MODELS = (("tpu_slices", "slice", TpuSliceConfig), ("gpu_pools", "gpu_pool", GpuPoolConfig),
                  ("cpu_pools", "cpu_pool", CpuPoolConfig))


def _validate(kind: str, model: type[RayObjectConfig], args, name: str):
    """The validated Ray object, what its groups run on and the render context, from RayClusterArgs (or its
    RayService/RayJob forms); ConfigError names every bad argument."""
    from ..spec import checks

    root = f"{kind}({name}).args"
    paths = Paths("args", root)
    problems = component_args(args, root, f"{kind}Args", ("kubernetes_provider", "spec"))
    mode = args.get("mode", "standard")
    if mode not in ("standard", "autopilot"):
        problems.append(Problem(f"{root}.mode", f"{show(mode)} is invalid: allowed: standard, autopilot"))
    obj = None
    try:
        obj = validate_as(model, args.get("spec"), "args") if args.get("spec") is not None else None
    except ValidationError as exc:
        problems += _problems(exc, f"{root}.spec", model, "args")
    lists: dict[str, list] = {"ray_clusters": [], "ray_services": [], "ray_jobs": []}
    for section, _, entry_model in _TARGET_MODELS:
        lists[section] = []
        for i, item in enumerate(args.get(section) or []):
            try:
                lists[section].append(validate_as(entry_model, item, "args"))
            except ValidationError as exc:
                problems += _problems(exc, f"{root}.{section}[{i}]", entry_model, "args")
                lists[section].append(None)
    if obj is not None and not problems:
        section = {"RayCluster": "ray_clusters", "RayService": "ray_services", "RayJob": "ray_jobs"}[kind]
        lists[section] = [obj]
        raw = {k: list(v) for k, v in lists.items()}
        problems += [Problem(p.path.replace(f"{root}.{section}[0]", f"{root}.spec"), p.message)
                     for p in checks.check_ray_objects(ClusterContext(mode), raw, lists, paths, [])]
    if problems:
        raise ConfigError(problems)
    if not args.get("service_account"):
        pulumi.log.warn(f"{kind}({name}): its pods run as the Kubernetes service account `default` of namespace "
                        f"{obj.namespace}, with no Workload Identity: they act as no Google service account; set "
                        "`service_account` to one annotated iam.gke.io/gcp-service-account and bound by "
                        "roles/iam.workloadIdentityUser (RayTpuPlatform's namespaces have one, `ray`)")
    targets = {key: {e.name: e for e in lists[section] if e is not None} for section, key, _ in _TARGET_MODELS}
    cluster_name = args.get("cluster_name") or ""
    if mode == "autopilot" and not cluster_name:
        ironwood = sorted({g.slice for g in obj.worker_groups if g.slice in targets["slice"]
                           and manifests.needs_workload_policy(targets["slice"][g.slice].shape)})
        if ironwood:
            raise ConfigError([Problem(f"{root}.cluster_name", "required in Autopilot mode for the multi-host Ironwood "
                                       f"slices {', '.join(ironwood)}: their pods select the workload policy "
                                       "<cluster>-<slice> (ironwood_workload_policy creates it)")])
    ctx = manifests.RenderContext(standard=mode == "standard", service_account=args.get("service_account", "default"),
                                  bucket=args.get("bucket"), labels=dict(args.get("labels") or {}),
                                  head_pool=args.get("head_pool") or manifests.SYSTEM_POOL, cluster_name=cluster_name)
    return obj, targets, ctx


class RayWorkload(pulumi.ComponentResource):
    """One KubeRay object, ordered after what it runs on; the type token is its kind."""

    name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    head_service: pulumi.Output[str]
    """The Ray head's Kubernetes service, `<namespace>/<name>-head-svc` (dashboard 8265, client 10001)."""

    def __init__(self, name: str, manifest: dict, provider: k8s.Provider, depends_on: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"ray-tpu-gke:index:{manifest['kind']}", name, None, opts)
        problems = [f"{manifest['kind']} {name}: {p}" for p in manifests.label_problems(manifest)]
        if problems:
            raise ConfigError([Problem(name, p) for p in problems])
        options = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        if manifest["kind"] == "RayJob":
            options = pulumi.ResourceOptions.merge(options, RAYJOB_REPLACE)
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
        super().__init__(name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"],
                         _depends_on(opts), opts)


class RayService(RayWorkload):
    """A KubeRay RayService (Ray Serve) on TPU slices."""

    def __init__(self, name: str, args: RayServiceArgs, opts: pulumi.ResourceOptions | None = None):
        obj, targets, ctx = _validate("RayService", RayServiceConfig, args, name)
        super().__init__(name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"],
                         _depends_on(opts), opts)


class RayJob(RayWorkload):
    """A KubeRay RayJob on a Ray cluster of its own, or on an existing RayCluster (`spec.cluster`)."""

    def __init__(self, name: str, args: RayJobArgs, opts: pulumi.ResourceOptions | None = None):
        obj, targets, ctx = _validate("RayJob", RayJobConfig, args, name)
        super().__init__(name, manifests.ray_manifest(obj, targets, ctx), args["kubernetes_provider"],
                         _depends_on(opts), opts)


def _depends_on(opts: pulumi.ResourceOptions | None) -> list:
    """The component's own dependencies, for its custom resource too (the node pools a standalone object runs on)."""
    depends_on = opts.depends_on if opts is not None else None
    if depends_on is None:
        return []
    return list(depends_on) if isinstance(depends_on, (list, tuple)) else [depends_on]
