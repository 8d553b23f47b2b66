"""The committed plan snapshots: a folder a stack, tests/snapshots/<stack>/, and in it one file a concern, so that a
change to one concern (an alert, a node pool, a Ray object) rewrites that concern's file alone.

A concern is a family of resource types (CONCERNS). Its file holds its steps in the plan's order and their
changeSummary; platform.json also holds the plan's other fields (outputs, project, stack). The files together hold
every step of the plan once (`join` gives the plan back, its changeSummary the sum of theirs); the order of steps
across concerns is the plan's own and is checked where it is made (test_snapshots.py's determinism tests), not
recorded here. A step of a type no concern lists fails the split: add the type to its family below.
"""

from __future__ import annotations

import json
from collections import Counter

from helpers import ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots"
STEPS = ("steps", "changeSummary")  # a concern's own; the plan's other fields are platform.json's
PLATFORM = "platform"

# concern -> the resource types of its family, as the plan JSON writes them (`newState.type`); each component
# (`ray-tpu-gke:index:*`) with the resources it registers.
CONCERNS: dict[str, tuple[str, ...]] = {
    PLATFORM: ("pulumi:pulumi:Stack", "ray-tpu-gke:index:RayTpuPlatform"),
    "network": ("ray-tpu-gke:index:Network", "gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork",
                "gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat", "gcp:compute/firewall:Firewall"),
    "cluster": ("ray-tpu-gke:index:GkeCluster", "gcp:container/cluster:Cluster", "pulumi:providers:kubernetes"),
    "node-pools": ("ray-tpu-gke:index:TpuSlicePools", "ray-tpu-gke:index:WorkerPool",
                   "gcp:container/nodePool:NodePool", "gcp:compute/resourcePolicy:ResourcePolicy",
                   "kubernetes:cloud.google.com/v1:ComputeClass"),
    "identity": ("ray-tpu-gke:index:Identity", "gcp:serviceaccount/account:Account",
                 "gcp:serviceaccount/iAMMember:IAMMember", "gcp:projects/iAMMember:IAMMember",
                 "kubernetes:core/v1:ServiceAccount", "kubernetes:rbac.authorization.k8s.io/v1:Role",
                 "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
                 "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
                 "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"),
    "storage": ("ray-tpu-gke:index:Storage", "gcp:storage/bucket:Bucket",
                "gcp:storage/bucketIAMMember:BucketIAMMember"),
    "kubernetes": ("ray-tpu-gke:index:RayCluster", "ray-tpu-gke:index:RayJob", "ray-tpu-gke:index:RayService",
                   "kubernetes:ray.io/v1:RayCluster", "kubernetes:ray.io/v1:RayJob", "kubernetes:ray.io/v1:RayService",
                   "kubernetes:core/v1:Namespace", "kubernetes:core/v1:ConfigMap", "kubernetes:batch/v1:CronJob"),
    "monitoring": ("ray-tpu-gke:index:SliceMonitoring", "ray-tpu-gke:index:SliceHealth",
                   "gcp:monitoring/alertPolicy:AlertPolicy", "gcp:monitoring/dashboard:Dashboard",
                   "gcp:monitoring/metricDescriptor:MetricDescriptor", "time:index/sleep:Sleep"),
}
CONCERN_OF = {type_: concern for concern, types in CONCERNS.items() for type_ in types}
assert len(CONCERN_OF) == sum(map(len, CONCERNS.values())), "a type listed in two concerns"


def dumps(document: dict) -> str:
    """As the plan's own JSON is written (plan.harness.Plan.dumps)."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def split(plan: dict) -> dict[str, str]:
    """{concern: its file's text} for the concerns the plan has steps of; a step of an unlisted type fails."""
    unknown = sorted({s["newState"]["type"] for s in plan["steps"]} - set(CONCERN_OF))
    assert not unknown, f"resource types in no snapshot concern: {unknown} (add each to CONCERNS in {__file__})"
    steps: dict[str, list[dict]] = {}
    for step in plan["steps"]:
        steps.setdefault(CONCERN_OF[step["newState"]["type"]], []).append(step)
    documents = {concern: {"changeSummary": dict(Counter(s["op"] for s in found)), "steps": found}
                 for concern, found in steps.items()}
    documents.setdefault(PLATFORM, {"changeSummary": {}, "steps": []}).update(
        {k: v for k, v in plan.items() if k not in STEPS})
    return {concern: dumps(document) for concern, document in documents.items()}


def join(texts: dict[str, str]) -> dict:
    """The plan the concerns' files hold: every step, concern by concern, and the changeSummary they add up to."""
    documents = {concern: json.loads(text) for concern, text in texts.items()}
    summary: Counter = Counter()
    for document in documents.values():
        summary.update(document["changeSummary"])
    plan = {k: v for k, v in documents[PLATFORM].items() if k not in STEPS}
    plan.update(changeSummary=dict(summary), steps=[s for d in documents.values() for s in d["steps"]])
    return plan


def stacks() -> list[str]:
    """The stacks with a recorded snapshot (a folder of their own)."""
    return sorted(p.name for p in SNAPSHOTS.iterdir() if p.is_dir())


def recorded(stack: str) -> dict[str, str]:
    """{concern: text} of a stack's recorded snapshot; {} when there is none."""
    folder = SNAPSHOTS / stack
    return {p.stem: p.read_text() for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def record(stack: str, texts: dict[str, str]) -> None:
    """Writes a stack's snapshot, one file a concern, and removes the file of a concern it no longer has."""
    folder = SNAPSHOTS / stack
    folder.mkdir(parents=True, exist_ok=True)
    for stale in set(recorded(stack)) - set(texts):
        (folder / f"{stale}.json").unlink()
    for concern, text in texts.items():
        (folder / f"{concern}.json").write_text(text)
