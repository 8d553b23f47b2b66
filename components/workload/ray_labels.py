"""The Ray labels of a TPU worker group's hosts, checked against the slice the stack declares: hosts per slice,
`ray.io/tpu-worker-id` 0..hosts-1 each once, `ray.io/tpu-topology`, `ray.io/tpu-pod-type`, `ray.io/accelerator-type`
and the TPU chips Ray sees per host. Pure functions over `ray.nodes()`' answer (or the dashboard's state API, read into
that shape by `slice_checks.ray_nodes_of_state_api`): the smoke test (`workloads.tpu_smoke`) runs them on the cluster,
`ray-tpu-gke verify` (`slice_checks.ray_view_checks`) from the deployer's machine.

Where the labels come from (Ray 2.55, ray/_private/accelerators/tpu.py, TPUAcceleratorManager
.get_current_node_accelerator_labels and get_current_node_accelerator_type): each Ray worker pod's environment, which
GKE (TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY) and the Ray Operator add-on's TPU webhook (TPU_NAME = <group>-<replica>,
TPU_WORKER_ID; GoogleCloudPlatform/ai-on-gke ray-on-gke/tpu/kuberay-tpu-webhook/main.go, mutatePod) give it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional

from .slice import SliceSpec

# Ray node label keys (Ray 2.55 ray._raylet RAY_NODE_TPU_*_KEY and RAY_NODE_ACCELERATOR_TYPE_KEY; set by
# ray/_private/resource_and_label_spec.py from the accelerator manager).
SLICE_NAME = "ray.io/tpu-slice-name"  # TPU_NAME: the webhook's <group>-<replica index>
WORKER_ID = "ray.io/tpu-worker-id"  # TPU_WORKER_ID: 0..hosts-1 within the slice
TOPOLOGY = "ray.io/tpu-topology"  # TPU_TOPOLOGY, lower-cased
POD_TYPE = "ray.io/tpu-pod-type"  # TPU_ACCELERATOR_TYPE, e.g. v6e-16 (tpu7x-N read as v7x-N)
ACCELERATOR_TYPE = "ray.io/accelerator-type"  # TPU-<generation>, e.g. TPU-V6E
# Ray's own node group label: KubeRay sets RAY_NODE_TYPE_NAME to the pod's ray.io/group where it sets it
# (ray-operator/controllers/ray/utils/constant.go), and Ray 2.55 turns it into this label.
NODE_GROUP = "ray.io/node-group"

PASS, FAIL, SKIP = "pass", "fail", "skip"
LABEL_CHECKS = ("hosts", "worker-ids", "topology", "pod-type", "accelerator-type", "chips-per-host")


@dataclass
class Check:
    name: str
    status: str  # pass, fail or skip
    detail: str
    slice: Optional[str] = None

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Host:
    """One alive Ray node of a TPU slice, as ray.nodes() describes it."""

    node_id: str
    address: str
    labels: dict[str, str]
    tpus: float

    @classmethod
    def of(cls, node: dict) -> "Host":
        return cls(
            node_id=node.get("NodeID", ""),
            address=node.get("NodeManagerAddress", ""),
            labels=dict(node.get("Labels") or {}),
            tpus=float((node.get("Resources") or {}).get("TPU", 0)),
        )

    @property
    def name(self) -> str:
        return f"{self.node_id[:8]}@{self.address}"


@dataclass
class Observed:
    """The TPU hosts of one worker group, by slice."""

    slices: dict[str, list[Host]] = field(default_factory=dict)
    unnamed: list[Host] = field(default_factory=list)  # TPU hosts of the group that carry no slice name


def belongs(labels: dict[str, str], group: Optional[str]) -> bool:
    if group is None:
        return True
    if labels.get(NODE_GROUP) == group:
        return True
    name = labels.get(SLICE_NAME, "")
    return name.startswith(f"{group}-") and name[len(group) + 1 :].isdigit()


def observe(nodes: Iterable[dict], group: Optional[str]) -> Observed:
    """The alive TPU hosts of `group` (all TPU hosts without one), grouped by their slice name."""
    seen = Observed()
    for node in nodes:
        host = Host.of(node)
        if not node.get("Alive") or (host.tpus <= 0 and SLICE_NAME not in host.labels):
            continue
        if not belongs(host.labels, group):
            continue
        name = host.labels.get(SLICE_NAME)
        if name:
            seen.slices.setdefault(name, []).append(host)
        else:
            seen.unnamed.append(host)
    return seen


def _mismatches(hosts: list[Host], key: str, want: str) -> list[str]:
    return [
        f"{h.name} has {h.labels[key]!r}" if key in h.labels else f"{h.name} has none"
        for h in hosts
        if h.labels.get(key) != want
    ]


def slice_checks(name: str, hosts: list[Host], spec: SliceSpec) -> list[Check]:
    """The label checks of one slice: every one is named, passes or fails."""
    checks = []

    def add(check: str, problems: list[str], ok_detail: str):
        checks.append(Check(check, FAIL if problems else PASS, "; ".join(problems) or ok_detail, name))

    count = len(hosts)
    add("hosts", [] if count == spec.hosts else [f"{count} hosts, expected {spec.hosts}"], f"{count} hosts")
    ids = [h.labels.get(WORKER_ID) for h in hosts]
    want = [str(i) for i in range(spec.hosts)]
    problems = []
    duplicates = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    if duplicates:
        problems.append(f"duplicate {WORKER_ID} {', '.join(duplicates)}")
    missing = [i for i in want if i not in ids]
    if missing:
        problems.append(f"missing {WORKER_ID} {', '.join(missing)}")
    unexpected = sorted({i for i in ids if i is not None and i not in want})
    if unexpected:
        problems.append(f"unexpected {WORKER_ID} {', '.join(unexpected)} (0..{spec.hosts - 1} allowed)")
    unlabelled = [h.name for h in hosts if WORKER_ID not in h.labels]
    if unlabelled:
        problems.append(f"without {WORKER_ID}: {', '.join(unlabelled)}")
    add("worker-ids", problems, f"{WORKER_ID} 0..{spec.hosts - 1}, each once")
    add("topology", _mismatches(hosts, TOPOLOGY, spec.topology), f"{TOPOLOGY} {spec.topology}")
    add("pod-type", _mismatches(hosts, POD_TYPE, spec.pod_type), f"{POD_TYPE} {spec.pod_type}")
    add(
        "accelerator-type",
        _mismatches(hosts, ACCELERATOR_TYPE, spec.accelerator_type),
        f"{ACCELERATOR_TYPE} {spec.accelerator_type}",
    )
    add(
        "chips-per-host",
        [f"{h.name} has {h.tpus:g} TPU" for h in hosts if h.tpus != spec.chips_per_host],
        f"{spec.chips_per_host} TPU per host",
    )
    return checks


def label_checks(observed: Observed, spec: SliceSpec, slices: int) -> tuple[list[Check], list[str]]:
    """Every label check of the group and the names of its whole slices (every check of theirs passed)."""
    checks = [
        Check(
            "slice-names",
            FAIL if observed.unnamed else PASS,
            f"TPU hosts without {SLICE_NAME}: {', '.join(h.name for h in observed.unnamed)}"
            if observed.unnamed
            else f"every TPU host has {SLICE_NAME}",
        )
    ]
    whole = []
    for name in sorted(observed.slices):
        own = slice_checks(name, observed.slices[name], spec)
        checks += own
        if all(c.status == PASS for c in own):
            whole.append(name)
    found = ", ".join(sorted(observed.slices)) or "none"
    detail = f"{len(whole)} whole slices of {len(observed.slices)} ({found}); at least {slices} expected"
    checks.insert(0, Check("slices", PASS if len(whole) >= slices else FAIL, detail))
    return checks, whole
