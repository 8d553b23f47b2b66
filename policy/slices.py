"""What the rules know about TPUs, all of it asked of the catalogue (`ray_tpu_gke.catalog`), none of it repeated.

- TPU node pools are recognised by a catalogue machine type; a pool's slice shape comes from its placement
  (`placementPolicy.tpuTopology`, or the workload policy `placementPolicy.policyName` names), else it is one host.
- TPU worker groups of KubeRay objects are read with `ray_tpu_gke.render.manifests.tpu_worker_groups`.
- A worker group's node selector is matched against the labels a pool's nodes will carry, so rules can tell which
  pools a Ray object runs on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

from ray_tpu_gke import catalog
from ray_tpu_gke.render import manifests

from .view import NODE_POOL, RESOURCE_POLICY, Resource, StackView, is_known, lookup

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
SPOT_LABEL = "cloud.google.com/gke-spot"
PREEMPTIBLE_LABEL = "cloud.google.com/gke-preemptible"
FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
ZONE_LABEL = "topology.kubernetes.io/zone"
# Labels GKE puts on nodes that a pool's inputs fully determine: a node lacking one does not have it.
DERIVED_LABELS = (catalog.TOPOLOGY_LABEL, SPOT_LABEL, PREEMPTIBLE_LABEL, FLEX_START_LABEL, NODEPOOL_LABEL)
ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")

# machine type name -> (generation, machine type), and accelerator label value -> generation, from the catalogue
MACHINE_TYPES: dict[str, tuple[catalog.Generation, catalog.MachineType]] = {
    m.name: (g, m) for g in catalog.GENERATIONS.values() for m in g.machine_types
}
ACCELERATORS: dict[str, catalog.Generation] = {g.accelerator: g for g in catalog.GENERATIONS.values()}


def host_topology(machine: catalog.MachineType) -> str:
    return "x".join(str(d) for d in machine.host_topology)


def is_tpu_pool(resource: Resource) -> bool:
    return resource.type == NODE_POOL and resource.get("nodeConfig.machineType") in MACHINE_TYPES


def is_zone(location: Any) -> bool:
    return isinstance(location, str) and bool(ZONE.match(location))


@dataclass
class TpuPool:
    """A TPU node pool with the slice shape its placement gives it."""

    resource: Resource
    generation: catalog.Generation
    machine: catalog.MachineType
    topology: str | None  # None: not known (an unknown input, or a workload policy outside the stack)
    source: str  # where the topology comes from, for messages
    shape: catalog.SliceShape | None
    error: str | None  # why the placement gives no valid shape

    @property
    def name(self) -> str:
        return self.resource.name

    @property
    def placed(self) -> bool:
        """Whether the pool has a placement (topology or workload policy), i.e. GKE builds one multi-host slice."""
        placement = self.resource.get("placementPolicy") or {}
        return bool(placement.get("tpuTopology") or placement.get("policyName"))

    @property
    def slice_name(self) -> str | None:
        return self.resource.get(f"nodeConfig.labels.{manifests.SLICE_LABEL}")

    @property
    def own_labels(self) -> dict[str, Any]:
        labels = self.resource.get("nodeConfig.labels")
        return dict(labels) if isinstance(labels, Mapping) else {}

    @property
    def spot(self) -> bool:
        return self.resource.get("nodeConfig.spot") is True

    @property
    def preemptible(self) -> bool:
        return self.resource.get("nodeConfig.preemptible") is True

    @property
    def flex_start(self) -> bool:
        return self.resource.get("nodeConfig.flexStart") is True

    @property
    def describe(self) -> str:
        if self.shape is not None:
            return f"{self.generation.name} {self.shape.topology} ({self.shape.hosts} x {self.machine.name})"
        return f"{self.generation.name} on {self.machine.name}"

    @cached_property
    def node_labels(self) -> dict[str, str]:
        """The labels every node of the pool carries: its own, and those GKE adds that the inputs determine."""
        labels = self.own_labels
        name = self.resource.get("name") or self.resource.name
        labels[NODEPOOL_LABEL] = name
        labels[catalog.ACCELERATOR_LABEL] = self.generation.accelerator
        if self.topology:
            labels[catalog.TOPOLOGY_LABEL] = self.topology
        if self.spot:
            labels[SPOT_LABEL] = "true"
        if self.preemptible:
            labels[PREEMPTIBLE_LABEL] = "true"
        if self.flex_start:
            labels[FLEX_START_LABEL] = "true"
        zones = self.resource.get("nodeLocations")
        if isinstance(zones, list) and len(zones) == 1 and is_known(zones[0]):
            labels[ZONE_LABEL] = zones[0]
        elif is_zone(self.resource.get("location")):
            labels[ZONE_LABEL] = self.resource.get("location")
        return labels

    def selected_by(self, selector: Mapping[str, Any], ignore: tuple[str, ...] = ()) -> bool:
        """Whether a pod with this node selector can land on the pool's nodes.

        A key the pool's labels lack rules it out, unless it is a GKE or Kubernetes label these inputs cannot
        determine (reservation, compute class ...): then the pool is given the benefit of the doubt.
        """
        labels = self.node_labels
        for key, value in selector.items():
            if key in ignore or not is_known(value) or (key == catalog.TOPOLOGY_LABEL and self.topology is None):
                continue
            if key in labels:
                if str(labels[key]) != str(value):
                    return False
            elif key in DERIVED_LABELS or not (key.startswith("cloud.google.com/") or "kubernetes.io/" in key):
                return False
        return True

    def pinned_by(self, selector: Mapping[str, Any]) -> bool:
        """Whether a selector means this pool in particular: it names one of the pool's own labels (its slice,
        its name) and matches everything else but the topology."""
        own = set(self.own_labels) | {NODEPOOL_LABEL}
        return bool(own & set(selector)) and self.selected_by(selector, ignore=(catalog.TOPOLOGY_LABEL,))


def workload_policy(view: StackView | None, policy_name: str) -> Resource | None:
    """The resource policy a pool's `placementPolicy.policyName` names (by its name, or a self link ending in it)."""
    if view is None:
        return None
    for r in view.of_type(RESOURCE_POLICY):
        name = r.get("name") or r.name
        if is_known(name) and (policy_name == name or policy_name.endswith(f"/resourcePolicies/{name}")):
            return r
    return None


def tpu_pool(resource: Resource, view: StackView | None = None) -> TpuPool | None:
    """The TPU view of a node pool, or None when its machine type is not a TPU of the catalogue."""
    if not is_tpu_pool(resource):
        return None
    generation, machine = MACHINE_TYPES[resource.get("nodeConfig.machineType")]
    placement = resource.get("placementPolicy") or {}
    topology, source, error = None, "", None
    if not is_known(placement):
        source = "an unknown placementPolicy"
    elif placement.get("tpuTopology"):
        topology, source = placement["tpuTopology"], "placementPolicy.tpuTopology"
    elif placement.get("policyName"):
        name = placement["policyName"]
        policy = workload_policy(view, name) if is_known(name) else None
        if policy is not None:
            topology = policy.get("workloadPolicy.acceleratorTopology")
            source = f"workload policy {policy.name}"
            if not topology:
                error = f"workload policy {policy.name} sets no workloadPolicy.acceleratorTopology"
        else:
            source = f"placementPolicy.policyName {name}"
    else:
        topology, source = host_topology(machine), "a single host (no placement policy)"
    if not is_known(topology):
        topology = None
    shape = None
    if topology is not None:
        try:
            shape = catalog.resolve(generation.name, topology, machine.name)
        except catalog.CatalogError as problem:
            error = f"{topology} from {source}: {problem}"
    return TpuPool(resource, generation, machine, topology, source, shape, error)


def tpu_pools(view: StackView) -> list[TpuPool]:
    return [p for p in (tpu_pool(r, view) for r in view.node_pools) if p is not None]


def compute_classes(view: StackView) -> dict[str, Resource]:
    """The custom ComputeClasses of the stack (GKE's `cloud.google.com/v1` kind), by name."""
    return {
        (r.get("metadata.name") or r.name): r
        for r in view.resources
        if r.type.startswith("kubernetes:cloud.google.com/") and r.kind == "ComputeClass"
    }


def flex_start_class(compute_class: Resource) -> bool:
    """Whether a ComputeClass provisions flex-start VMs."""
    priorities = compute_class.get("spec.priorities") or []
    return any(
        isinstance(p, Mapping) and (p.get("flexStart") or {}).get("enabled") is True for p in priorities if is_known(p)
    )


# --- KubeRay worker groups -------------------------------------------------------------------------------------------


def _quantity(resources: Any, key: str) -> Any:
    return resources.get(key) if isinstance(resources, Mapping) else None


def whole_number(value: Any) -> int | None:
    """A Kubernetes quantity as a whole number of chips, or None when it is not one ("0.5", "500m", 1.5)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


@dataclass
class WorkerGroup:
    """One worker group of a KubeRay object, with what the TPU rules read from it."""

    owner: Resource
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("groupName", "?"))

    @property
    def label(self) -> str:
        return f"worker group {self.name}"

    @property
    def pod_spec(self) -> Mapping[str, Any]:
        spec = lookup(self.spec, "template.spec", {})
        return spec if isinstance(spec, Mapping) else {}

    @property
    def node_selector(self) -> Mapping[str, Any]:
        selector = self.pod_spec.get("nodeSelector") or {}
        return selector if isinstance(selector, Mapping) else {}

    @property
    def containers(self) -> list[Mapping[str, Any]]:
        return [c for c in self.pod_spec.get("containers") or [] if isinstance(c, Mapping)]

    def tpu_quantities(self, kind: str) -> list[tuple[str, Any]]:
        """(container name, google.com/tpu) of every container that asks for TPU chips in `requests` or `limits`."""
        out = []
        for c in self.containers:
            value = _quantity(lookup(c, f"resources.{kind}"), catalog.TPU_RESOURCE)
            if value is not None:
                out.append((str(c.get("name", "?")), value))
        return out

    @property
    def is_tpu(self) -> bool:
        selector = self.node_selector
        return bool(
            self.tpu_quantities("limits")
            or self.tpu_quantities("requests")
            or catalog.ACCELERATOR_LABEL in selector
            or catalog.TOPOLOGY_LABEL in selector
        )

    @property
    def generation(self) -> catalog.Generation | None:
        return ACCELERATORS.get(self.node_selector.get(catalog.ACCELERATOR_LABEL))

    @property
    def topology(self) -> str | None:
        value = self.node_selector.get(catalog.TOPOLOGY_LABEL)
        return value if isinstance(value, str) and is_known(value) else None

    @property
    def known(self) -> bool:
        """Whether the TPU selectors are known (always, but in a preview of values computed elsewhere)."""
        return all(
            is_known(self.node_selector.get(k))
            for k in (catalog.ACCELERATOR_LABEL, catalog.TOPOLOGY_LABEL)
            if k in self.node_selector
        )

    @property
    def shape_error(self) -> str | None:
        """Why the selectors give no slice shape of the catalogue, or None when they do (or are not known)."""
        selector = self.node_selector
        accelerator = selector.get(catalog.ACCELERATOR_LABEL)
        if not self.known:
            return None
        missing = [k for k in (catalog.ACCELERATOR_LABEL, catalog.TOPOLOGY_LABEL) if k not in selector]
        if missing:
            return f"nodeSelector lacks {' and '.join(missing)}"
        if self.generation is None:
            return (
                f"nodeSelector {catalog.ACCELERATOR_LABEL}: {accelerator} is no TPU generation; allowed: "
                f"{', '.join(ACCELERATORS)}"
            )
        try:
            catalog.resolve(self.generation.name, str(self.topology))
        except catalog.CatalogError as problem:
            return f"nodeSelector {catalog.TOPOLOGY_LABEL}: {self.topology}: {problem}"
        return None

    @property
    def shape(self) -> catalog.SliceShape | None:
        """The slice the selectors ask for, in its default layout; None when they name none (or are not known)."""
        if not self.known or self.shape_error is not None:
            return None
        return catalog.resolve(self.generation.name, self.topology)

    @property
    def chips(self) -> int | None:
        """Chips of the slice the selectors ask for (the catalogue's topology arithmetic)."""
        return self.shape.chips if self.shape is not None else None

    @property
    def chips_per_host(self) -> int | None:
        """google.com/tpu per pod (limits, else requests), summed over containers; None if not a whole number."""
        values = self.tpu_quantities("limits") or self.tpu_quantities("requests")
        if not values:
            return None
        numbers = [whole_number(v) for _, v in values]
        return None if any(n is None for n in numbers) else sum(numbers)

    @property
    def host_sizes(self) -> tuple[int, ...]:
        """Chips per host of every machine type that lays out the selected shape."""
        if self.shape is None:
            return ()
        return tuple(m.chips for m in catalog.layouts(self.generation, self.topology))

    def pools(self, pools: list[TpuPool], ignore: tuple[str, ...] = ()) -> list[TpuPool]:
        """The TPU pools this group's pods can land on."""
        return [p for p in pools if p.selected_by(self.node_selector, ignore)]


def _group_specs(resource: Resource) -> list | None:
    """The workerGroupSpecs of a KubeRay object, wherever its kind keeps the cluster spec; None if not known."""
    spec = resource.get("spec")
    if not isinstance(spec, Mapping):
        return None
    try:
        specs = manifests.tpu_worker_groups({"spec": spec})
    except AttributeError:  # a part of the spec not known during a preview
        return None
    return specs if isinstance(specs, list) else None


def groups_known(resource: Resource) -> bool:
    return _group_specs(resource) is not None


def worker_groups(resource: Resource) -> list[WorkerGroup]:
    """Every worker group of a KubeRay object (none where they are not known yet)."""
    if not resource.is_ray_object:
        return []
    return [WorkerGroup(resource, g) for g in _group_specs(resource) or [] if isinstance(g, Mapping)]


def tpu_worker_groups(resource: Resource) -> list[WorkerGroup]:
    return [g for g in worker_groups(resource) if g.is_tpu]


def ray_label(resource: Resource) -> str:
    """`RayCluster training/train`."""
    namespace = resource.get("metadata.namespace")
    name = resource.get("metadata.name") or resource.name
    return f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}"
