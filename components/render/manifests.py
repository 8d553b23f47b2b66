"""KubeRay and GKE manifests as plain dicts, built from config and the TPU catalogue.

Pure (no Pulumi import): a test can check every number of a manifest without running Pulumi, and the policy pack can
rebuild the expectation from the same catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import yaml

from .. import admission, catalog
from ..spec import multislice
from ..spec.config import StackConfig
from ..spec.models import CpuPoolConfig, GpuPoolConfig, TpuSliceConfig
from ..spec.ray_models import RayJobConfig, RayObjectConfig, RayServiceConfig
from . import llm

SLICE_LABEL = "ray-tpu-gke/slice"
# Also on a TPU pool's nodes: the slice's shape, which a plan of any program is read back from (plan/inventory.py).
SLICE_GENERATION_LABEL = "ray-tpu-gke/generation"
SLICE_TOPOLOGY_LABEL = "ray-tpu-gke/topology"
POOL_LABEL = "ray-tpu-gke/pool"  # on the system, GPU and CPU pools' nodes
SYSTEM_POOL = "system"
TPU_TAINT = {"key": catalog.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"}
GPU_TAINT = {"key": catalog.GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}  # admission.GPU_TAINT
GCS_MOUNT = "/gcs"
KINDS = {"rayClusters": "RayCluster", "rayServices": "RayService", "rayJobs": "RayJob"}  # config key -> kind
# Node label GKE puts on nodes placed by a workload policy; xpk selects multi-host Ironwood slices with it
# (AI-Hypercomputer/xpk src/xpk/core/scheduling.py).
PLACEMENT_POLICY_LABEL = "cloud.google.com/placement-policy-name"


@dataclass(frozen=True)
class RenderContext:
    """What a Ray object needs to know about the platform it runs on."""

    standard: bool
    service_account: str
    bucket: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    cluster_name: str = ""  # names the Autopilot workload policies of multi-host Ironwood slices
    head_pool: str = SYSTEM_POOL  # Standard mode: the node pool Ray heads run on


def render_context(config: StackConfig, service_account: str) -> RenderContext:
    return RenderContext(
        standard=config.standard,
        service_account=service_account,
        bucket=config.bucket_name,
        labels=dict(config.labels),
        cluster_name=config.cluster.name,
    )


needs_workload_policy = admission.needs_workload_policy  # a GKE placement rule (admission/nodes.py), read here too


def workload_policy_name(cluster_name: str, tpu_slice: TpuSliceConfig) -> str:
    return f"{cluster_name}-{tpu_slice.name}"[:63].rstrip("-")


def compute_class_name(entry: TpuSliceConfig | GpuPoolConfig) -> str:
    return f"{entry.name}-flex-start"


def capacity_selector(tpu_slice, standard: bool, cluster_name: str = "") -> dict[str, str]:
    """Node labels that steer a pod to the slice's capacity type.

    Standard mode: the slice's own pools carry SLICE_LABEL, which is exact. Autopilot: GKE provisions nodes from what
    the pod selects, so the capacity type is spelled out.
    """
    if standard:
        return {SLICE_LABEL: tpu_slice.name}
    selector = {}
    if tpu_slice.capacity == "spot":
        selector["cloud.google.com/gke-spot"] = "true"
    elif tpu_slice.capacity == "reservation":
        # A label value holds no '/': the short name, and the owner project of a shared reservation apart
        # (admission.RESERVATION_SELECTOR).
        selector["cloud.google.com/reservation-name"] = tpu_slice.reservation_name
        if tpu_slice.reservation_project:
            selector["cloud.google.com/reservation-project"] = tpu_slice.reservation_project
        selector["cloud.google.com/reservation-affinity"] = "specific"
    elif tpu_slice.capacity == "flexStart":
        selector["cloud.google.com/compute-class"] = compute_class_name(tpu_slice)
    if isinstance(tpu_slice, TpuSliceConfig) and needs_workload_policy(tpu_slice.shape):
        selector[PLACEMENT_POLICY_LABEL] = workload_policy_name(cluster_name, tpu_slice)
    if tpu_slice.zone:
        selector["topology.kubernetes.io/zone"] = tpu_slice.zone
    return selector


def slice_node_selector(tpu_slice: TpuSliceConfig, standard: bool, cluster_name: str = "") -> dict[str, str]:
    return {**tpu_slice.shape.node_selector, **capacity_selector(tpu_slice, standard, cluster_name)}


def compute_class(entry: TpuSliceConfig | GpuPoolConfig) -> dict:
    """An Autopilot custom ComputeClass that provisions a slice's hosts, or a GPU pool's nodes, with flex-start VMs."""
    if isinstance(entry, GpuPoolConfig):
        accelerator = {"gpu": {"type": entry.accelerator, "count": entry.machine.gpus}}
    else:
        shape = entry.shape
        accelerator = {"tpu": {"type": shape.accelerator, "count": shape.chips_per_host, "topology": shape.topology}}
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": compute_class_name(entry)},
        "spec": {
            "priorities": [{**accelerator, "flexStart": {"enabled": True}}],
            "nodePoolAutoCreation": {"enabled": True},
            "whenUnsatisfiable": "DoNotScaleUp",
        },
    }


def _gcs_fuse(ctx: RenderContext, obj: RayObjectConfig):
    """Pod annotations, volumes and mounts for the cluster's bucket through the GCS FUSE CSI driver."""
    if not (obj.gcs_fuse and ctx.bucket):
        return {}, [], []
    volume = {
        "name": "gcs",
        "csi": {
            "driver": "gcsfuse.csi.storage.gke.io",
            "volumeAttributes": {"bucketName": ctx.bucket, "mountOptions": "implicit-dirs"},
        },
    }
    return {"gke-gcsfuse/volumes": "true"}, [volume], [{"name": "gcs", "mountPath": GCS_MOUNT}]


def _head_group(obj: RayObjectConfig, ctx: RenderContext, slices: Mapping[str, TpuSliceConfig]) -> dict:
    annotations, volumes, mounts = _gcs_fuse(ctx, obj)
    env = multislice.head_env(obj, slices)  # Ray Train's start timeout and the slice shape, for the driver
    env += llm.container_env(obj, on_slice=False)  # an LLM service's token: the head builds its app
    resources = {"cpu": obj.head.cpu, "memory": obj.head.memory}
    container: dict[str, Any] = {
        "name": "ray-head",
        "image": obj.image,
        "ports": [
            {"containerPort": 6379, "name": "gcs"},
            {"containerPort": 8265, "name": "dashboard"},
            {"containerPort": 10001, "name": "client"},
            {"containerPort": 8000, "name": "serve"},
        ],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
    }
    if env:
        container["env"] = env
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"serviceAccountName": ctx.service_account, "containers": [container]}
    if ctx.standard:
        spec["nodeSelector"] = {"cloud.google.com/gke-nodepool": ctx.head_pool}
    if volumes:
        spec["volumes"] = volumes
    if multislice.grace_period(obj) is not None:  # Ray 2.57+ drains the head too (admission.RAY_DRAIN_GRACE)
        spec["terminationGracePeriodSeconds"] = multislice.grace_period(obj)
    template: dict[str, Any] = {"spec": spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    # The head schedules no Ray tasks: TPU work belongs on the TPU hosts.
    return {"rayStartParams": {"num-cpus": "0"}, "template": template}


def _tpu_worker(tpu_slice: TpuSliceConfig, ctx: RenderContext, gcs: bool) -> dict:
    shape = tpu_slice.shape
    # Sized from what the host allocates to pods (admission.ALLOCATABLE), less the GCS FUSE sidecar it shares.
    cpu, memory = admission.node_worker_resources(shape.machine_type.vcpus, shape.machine_type.memory_gib, gcs)
    env: list[dict[str, Any]] = [
        {"name": "JAX_PLATFORMS", "value": "tpu,cpu"},
        {"name": "ENABLE_PJRT_COMPATIBILITY", "value": "true"},
    ]
    ports: list[dict[str, Any]] = []
    if shape.multi_host:
        # What KubeRay's multi-host TPU samples give each host: its node IP for the megascale/vbar control service,
        # and the MXLA port the hosts of one slice talk on.
        env += [
            {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "VBAR_CONTROL_SERVICE_URL", "value": "$(NODE_IP):8353"},
        ]
        ports.append({"containerPort": 8081, "name": "mxla"})
    return {
        # Whole chips only: a TPU host is never shared, and KubeRay derives Ray's TPU resource from this limit.
        "resources": {"cpu": str(cpu), "memory": f"{memory}Gi", catalog.TPU_RESOURCE: str(shape.chips_per_host)},
        "env": env,
        "ports": ports,
        "hosts": shape.hosts,
        "selector": slice_node_selector(tpu_slice, ctx.standard, ctx.cluster_name),
        "tolerations": [{"key": catalog.TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
    }


def _gpu_worker(pool: GpuPoolConfig, ctx: RenderContext, gcs: bool) -> dict:
    machine = pool.machine
    cpu, memory = admission.node_worker_resources(machine.vcpus, machine.memory_gib, gcs_fuse=gcs)
    if ctx.standard:
        selector = {catalog.GPU_ACCELERATOR_LABEL: pool.accelerator, POOL_LABEL: pool.name}
    else:  # GKE "Deploy GPU workloads in Autopilot": the type, and the count per node, as node selectors
        selector = {
            catalog.GPU_ACCELERATOR_LABEL: pool.accelerator,
            catalog.GPU_COUNT_LABEL: str(machine.gpus),
            **capacity_selector(pool, standard=False),
        }
    return {
        # All the node's GPUs, requests equal to limits; KubeRay derives Ray's GPU resource from the limit.
        "resources": {"cpu": str(cpu), "memory": f"{memory}Gi", catalog.GPU_RESOURCE: str(machine.gpus)},
        "env": [],
        "ports": [],
        "hosts": 1,
        "selector": selector,
        "tolerations": [{"key": catalog.GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
    }


def _cpu_worker(pool: CpuPoolConfig, ctx: RenderContext, gcs: bool) -> dict:
    machine = admission.cpu_machine(pool.machine_type)
    if machine is None:  # validation refuses a machine type Compute Engine has no size of (check_cpu_machine_type)
        raise ValueError(f"{pool.machine_type!r} is not a predefined machine type")
    vcpus, memory_gib = machine
    cpu, memory = admission.node_worker_resources(vcpus, memory_gib, gcs_fuse=gcs)
    if ctx.standard:
        selector: dict[str, str] = {POOL_LABEL: pool.name}
    else:
        selector = {"cloud.google.com/gke-spot": "true"} if pool.capacity == "spot" else {}
        if pool.zone:
            selector["topology.kubernetes.io/zone"] = pool.zone
    return {
        "resources": {"cpu": str(cpu), "memory": f"{memory}Gi"},
        "env": [],
        "ports": [],
        "hosts": 1,
        "selector": selector,
        "tolerations": [],
    }


# What a worker group's pods need from the node they run on, by the kind of its target.
_WORKERS: dict[str, Callable[[Any, RenderContext, bool], dict]] = {
    "slice": _tpu_worker,
    "gpu_pool": _gpu_worker,
    "cpu_pool": _cpu_worker,
}


def _worker_group(
    group, targets: Mapping[str, Mapping], obj: RayObjectConfig, ctx: RenderContext, declare_replicas: bool = True
) -> dict:
    """One worker group: a pod per host of its slice, or a pod per node of its GPU or CPU pool."""
    kind, name = group.target
    annotations, volumes, mounts = _gcs_fuse(ctx, obj)
    worker = _WORKERS[kind](targets[kind][name], ctx, bool(mounts))
    resources = worker["resources"]
    container: dict[str, Any] = {"name": "ray-worker", "image": obj.image}
    env = list(worker["env"])
    if kind == "slice":  # the group's shape, which the workloads read (workload/slice.py)
        env += multislice.slice_env(targets[kind][name], max(1, multislice.slices(obj, group)))
    env += llm.container_env(obj, on_slice=kind == "slice")  # an LLM service's token and compile cache
    cache_volumes, cache_mounts = llm.cache_volume(obj, on_slice=kind == "slice")
    volumes, mounts = volumes + cache_volumes, mounts + cache_mounts
    if mounts and kind in ("slice", "gpu_pool") and getattr(obj, "llm", None) is None:  # vLLM keeps its own cache
        # One compilation cache policy for TPU and GPU workers alike, so that a second run favours neither side
        # (JAX hashes the platform into each cache key, so both can share the directory: jax 0.10.2
        # jax/_src/cache_key.py get, "backend version").
        env.append({"name": "JAX_COMPILATION_CACHE_DIR", "value": f"{GCS_MOUNT}/xla-cache"})
    if env:
        container["env"] = env
    container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
    if worker["ports"]:
        container["ports"] = worker["ports"]
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"serviceAccountName": ctx.service_account}
    if worker["selector"]:
        spec["nodeSelector"] = worker["selector"]
    if worker["tolerations"]:
        spec["tolerations"] = worker["tolerations"]
    spec["containers"] = [container]
    if volumes:
        spec["volumes"] = volumes
    grace = multislice.grace_period(obj, group)  # longer than Ray's drain on SIGTERM (admission.RAY_DRAIN_GRACE)
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    template: dict[str, Any] = {"spec": spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    declared = {"replicas": group.replicas} if declare_replicas else {}
    return {
        "groupName": group.name,
        **declared,
        "minReplicas": group.min_replicas,
        "maxReplicas": group.max,
        "numOfHosts": worker["hosts"],
        "rayStartParams": {},
        "template": template,
    }


def ray_cluster_spec(
    obj: RayObjectConfig, targets: Mapping[str, Mapping], ctx: RenderContext, declare_replicas: bool = True
) -> dict:
    """`targets`: what worker groups run on, by kind ("slice", "gpu_pool", "cpu_pool") and name
    (`StackConfig.targets`); `declare_replicas` false leaves each group's `replicas` to Ray's autoscaler."""
    spec: dict[str, Any] = {
        "rayVersion": obj.ray_version,
        "headGroupSpec": _head_group(obj, ctx, targets.get("slice", {})),
        "workerGroupSpecs": [_worker_group(g, targets, obj, ctx, declare_replicas) for g in obj.worker_groups],
    }
    if obj.autoscaling.enabled:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"idleTimeoutSeconds": obj.autoscaling.idle_timeout_seconds}
    return spec


# Status fields that say a Ray object is ready, for Pulumi's `pulumi.com/waitFor`.
_READY = {
    # Creation waits for the first ready state (KubeRay sets it once; the slice check reads the HeadPodReady condition
    # for what happens later, workload/slice_checks.py READY_CONDITIONS).
    "RayCluster": "jsonpath={.status.state}=ready",
    "RayService": "jsonpath={.status.serviceStatus}=Running",
    "RayJob": "jsonpath={.status.jobDeploymentStatus}=Running",
}


def kind_of(obj: RayObjectConfig) -> str:
    if isinstance(obj, RayServiceConfig):
        return "RayService"
    if isinstance(obj, RayJobConfig):
        return "RayJob"
    return "RayCluster"


# Who owns an autoscaled RayCluster's worker groups (admission rule ray-autoscaler-owns-replicas; docs/operations.md,
# "What an update does to a scaled cluster").
# Ray's autoscaler resizes a group with a JSON patch of the RayCluster's /spec/workerGroupSpecs/<i>/replicas and
# /scaleStrategy (ray 2.55.0 autoscaler/_private/kuberay/node_provider.py worker_replica_patch, worker_delete_patch;
# v2: autoscaler/v2/instance_manager/cloud_providers/kuberay/cloud_provider.py). The CRD declares no list type on
# workerGroupSpecs (KubeRay v1.7.0 ray.io_rayclusters.yaml), so server-side apply treats the list as atomic
# (Kubernetes "Server-Side Apply", custom resources) and the patch makes the autoscaler its owner. So Pulumi does
# not declare `replicas` there: the CRD defaults it to 0, KubeRay starts the group at minReplicas
# (utils.GetWorkerGroupDesiredReplicas) and deletes no worker for a lower count while autoscaling is on
# (raycluster_controller.go reconcilePods: random Pod deletion is off); a refresh keeps only the fields Pulumi
# declared (pulumi-kubernetes provider.go pruneLiveState), so the drift check never sees the autoscaler's count.
# And Pulumi's apply takes the list back with force instead of failing with a field conflict (pulumi-kubernetes
# await.go patchForce reads this annotation).
PATCH_FORCE = "pulumi.com/patchForce"


def autoscaler_owns_replicas(obj: RayObjectConfig) -> bool:
    """A RayCluster with Ray autoscaling: the autoscaler patches this very object. A RayService's or RayJob's
    cluster is a RayCluster KubeRay makes and owns; the autoscaler patches that one, never the object Pulumi applies
    (node_provider.py `_submit_raycluster_patch`: rayclusters/<its cluster>)."""
    return kind_of(obj) == "RayCluster" and obj.autoscaling.enabled


def group_replicas(group: Mapping) -> int:
    """The worker count KubeRay starts a rendered group at: its `replicas`, or where the autoscaler owns them, the
    CRD's default 0 raised to minReplicas (KubeRay v1.7.0 utils.GetWorkerGroupDesiredReplicas)."""
    return int(group["replicas"]) if "replicas" in group else int(group.get("minReplicas", 0))


def ray_manifest(obj: RayObjectConfig, targets: Mapping[str, Mapping], ctx: RenderContext) -> dict:
    """The whole KubeRay object (apiVersion, kind, metadata, spec) for a RayCluster, RayService or RayJob."""
    kind = kind_of(obj)
    declare = not autoscaler_owns_replicas(obj)
    cluster_spec = None if getattr(obj, "cluster", None) else ray_cluster_spec(obj, targets, ctx, declare)
    spec: Optional[dict[str, Any]]
    if isinstance(obj, RayServiceConfig):
        mounted = (ctx.bucket, GCS_MOUNT) if obj.gcs_fuse and ctx.bucket else None
        serve = obj.serve_config if obj.llm is None else llm.serve_config(obj, targets, mounted)
        spec = {
            "serveConfigV2": yaml.safe_dump(serve, sort_keys=True),
            "upgradeStrategy": {"type": obj.upgrade_strategy},
            "rayClusterConfig": cluster_spec,
        }
    elif isinstance(obj, RayJobConfig):
        spec = {
            "entrypoint": obj.entrypoint,
            "submissionMode": obj.submission_mode,
            # A job on an existing RayCluster never shuts that cluster down.
            "shutdownAfterJobFinishes": obj.shutdown_after_job_finishes and obj.cluster is None,
        }
        if obj.suspend:
            spec["suspend"] = True  # KubeRay creates no RayCluster while it is set (rayjob_types.go RayJobSpec.Suspend)
        if obj.runtime_env is not None:
            spec["runtimeEnvYAML"] = yaml.safe_dump(obj.runtime_env, sort_keys=True)
        if obj.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = obj.ttl_seconds_after_finished
        if obj.active_deadline_seconds is not None:
            spec["activeDeadlineSeconds"] = obj.active_deadline_seconds
        if obj.cluster is not None:
            # KubeRay RayJob clusterSelector: the job is submitted to the RayCluster labelled ray.io/cluster=<name>.
            spec["clusterSelector"] = {"ray.io/cluster": obj.cluster}
        else:
            spec["rayClusterSpec"] = cluster_spec
    else:
        spec = cluster_spec
    metadata: dict[str, Any] = {
        "name": obj.name,
        "namespace": obj.namespace,
        "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "ray-tpu-gke", **ctx.labels},
    }
    if obj.wait_for_ready:
        metadata["annotations"] = {"pulumi.com/waitFor": _READY[kind]}
    else:
        metadata["annotations"] = {"pulumi.com/skipAwait": "true"}
    if not declare:
        metadata["annotations"][PATCH_FORCE] = "true"
    multislice_note = multislice.annotation(obj, targets.get("slice", {}))
    if multislice_note:
        metadata["annotations"][multislice.ANNOTATION] = multislice_note
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


def tpu_worker_groups(manifest: dict) -> list[dict]:
    """The worker groups of any KubeRay object, wherever its kind keeps the cluster spec."""
    spec = manifest.get("spec", {})
    cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec
    return cluster.get("workerGroupSpecs", [])


def label_problems(manifest: dict) -> list[str]:
    """Node selectors and labels of every pod template of a KubeRay object that Kubernetes would refuse."""
    spec = manifest.get("spec", {})
    cluster = spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or (spec if "headGroupSpec" in spec else {})
    groups = ([cluster["headGroupSpec"]] if "headGroupSpec" in cluster else []) + cluster.get("workerGroupSpecs", [])
    problems = admission.pod_label_problems({}, manifest.get("metadata", {}).get("labels"))
    for group in groups:
        template = group.get("template", {})
        problems += admission.pod_label_problems(template.get("spec", {}), template.get("metadata", {}).get("labels"))
    return problems
