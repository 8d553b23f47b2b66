"""TPU invariants: what the GKE TPU webhook, the scheduler and ICI need, checked against the catalogue."""

from __future__ import annotations

from ray_tpu_gke import admission, catalog
from ray_tpu_gke.render import manifests

from .. import slices
from ..view import CLUSTER, Resource, StackView, is_known
from .base import MANDATORY, Findings, Messages, resource_rule, stack_rule

RAY = ("ray",)


@resource_rule(
    "tpu-node-selectors",
    MANDATORY,
    "Every TPU worker group selects a TPU generation and a topology of the catalogue.",
    "The TPU webhook rejects a TPU group without the topology selector, and without both selectors GKE cannot "
    "place the pods on a slice of the intended shape.",
    types=RAY,
)
def node_selectors(resource: Resource) -> Messages:
    for group in slices.tpu_worker_groups(resource):
        if group.shape_error:
            yield f"{slices.ray_label(resource)} {group.label}: {group.shape_error}"


@resource_rule(
    "tpu-whole-chips",
    MANDATORY,
    "Every TPU worker pod requests whole TPU hosts: google.com/tpu is a host's full chip count.",
    "A TPU host is never shared: a fractional or partial google.com/tpu cannot be scheduled on a TPU VM, and "
    "KubeRay derives Ray's TPU resource from this limit.",
    types=RAY,
)
def whole_chips(resource: Resource) -> Messages:
    for group in slices.tpu_worker_groups(resource):
        where = f"{slices.ray_label(resource)} {group.label}"
        values = group.tpu_quantities("limits") or group.tpu_quantities("requests")
        if not values:
            yield f"{where}: no container requests {catalog.TPU_RESOURCE}"
            continue
        fractional = [(c, v) for c, v in values if slices.whole_number(v) is None or slices.whole_number(v) < 1]
        for container, value in fractional:
            yield (
                f"{where}: container {container} asks for {catalog.TPU_RESOURCE}: {value!r}; TPU chips are "
                "whole, positive numbers"
            )
        per_host = group.chips_per_host
        sizes = group.host_sizes
        if not fractional and per_host is not None and sizes and per_host not in sizes:
            yield (
                f"{where}: {catalog.TPU_RESOURCE} is {per_host} per pod, but a {group.generation.name} "
                f"{group.topology} host has {' or '.join(map(str, sorted(set(sizes))))} chips; a pod takes a "
                "whole host"
            )


@resource_rule(
    "tpu-requests-equal-limits",
    MANDATORY,
    "Every TPU worker container requests exactly its google.com/tpu limit.",
    "Kubernetes rejects an extended resource whose request differs from its limit, and a missing limit leaves "
    "KubeRay without the chip count it gives Ray.",
    types=RAY,
)
def requests_equal_limits(resource: Resource) -> Messages:
    for group in slices.tpu_worker_groups(resource):
        limits = dict(group.tpu_quantities("limits"))
        requests = dict(group.tpu_quantities("requests"))
        for container in sorted(set(limits) | set(requests)):
            limit, request = limits.get(container), requests.get(container)
            if limit is None or request is None or str(limit) != str(request):
                yield (
                    f"{slices.ray_label(resource)} {group.label}: container {container} requests "
                    f"{catalog.TPU_RESOURCE}: {_show(request)} with limit {_show(limit)}; both must be set "
                    "and equal"
                )


def _show(value) -> str:
    return "none" if value is None else repr(value)


@resource_rule(
    "tpu-webhook-num-of-hosts",
    MANDATORY,
    "Every TPU worker group sets numOfHosts = chips of its topology / google.com/tpu per host.",
    "The GKE TPU webhook rejects the Ray object otherwise; a slice is only usable when one Ray worker runs on "
    "each of its hosts.",
    types=RAY,
)
def num_of_hosts(resource: Resource) -> Messages:
    for group in slices.tpu_worker_groups(resource):
        chips, per_host = group.chips, group.chips_per_host
        if chips is None or not per_host:
            continue  # reported by tpu-node-selectors / tpu-whole-chips
        where = f"{slices.ray_label(resource)} {group.label}"
        hosts = group.spec.get("numOfHosts", 1)
        if chips % per_host:
            yield (
                f"{where}: {group.generation.name} {group.topology} has {chips} chips, which "
                f"{catalog.TPU_RESOURCE}: {per_host} per host does not divide"
            )
        elif hosts != chips // per_host:
            yield (
                f"{where}: numOfHosts is {hosts}, but {group.generation.name} {group.topology} is {chips} chips "
                f"at {per_host} per host: numOfHosts must be {chips // per_host}"
            )


@stack_rule(
    "tpu-multihost-placement",
    MANDATORY,
    "Every multi-host TPU node pool is one slice: COMPACT placement with its topology (or a workload policy).",
    "Without placement GKE creates independent single-host VMs, not one slice joined by ICI; the topology must "
    "be one the catalogue lays out on the pool's machine type.",
)
def multihost_placement(view: StackView) -> Findings:
    pools = slices.tpu_pools(view)
    ray_groups = [g for r in view.ray_objects for g in slices.tpu_worker_groups(r)]
    for pool in pools:
        r = pool.resource
        placement = r.get("placementPolicy") or {}
        if not is_known(placement):
            continue
        if pool.error:
            yield r, f"node pool {pool.name}: {pool.error}"
            continue
        if pool.placed:
            if placement.get("type") != "COMPACT":
                yield (
                    r,
                    (
                        f"node pool {pool.name}: placementPolicy.type is {placement.get('type')!r}; a multi-host "
                        "TPU slice needs COMPACT"
                    ),
                )
            name = placement.get("policyName")
            if name and is_known(name) and not placement.get("tpuTopology"):
                policy = slices.workload_policy(view, name)
                if policy is None:
                    yield (
                        r,
                        (
                            f"node pool {pool.name}: placementPolicy.policyName {name} names no "
                            "gcp:compute/resourcePolicy:ResourcePolicy of this stack, so the slice's topology "
                            "cannot be checked"
                        ),
                    )
                elif policy.get("workloadPolicy.type") != "HIGH_THROUGHPUT":
                    yield (
                        r,
                        (
                            f"node pool {pool.name}: workload policy {policy.name} has workloadPolicy.type "
                            f"{policy.get('workloadPolicy.type')!r}; TPU slices need HIGH_THROUGHPUT"
                        ),
                    )
        yield from _expected_topologies(pool, ray_groups)


def _expected_topologies(pool: slices.TpuPool, ray_groups: list[slices.WorkerGroup]) -> Findings:
    """Worker groups pinned to the pool (by its own labels) that expect another slice shape than it has."""
    if pool.topology is None:
        return
    expected: dict[str, list[str]] = {}
    for g in ray_groups:
        if g.topology and g.topology != pool.topology and pool.pinned_by(g.node_selector):
            expected.setdefault(g.topology, []).append(f"{slices.ray_label(g.owner)} {g.label}")
    for topology, names in sorted(expected.items()):
        who = ", ".join(sorted(names))
        if pool.placed:
            yield (
                pool.resource,
                (
                    f"node pool {pool.name}: {who} expect a {pool.generation.name} {topology} slice, "
                    f"but {pool.source} makes the pool a {pool.topology} slice"
                ),
            )
            continue
        try:
            shape = catalog.resolve(pool.generation.name, topology, pool.machine.name)
        except catalog.CatalogError as problem:
            yield (
                pool.resource,
                (
                    f"node pool {pool.name}: {who} expect a {pool.generation.name} {topology} slice, "
                    f"which {pool.machine.name} hosts cannot form: {problem}"
                ),
            )
            continue
        yield (
            pool.resource,
            (
                f"node pool {pool.name}: {who} expect a {pool.generation.name} {topology} slice "
                f"({shape.hosts} hosts of {pool.machine.name}), but the pool has no placementPolicy, "
                f"so its nodes are separate {pool.topology} single-host slices; set "
                f"placementPolicy.type COMPACT and tpuTopology {topology}"
            ),
        )


def node_bounds(resource: Resource) -> tuple[str, object, object]:
    """(what, lowest, highest) node count of a pool, from autoscaling when it has any, else from nodeCount."""
    autoscaling = resource.get("autoscaling")
    if isinstance(autoscaling, dict) and autoscaling:
        high = autoscaling.get("maxNodeCount", autoscaling.get("totalMaxNodeCount"))
        low = autoscaling.get("minNodeCount", autoscaling.get("totalMinNodeCount", 0))
        return "autoscaling", low, high
    count = resource.get("nodeCount", resource.get("initialNodeCount"))
    return "nodeCount", count, count


@stack_rule(
    "tpu-pool-node-count",
    MANDATORY,
    "Every multi-host TPU node pool has exactly its slice's hosts, in one zone.",
    "A multi-host slice exists only whole: fewer nodes never become ready, more cannot be placed; autoscaling "
    "goes from 0 to all hosts at once, and node counts are per zone.",
)
def pool_node_count(view: StackView) -> Findings:
    for pool in slices.tpu_pools(view):
        if pool.shape is None or not pool.shape.multi_host:
            continue
        r, hosts = pool.resource, pool.shape.hosts
        what, low, high = node_bounds(r)
        if not all(is_known(v) for v in (low, high)):
            continue
        shape = f"{pool.generation.name} {pool.shape.topology} from {pool.source}"
        if what == "autoscaling":
            if high != hosts:
                yield (
                    r,
                    (
                        f"node pool {pool.name}: autoscaling allows up to {high} nodes, but a {shape} slice has "
                        f"{hosts} hosts: maxNodeCount must be {hosts}"
                    ),
                )
            if low not in (0, hosts):
                yield (
                    r,
                    (
                        f"node pool {pool.name}: autoscaling minimum is {low}; a {shape} slice is either absent "
                        f"(0) or whole ({hosts})"
                    ),
                )
        elif high != hosts:
            yield (
                r,
                (
                    f"node pool {pool.name}: nodeCount is {high}, but a {shape} slice has {hosts} hosts: "
                    f"nodeCount must be {hosts}"
                ),
            )
        zones = r.get("nodeLocations") or []
        location = r.get("location")
        if is_known(zones) and len(zones) != 1 and is_known(location) and not slices.is_zone(location):
            yield (
                r,
                (
                    f"node pool {pool.name}: in region {location} it must name exactly one zone in "
                    f"nodeLocations (a slice is zonal, and node counts repeat per zone); it names "
                    f"{len(zones)}"
                ),
            )


@stack_rule(
    "ray-after-cluster",
    MANDATORY,
    "Every KubeRay object depends on the GKE cluster and on the TPU node pools or ComputeClass it runs on.",
    "Created before them, the Ray object meets no KubeRay CRDs or TPU webhook (the add-on is not up yet) and "
    "its pods wait for nodes that are not there.",
)
def ray_after_cluster(view: StackView) -> Findings:
    clusters = {c.urn for c in view.of_type(CLUSTER)}
    pools = slices.tpu_pools(view)
    classes = slices.compute_classes(view)
    if not clusters:
        return
    for r in view.ray_objects:
        label = slices.ray_label(r)
        if not clusters & set(r.dependencies):
            names = ", ".join(sorted(view.by_urn[u].name for u in clusters))
            yield r, f"{label} does not depend on the GKE cluster {names}"
        needed = {}
        for group in slices.tpu_worker_groups(r):
            for pool in group.pools(pools):
                needed.setdefault(pool.resource.urn, (pool, group))
        for urn, (pool, group) in needed.items():
            if urn not in r.dependencies:
                yield r, f"{label} {group.label} runs on node pool {pool.name} but does not depend on it"
        for group in slices.tpu_worker_groups(r):
            compute_class = classes.get(group.node_selector.get(slices.COMPUTE_CLASS_LABEL))
            if compute_class is not None and compute_class.urn not in r.dependencies:
                yield r, (f"{label} {group.label} selects ComputeClass {compute_class.name} but does not depend on it")


CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
KUBERAY_OPERATOR = "kuberay-operator"


def _kuberay_install(r: Resource) -> str | None:
    if r.type == CRD:
        name, group = r.get("metadata.name"), r.get("spec.group")
        if (isinstance(name, str) and name.endswith(".ray.io")) or group == "ray.io":
            return f"CustomResourceDefinition {name}"
    if r.type.startswith("kubernetes:helm.sh/"):
        chart = r.get("chart")
        if isinstance(chart, str) and chart.rstrip("/").split("/")[-1].split(":")[0] == KUBERAY_OPERATOR:
            return f"Helm chart {chart}"
    if r.type == "kubernetes:apps/v1:Deployment" and r.get("metadata.name") == KUBERAY_OPERATOR:
        return f"Deployment {KUBERAY_OPERATOR}"
    return None


@stack_rule(
    "no-kuberay-beside-addon",
    MANDATORY,
    "No KubeRay CRD or operator is installed in a cluster that runs the GKE Ray Operator add-on.",
    "The add-on serves the KubeRay CRDs and runs the operator and the TPU webhook; a second copy fights it over "
    "the same objects and CRD versions.",
)
def no_kuberay_beside_addon(view: StackView) -> Findings:
    addon = [
        c
        for c in view.clusters
        if any(
            isinstance(x, dict) and x.get("enabled") is True
            for x in (c.get("addonsConfig.rayOperatorConfigs") or [])
            if is_known(x)
        )
    ]
    if not addon:
        return
    names = ", ".join(c.name for c in addon)
    for r in view.resources:
        what = _kuberay_install(r)
        if what:
            yield r, f"{what} installs KubeRay beside the Ray Operator add-on of cluster {names}; remove it"


@resource_rule(
    "k8s-label-values",
    MANDATORY,
    "Every node selector and label of a Ray object's pods is a valid Kubernetes label key and value.",
    "The API server refuses a pod whose node selector value holds a '/' or more than 63 characters (a shared "
    "reservation's full path, say), so the group never gets a pod (admission rule k8s-label-value).",
    types=RAY,
)
def label_values(resource: Resource) -> Messages:
    def known(value):  # values a preview does not know yet are judged when they are
        if isinstance(value, dict):
            return {k: known(v) for k, v in value.items() if is_known(v)}
        if isinstance(value, list):
            return [known(v) for v in value if is_known(v)]
        return value

    manifest = known({"metadata": resource.props.get("metadata") or {}, "spec": resource.props.get("spec") or {}})
    for problem in manifests.label_problems(manifest):
        yield f"{slices.ray_label(resource)}: {problem}"


@resource_rule(
    "tpu-pod-fits-host",
    MANDATORY,
    "Every TPU worker pod requests no more CPU and memory than its TPU host allocates to pods.",
    "A pod larger than what the node allocates (capacity less GKE's reservations, eviction threshold and DaemonSets) "
    "never schedules, and the slice's chips sit idle (admission rules gke-node-allocatable, pod-fits-node).",
    types=RAY,
)
def pod_fits_host(resource: Resource) -> Messages:
    for group in slices.tpu_worker_groups(resource):
        if group.shape is None or group.chips_per_host is None:
            continue  # tpu-node-selectors / tpu-whole-chips report it
        hosts = [m for m in catalog.layouts(group.generation, group.topology) if m.chips == group.chips_per_host]
        if not hosts:
            continue
        gcs = "gke-gcsfuse/volumes" in str(group.spec.get("template", {}).get("metadata", {}))
        cpu, memory = admission.pod_requests(group.pod_spec, [admission.GCS_FUSE_SIDECAR] * gcs)
        free_cpu, free_memory = admission.allocatable(hosts[0].vcpus, hosts[0].memory_gib)
        if cpu > free_cpu or memory > free_memory:
            yield (
                f"{slices.ray_label(resource)} {group.label}: requests {cpu:g} CPU and {memory:.1f} GiB with its "
                f"sidecars; a {hosts[0].name} host allocates {free_cpu:.1f} CPU and {free_memory:.1f} GiB to pods"
            )
