"""`python -m plan STACK --diff-against REF`: what a change does to a stack, resource by resource, offline.

Plans the stack twice, each time in a subprocess running that revision's own program and stack file: at git revision
REF (checked out in a temporary worktree) and in the working tree. Then matches resources by URN and classifies each
as `create`, `delete`, `update` (changed input paths, old -> new) or `replace`: a changed input that the Google
provider can only apply by replacing the resource (see `REPLACE_PATHS`), or a changed name, type or parent.

Replacing or deleting a TPU node pool or the cluster is flagged as risky: a replaced multi-host pool loses its whole
slice, and the capacity may not come back.

Output: `--format text` (rich, for a terminal), `markdown` (a pull-request comment: summary table, risky changes first,
details folded) or `json` (`{"stack": ..., "changes": [{"op", "urn", "type", "diffs", ...}]}`). Exit status: 0 every
stack was diffed; 2 the working tree's configuration of a stack is invalid; 1 anything else (REF unknown, a revision
that cannot be planned).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml
from rich.console import Console

from ray_tpu_gke import catalog

from .stackfile import EXIT_ERROR, EXIT_INVALID

ROOT = Path(__file__).resolve().parent.parent

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
MARKER = "<!-- ray-tpu-gke:offline-diff -->"

# --- which input changes replace a resource -------------------------------------------------------------------------
#
# Paths are Pulumi's camelCase input paths; a change at or below a listed path replaces the resource. Derived from the
# `ForceNew` fields (and `ForceNewIfChange` rules) of the Terraform Google provider that pulumi-gcp bridges:
# resource_container_node_pool.go, node_config.go, resource_container_cluster.go and the compute, storage and IAM
# resources. "*" means every input change replaces (the resource has no update).

# node_config fields that cannot be updated in place (shared by node pools and the cluster's default node config).
_NODE_CONFIG_FORCE_NEW = (
    "advancedMachineFeatures", "bootDiskKmsKey", "confidentialNodes.confidentialInstanceType",
    "enableConfidentialStorage", "ephemeralStorageLocalSsdConfig", "guestAccelerators", "hostMaintenancePolicy",
    "localNvmeSsdBlockConfig", "localSsdCount", "localSsdEncryptionMode", "maxRunDuration", "metadata",
    "minCpuPlatform", "nodeGroup", "oauthScopes", "preemptible", "reservationAffinity", "sandboxConfig",
    "secondaryBootDisks", "serviceAccount", "shieldedInstanceConfig", "soleTenantConfig", "spot", "flexStart",
)


def _shrinks_cidr(old: Any, new: Any) -> bool:
    """A subnetwork's primary range can grow in place; any other change replaces it."""
    try:
        return not ipaddress.ip_network(old).subnet_of(ipaddress.ip_network(new))
    except (TypeError, ValueError):
        return True


def _disables(old: Any, new: Any) -> bool:
    return bool(old) and not new


REPLACE_PATHS: dict[str, tuple[str, ...]] = {
    NODE_POOL: (
        "cluster", "initialNodeCount", "location", "maxPodsPerNode", "name", "namePrefix", "placementPolicy",
        "project", "queuedProvisioning",
        "networkConfig.acceleratorNetworkProfile", "networkConfig.additionalNodeNetworkConfigs",
        "networkConfig.additionalPodNetworkConfigs", "networkConfig.createPodRange",
        "networkConfig.podCidrOverprovisionConfig", "networkConfig.podIpv4CidrBlock", "networkConfig.podRange",
        "networkConfig.subnetwork",
        *(f"nodeConfig.{p}" for p in _NODE_CONFIG_FORCE_NEW),
    ),
    CLUSTER: (
        "clusterIpv4Cidr", "confidentialNodes", "datapathProvider", "dataplaneOptimizationMode",
        "defaultMaxPodsPerNode", "description", "enableAutopilot", "enableKubernetesAlpha", "enableTpu",
        "initialNodeCount", "ipAllocationPolicy", "location", "masterAuth.clientCertificateConfig", "name",
        "network", "networkingMode", "nodePools", "privateClusterConfig.masterIpv4CidrBlock",
        "privateClusterConfig.privateEndpointSubnetwork", "project", "subnetwork",
        "clusterAutoscaling.autoProvisioningDefaults.bootDiskKmsKey",
        "userManagedKeysConfig.aggregationCa", "userManagedKeysConfig.clusterCa", "userManagedKeysConfig.etcdApiCa",
        "userManagedKeysConfig.etcdPeerCa",
        *(f"nodeConfig.{p}" for p in _NODE_CONFIG_FORCE_NEW),
    ),
    "gcp:compute/network:Network": (
        "autoCreateSubnetworks", "description", "internalIpv6Range", "name", "networkProfile", "params", "project",
    ),
    "gcp:compute/subnetwork:Subnetwork": (
        "description", "externalIpv6Prefix", "internalIpv6Prefix", "name", "network", "params", "project", "region",
        "reservedInternalRange", "resolveSubnetMask",
    ),
    "gcp:compute/router:Router": (
        "encryptedInterconnectRouter", "name", "nccGateway", "network", "params", "project", "region",
    ),
    "gcp:compute/routerNat:RouterNat": (
        "endpointTypes", "initialNatIps", "name", "project", "region", "router", "type",
    ),
    # Workload policies (Ironwood placement) cannot be changed in place in the provider versions this project pins
    # against: treat every change as a replacement, the cautious reading.
    "gcp:compute/resourcePolicy:ResourcePolicy": ("*",),
    "gcp:serviceaccount/account:Account": ("accountId", "project"),
    "gcp:projects/iAMMember:IAMMember": ("*",),
    "gcp:serviceaccount/iAMMember:IAMMember": ("*",),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("*",),
    "gcp:storage/bucket:Bucket": (
        "customPlacementConfig", "enableObjectRetention", "hierarchicalNamespace", "location", "name", "project",
    ),
}

# Changes that replace only when a predicate of (old, new) holds (the provider's ForceNewIfChange rules).
CONDITIONAL_REPLACE: dict[str, dict[str, Callable[[Any, Any], bool]]] = {
    "gcp:compute/subnetwork:Subnetwork": {"ipCidrRange": _shrinks_cidr},
    CLUSTER: {"enableL4IlbSubsetting": _disables, "enableFqdnNetworkPolicy": _disables},
}

# A TPU pool's machine type and zone can be changed through the API, but only by recreating every node: the running
# slice is torn down and its capacity must be found again, which is a replacement in all but name.
TPU_POOL_REPLACE_PATHS = ("nodeConfig.machineType", "nodeLocations")

# Kubernetes objects: a new name or namespace is a new object.
KUBERNETES_REPLACE_PATHS = ("metadata.name", "metadata.namespace")


# --- property paths ---------------------------------------------------------------------------------------------------

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_TOKEN = re.compile(r'\.?([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+|\*)\]|\["((?:[^"\\]|\\.)*)"\]')


def parse_path(text: str) -> tuple:
    """`nodeConfig.labels["a/b"]` -> ("nodeConfig", "labels", "a/b"); `items[0]` -> ("items", 0); `[*]` -> "*"."""
    tokens: list = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"not a property path: {text!r}")
        name, index, quoted = match.groups()
        if name is not None:
            tokens.append(name)
        elif index is not None:
            tokens.append("*" if index == "*" else int(index))
        else:
            tokens.append(json.loads(f'"{quoted}"'))
        position = match.end()
    return tuple(tokens)


def format_path(tokens: tuple) -> str:
    out = ""
    for token in tokens:
        if isinstance(token, int) or token == "*":
            out += f"[{token}]"
        elif _IDENT.match(token):
            out += f".{token}" if out else token
        else:
            out += f"[{json.dumps(token)}]"
    return out


class _Absent:
    def __repr__(self) -> str:
        return "(none)"


ABSENT: Any = _Absent()


def lookup(value: Any, tokens: tuple) -> Any:
    for token in tokens:
        if isinstance(value, dict) and isinstance(token, str) and token in value:
            value = value[token]
        elif isinstance(value, list) and isinstance(token, int) and 0 <= token < len(value):
            value = value[token]
        else:
            return ABSENT
    return value


def _same(a: Any, b: Any) -> bool:
    if a is ABSENT or b is ABSENT:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def leaf_diffs(old: Any, new: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """Every changed path, as deep as both sides have the same shape; ABSENT marks a side without the path."""
    if _same(old, new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += leaf_diffs(old.get(key, ABSENT), new.get(key, ABSENT), path + (key,))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            out += leaf_diffs(old[i] if i < len(old) else ABSENT, new[i] if i < len(new) else ABSENT, path + (i,))
        return out
    return [(path, old, new)]


def _reset(old: Any, new: Any, tokens: tuple) -> Any:
    """`new` with the value at `tokens` taken from `old` (absent there: removed), as Pulumi applies ignoreChanges."""
    if not tokens:
        return old
    head, rest = tokens[0], tokens[1:]
    if isinstance(new, dict) and isinstance(head, str):
        keys = list(new) if head == "*" else [head]
        out = dict(new)
        for key in keys:
            old_child = old.get(key, ABSENT) if isinstance(old, dict) else ABSENT
            if key not in out:
                if not rest and old_child is not ABSENT:
                    out[key] = old_child
                continue
            value = _reset(old_child, out[key], rest)
            if value is ABSENT:
                del out[key]
            else:
                out[key] = value
        return out
    if isinstance(new, list) and (head == "*" or isinstance(head, int)):
        out = list(new)
        for i in (range(len(out)) if head == "*" else [head] if head < len(out) else []):
            old_child = old[i] if isinstance(old, list) and i < len(old) else ABSENT
            value = _reset(old_child, out[i], rest)
            out[i] = None if value is ABSENT else value
        return out
    return new


def apply_ignore_changes(old_inputs: dict, new_inputs: dict, ignore: list[str]) -> dict:
    result = new_inputs
    for text in ignore:
        try:
            tokens = parse_path(text)
        except ValueError:
            continue
        result = _reset(old_inputs, result, tokens)
    return result


def _covers(prefix: tuple, path: tuple) -> bool:
    return len(prefix) <= len(path) and all(p == "*" or p == q for p, q in zip(prefix, path))


# --- plans of one revision ------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One revision's plan of a stack: `planned`, `absent` (no stack file there), `invalid` (exit 2) or `failed`."""

    status: str
    plan: dict | None = None
    message: str = ""
    exit_code: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("planned", "absent")

    @property
    def steps(self) -> list[dict]:
        return list(self.plan["steps"]) if self.plan else []


def stack_file_at(root: Path, stack: str) -> Path | None:
    """Where a revision keeps a stack's config, or None when the revision has no Pulumi project."""
    project_file = root / "Pulumi.yaml"
    if not project_file.is_file():
        return None
    try:
        project = yaml.safe_load(project_file.read_text()) or {}
    except yaml.YAMLError:
        project = {}
    return root / str(project.get("stackConfigDir", ".")) / f"Pulumi.{stack}.yaml"


def stacks_at(root: Path) -> list[str]:
    path = stack_file_at(root, "x")
    if path is None or not path.parent.is_dir():
        return []
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in path.parent.glob("Pulumi.*.yaml"))


def plan_revision(root: Path, stack: str, config_file: Path | None = None) -> Side:
    """Plan a stack with the revision's own code, in a subprocess: the Pulumi runtime is process-global state."""
    path = config_file or stack_file_at(root, stack)
    if path is None or not path.is_file():
        return Side("absent")
    command = [sys.executable, "-m", "plan", stack, "--json"]
    if config_file is not None:
        command += ["--config-file", str(config_file.resolve())]
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode == 0:
        try:
            return Side("planned", json.loads(done.stdout))
        except json.JSONDecodeError as error:
            return Side("failed", message=f"the plan is not JSON ({error})", exit_code=done.returncode)
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    if done.returncode == EXIT_INVALID:
        return Side("invalid", message="\n".join(lines), exit_code=done.returncode)
    return Side("failed", message="\n".join(lines[-15:]) or f"exit status {done.returncode}",
                exit_code=done.returncode)


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise GitError(done.stderr.strip() or f"git {' '.join(args)} failed")
    return done.stdout.strip()


class GitError(RuntimeError):
    pass


@contextlib.contextmanager
def worktree(root: Path, ref: str) -> Iterator[tuple[Path, str]]:
    """A detached checkout of REF in a temporary directory, removed afterwards whatever happens."""
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") if ref else ""
    if not commit:
        raise GitError(f"{ref!r} is not a commit in {root}")
    base = Path(tempfile.mkdtemp(prefix="plan-diff-"))
    path = base / "rev"
    try:
        _git(root, "worktree", "add", "--detach", "--quiet", str(path), commit)
        yield path, commit
    finally:
        with contextlib.suppress(GitError):
            _git(root, "worktree", "remove", "--force", str(path))
        with contextlib.suppress(GitError):
            _git(root, "worktree", "prune")
        shutil.rmtree(base, ignore_errors=True)


# --- comparing two plans ----------------------------------------------------------------------------------------------


@dataclass
class Detail:
    path: str
    old: Any
    new: Any
    replaces: bool = False

    def to_json(self) -> dict:
        out: dict = {"path": self.path, "replaces": self.replaces}
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        return out


@dataclass
class Change:
    op: str
    urn: str
    type: str
    name: str
    details: list[Detail] = field(default_factory=list)
    risky: bool = False
    reasons: list[str] = field(default_factory=list)
    old_urn: str | None = None
    protected: bool = False
    summary: str = ""  # what the resource is, for TPU pools: machine type and shape

    @property
    def diffs(self) -> list[str]:
        return [d.path for d in self.details]

    def to_json(self) -> dict:
        out = {"op": self.op, "urn": self.urn, "type": self.type, "diffs": self.diffs, "name": self.name,
               "risky": self.risky}
        if self.reasons:
            out["reasons"] = self.reasons
        if self.details:
            out["details"] = [d.to_json() for d in self.details]
        if self.old_urn and self.old_urn != self.urn:
            out["oldUrn"] = self.old_urn
        if self.protected:
            out["protected"] = True
        return out


OPS = ("create", "update", "replace", "delete")


@dataclass
class StackDiff:
    stack: str
    ref: str
    commit: str
    old: Side
    new: Side
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    outputs: list[Detail] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        for side, where in ((self.old, f"at {self.ref}"), (self.new, "in the working tree")):
            if not side.ok:
                kind = "the configuration is invalid" if side.status == "invalid" else "planning failed"
                return f"cannot plan stack {self.stack} {where}: {kind} (exit {side.exit_code})\n{side.message}"
        return None

    @property
    def counts(self) -> dict[str, int]:
        return {op: sum(1 for c in self.changes if c.op == op) for op in OPS}

    @property
    def risky(self) -> list[Change]:
        return [c for c in self.changes if c.risky]

    def to_json(self) -> dict:
        out = {"stack": self.stack, "changes": [c.to_json() for c in self.changes], "against": self.ref,
               "commit": self.commit, "summary": {**self.counts, "same": self.unchanged},
               "risky": len(self.risky)}
        if self.outputs:
            out["outputs"] = [d.to_json() for d in self.outputs]
        if self.old.status == "absent":
            out["note"] = f"stack {self.stack} does not exist at {self.ref}: everything is created"
        elif self.new.status == "absent":
            out["note"] = f"stack {self.stack} is removed in the working tree: everything is deleted"
        if self.error:
            out["error"] = self.error
        return out


def _state(step: dict) -> dict:
    return step["newState"]


def is_tpu_pool(*steps: dict | None) -> bool:
    for step in steps:
        if step and _state(step)["type"] == NODE_POOL:
            machine = lookup(_state(step)["inputs"], ("nodeConfig", "machineType"))
            if isinstance(machine, str) and catalog.generation_of_machine_type(machine):
                return True
    return False


def _pool_summary(step: dict) -> str:
    inputs = _state(step)["inputs"]
    machine = lookup(inputs, ("nodeConfig", "machineType"))
    topology = lookup(inputs, ("placementPolicy", "tpuTopology"))
    if topology is ABSENT:
        topology = lookup(inputs, ("nodeConfig", "labels", "ray-tpu-gke/topology"))
    hosts = lookup(inputs, ("nodeCount",))
    if hosts is ABSENT:
        hosts = lookup(inputs, ("autoscaling", "maxNodeCount"))
    zones = lookup(inputs, ("nodeLocations",))
    parts = [str(machine)]
    if topology is not ABSENT:
        parts.append(f"topology {topology}")
    if hosts is not ABSENT:
        parts.append(f"{hosts} host{'s' if hosts != 1 else ''}")
    if isinstance(zones, list) and zones:
        parts.append(", ".join(map(str, zones)))
    return ", ".join(parts)


def replace_rule(type_: str, tokens: tuple, old_inputs: dict, new_inputs: dict, tpu_pool: bool) -> bool:
    """Whether a change at `tokens` can only be applied by replacing a resource of this type."""
    rules = REPLACE_PATHS.get(type_, ())
    if type_.startswith("kubernetes:"):
        rules = KUBERNETES_REPLACE_PATHS
    if tpu_pool:
        rules = rules + TPU_POOL_REPLACE_PATHS
    for rule in rules:
        if rule == "*":
            return True
        rule_tokens = parse_path(rule)
        if _covers(rule_tokens, tokens):
            return True
        # A whole block added or removed: replaces when the rule's own value differs.
        if _covers(tokens, rule_tokens) and not _same(lookup(old_inputs, rule_tokens), lookup(new_inputs, rule_tokens)):
            return True
    for rule, predicate in CONDITIONAL_REPLACE.get(type_, {}).items():
        rule_tokens = parse_path(rule)
        if _covers(rule_tokens, tokens) or _covers(tokens, rule_tokens):
            old, new = lookup(old_inputs, rule_tokens), lookup(new_inputs, rule_tokens)
            if not _same(old, new) and old is not ABSENT and predicate(old, new):
                return True
    return False


def _risk(change: Change, old: dict | None, new: dict | None, tpu_pool: bool, pools: int) -> None:
    if change.op not in ("replace", "delete"):
        return
    verb = "replaces" if change.op == "replace" else "deletes"
    if tpu_pool:
        change.risky = True
        was = _pool_summary(old) if old is not None and is_tpu_pool(old) else change.summary
        change.reasons.append(
            f"{verb} TPU node pool {change.name} ({was}): the slice on it is torn down"
            + (" and its capacity must be obtained again, which may not succeed" if change.op == "replace"
               else " and its capacity released"))
    if change.type == CLUSTER:
        change.risky = True
        change.reasons.append(f"{verb} the GKE cluster {change.name}: every node pool ({pools}), TPU slice and Ray "
                              "workload on it goes with it")
    if old is not None and _state(old)["options"].get("protect"):
        change.risky = True
        change.reasons.append("the resource is protected: `pulumi up` refuses to " + change.op
                              + " it until protection is lifted in the program (and `pulumi state unprotect`)")


def _pair(olds: list[dict], news: list[dict], key: Callable[[dict], Any]) -> list[tuple[dict, dict]]:
    """Pairs of an unmatched old and new step sharing a key that is unique on both sides."""
    def index(steps):
        groups: dict = {}
        for step in steps:
            k = key(step)
            if k is not None:
                groups.setdefault(k, []).append(step)
        return {k: v[0] for k, v in groups.items() if len(v) == 1}

    old_index, new_index = index(olds), index(news)
    return [(old_index[k], new_index[k]) for k in old_index if k in new_index]


def _physical_name(step: dict) -> Any:
    inputs = _state(step)["inputs"]
    name = inputs.get("name")
    if name is None:
        name = lookup(inputs, ("metadata", "name"))
    if name is ABSENT or name is None or not isinstance(name, str):
        return None
    return (_state(step)["type"], _state(step)["parent"], name)


def compare(old: Side, new: Side, stack: str, ref: str = "", commit: str = "") -> StackDiff:
    """Resource-level changes from the plan at REF (`old`) to the working tree's plan (`new`)."""
    result = StackDiff(stack=stack, ref=ref, commit=commit, old=old, new=new)
    if not (old.ok and new.ok):
        return result
    old_steps, new_steps = old.steps, new.steps
    old_by_urn = {s["urn"]: s for s in old_steps}
    new_by_urn = {s["urn"]: s for s in new_steps}
    matched: dict[str, dict] = {u: old_by_urn[u] for u in new_by_urn if u in old_by_urn}  # new urn -> old step

    # A resource whose URN changed but which is recognisably the same: moved to another parent, renamed (same
    # physical name) or retyped. Pulumi replaces it (without an alias), so say so rather than create + delete.
    for key in (lambda s: (_state(s)["type"], _state(s)["name"]),
                _physical_name,
                lambda s: (_state(s)["name"], _state(s)["parent"], _state(s)["custom"])):
        old_only = [s for s in old_steps if s["urn"] not in new_by_urn and s["urn"] not in
                    {o["urn"] for o in matched.values()}]
        new_only = [s for s in new_steps if s["urn"] not in matched]
        for o, n in _pair(old_only, new_only, key):
            matched[n["urn"]] = o

    pools = sum(1 for s in new_steps if _state(s)["type"] == NODE_POOL) or \
        sum(1 for s in old_steps if _state(s)["type"] == NODE_POOL)
    for n in new_steps:
        ns = _state(n)
        o = matched.get(n["urn"])
        tpu = is_tpu_pool(o, n)
        if o is None:
            change = Change("create", n["urn"], ns["type"], ns["name"])
            if tpu:
                change.summary = _pool_summary(n)
            result.changes.append(change)
            continue
        change = _compare_pair(o, n, tpu)
        if change is None:
            result.unchanged += 1
            continue
        _risk(change, o, n, tpu, pools)
        result.changes.append(change)

    used = {o["urn"] for o in matched.values()}
    for o in old_steps:
        if o["urn"] in used:
            continue
        os_ = _state(o)
        tpu = is_tpu_pool(o)
        change = Change("delete", o["urn"], os_["type"], os_["name"], protected=bool(os_["options"].get("protect")))
        if tpu:
            change.summary = _pool_summary(o)
        _risk(change, o, None, tpu, pools)
        result.changes.append(change)

    old_outputs = old.plan.get("outputs", {}) if old.plan else {}
    new_outputs = new.plan.get("outputs", {}) if new.plan else {}
    result.outputs = [Detail(format_path(p), a, b) for p, a, b in leaf_diffs(old_outputs, new_outputs)]
    return result


def _compare_pair(o: dict, n: dict, tpu: bool) -> Change | None:
    os_, ns = _state(o), _state(n)
    details: list[Detail] = []
    if os_["type"] != ns["type"]:
        details.append(Detail("[type]", os_["type"], ns["type"], replaces=True))
    if os_["name"] != ns["name"]:
        details.append(Detail("[name]", os_["name"], ns["name"], replaces=True))
    if os_["parent"] != ns["parent"]:
        details.append(Detail("[parent]", os_["parent"], ns["parent"], replaces=True))
    if os_.get("provider") != ns.get("provider"):
        # Pulumi asks the new provider whether its configuration differs enough to replace (DiffConfig): unknown here.
        details.append(Detail("[provider]", os_.get("provider"), ns.get("provider")))
    old_inputs = os_.get("inputs") or {}
    new_inputs = apply_ignore_changes(old_inputs, ns.get("inputs") or {}, ns["options"].get("ignoreChanges") or [])
    for tokens, a, b in leaf_diffs(old_inputs, new_inputs):
        details.append(Detail(format_path(tokens), a, b,
                              replaces=replace_rule(ns["type"], tokens, old_inputs, new_inputs, tpu)))
    if bool(os_["options"].get("protect")) != bool(ns["options"].get("protect")):
        details.append(Detail("[protect]", bool(os_["options"].get("protect")), bool(ns["options"].get("protect"))))
    if not details:
        return None
    op = "replace" if any(d.replaces for d in details) else "update"
    change = Change(op, n["urn"], ns["type"], ns["name"], details=details, old_urn=o["urn"],
                    protected=bool(os_["options"].get("protect")))
    if tpu:
        change.summary = _pool_summary(n)
    return change


# --- the whole run ----------------------------------------------------------------------------------------------------


@dataclass
class Report:
    ref: str
    commit: str
    stacks: list[StackDiff]
    error: str | None = None  # a failure before any stack could be planned (REF unknown, no git)

    @property
    def exit_code(self) -> int:
        if self.error:
            return EXIT_ERROR
        if any(s.new.status == "invalid" for s in self.stacks):
            return EXIT_INVALID
        return EXIT_ERROR if any(s.error for s in self.stacks) else 0

    def to_json(self) -> dict:
        out = {"against": self.ref, "commit": self.commit, "stacks": [s.to_json() for s in self.stacks]}
        if self.error:
            out["error"] = self.error
        return out


def diff_stacks(stacks: list[str] | None, ref: str, root: Path = ROOT, config_file: Path | None = None,
                workers: int | None = None) -> Report:
    """Diff each stack (None: every stack at REF or in the working tree) between REF and the working tree."""
    try:
        with worktree(root, ref) as (checkout, commit):
            names = stacks if stacks is not None else sorted(set(stacks_at(root)) | set(stacks_at(checkout)))
            jobs = [(checkout, name, None) for name in names] + [(root, name, config_file) for name in names]
            with ThreadPoolExecutor(max_workers=workers or max(2, os.cpu_count() or 2)) as pool:
                sides = list(pool.map(lambda job: plan_revision(*job), jobs))
    except GitError as error:
        return Report(ref, "", [], error=f"cannot check out {ref!r}: {error}")
    olds, news = sides[:len(names)], sides[len(names):]
    return Report(ref, commit, [compare(o, n, name, ref, commit) for name, o, n in zip(names, olds, news)])


def run(args) -> int:
    """The `--diff-against` entry point of `python -m plan`."""
    config_file = getattr(args, "config_file", None)
    if args.all_stacks and config_file is not None:
        print("error: --config-file replaces one stack's file; it cannot be combined with --all-stacks",
              file=sys.stderr)
        return EXIT_ERROR
    stacks = None if args.all_stacks else [args.stack]
    report = diff_stacks(stacks, args.diff_against, ROOT, config_file)
    fmt = "json" if getattr(args, "json", False) else args.format
    if fmt == "json":
        payload = report.to_json()
        if not args.all_stacks and report.stacks:
            payload = report.stacks[0].to_json()
        sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True, default=repr) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(markdown(report, ROOT))
    else:
        console = Console(highlight=False)
        if not console.is_terminal:
            console = Console(highlight=False, width=200)
        print_text(report, console)
    if fmt != "text":
        for problem in [report.error] + [s.error for s in report.stacks]:
            if problem:
                print(f"error: {problem}", file=sys.stderr)
    return report.exit_code


# --- output -----------------------------------------------------------------------------------------------------------


def show(value: Any, limit: int = 100) -> str:
    if value is ABSENT:
        return "(none)"
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}
_STYLE = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red"}


def summary_line(diff: StackDiff) -> str:
    counts = diff.counts
    parts = [f"{counts[op]} to {op}" for op in OPS if counts[op]]
    return ", ".join(parts) + f" ({diff.unchanged} unchanged)" if parts else f"no changes ({diff.unchanged} unchanged)"


def _header(report: Report) -> str:
    return f"{report.ref} ({report.commit[:12]})" if report.commit else report.ref


def print_text(report: Report, console) -> None:
    from rich.markup import escape

    if report.error:
        console.print(f"[bold red]error:[/] {escape(report.error)}")
        return
    for diff in report.stacks:
        console.print(f"[bold]Stack {escape(diff.stack)}[/]: the working tree against {escape(_header(report))}")
        if diff.error:
            console.print(f"  [bold red]error:[/] {escape(diff.error)}")
            console.print()
            continue
        note = diff.to_json().get("note")
        if note:
            console.print(f"  [yellow]{escape(note)}[/]")
        if not diff.changes:
            console.print(f"  [green]No changes.[/] The {diff.unchanged} resources plan the same at both revisions.")
            console.print()
            continue
        for change in diff.risky:
            for reason in change.reasons:
                console.print(f"  [bold white on red] RISKY [/] [bold]{change.op}[/] {escape(change.type)} "
                              f"[bold]{escape(change.name)}[/]: {escape(reason)}")
        if diff.risky:
            console.print()
        for change in diff.changes:
            style = _STYLE[change.op]
            line = (f"  [{style}]{_SYMBOL[change.op]:>2} {change.op:<7}[/] {escape(change.type)} "
                    f"[bold]{escape(change.name)}[/]")
            if change.summary:
                line += f" [dim]({escape(change.summary)})[/]"
            if change.risky:
                line += " [bold red]RISKY[/]"
            console.print(line)
            for d in change.details:
                mark = " [magenta](forces replacement)[/]" if d.replaces else ""
                console.print(f"             {escape(d.path)}: {escape(show(d.old))} [dim]=>[/] "
                              f"{escape(show(d.new))}{mark}")
        for d in diff.outputs:
            console.print(f"  [cyan]output[/] {escape(d.path)}: {escape(show(d.old))} [dim]=>[/] {escape(show(d.new))}")
        console.print(f"  [bold]Resources:[/] {summary_line(diff)}")
        console.print()


# In a ```diff block GitHub colours lines by their first character: "+" green, "-" red.
_MD_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}


def _md_change_block(change: Change, limit: int) -> list[str]:
    lines = [f"{_MD_SYMBOL[change.op]:<3} {change.op:<7} {change.type} {change.name}"
             + (f" ({change.summary})" if change.summary else "") + ("  <-- RISKY" if change.risky else "")]
    for d in change.details[:limit]:
        lines.append(f"!       {d.path}: {show(d.old, 80)} => {show(d.new, 80)}"
                     + ("  (forces replacement)" if d.replaces else ""))
    if len(change.details) > limit:
        lines.append(f"!       ... {len(change.details) - limit} more")
    return lines


def _diagram(diff: StackDiff, root: Path) -> str | None:
    """The working tree's diagram of a stack, slices touched by the change marked; None if it cannot be drawn."""
    from ray_tpu_gke.config import ConfigError

    from . import diagram, stackfile

    path = stack_file_at(root, diff.stack)
    if diff.new.status != "planned" or path is None or not path.is_file():
        return None
    try:
        _, _, config = stackfile.load_checked(diff.stack, path)
    except (ConfigError, OSError, ValueError):
        return None
    return diagram.mermaid(config, marks=slice_marks(diff))


def slice_marks(diff: StackDiff) -> dict[str, str]:
    """tpuSlices names whose node pools this change creates, updates or replaces: `risky`, `changed` or `created`."""
    marks: dict[str, str] = {}
    rank = {"created": 0, "changed": 1, "risky": 2}
    for change in diff.changes:
        if change.type != NODE_POOL or f"ray-tpu-gke:index:TpuSlicePools${NODE_POOL}::" not in change.urn:
            continue
        slice_name = change.name.rsplit("-", 1)[0]  # pools are named <slice>-<index>
        mark = "risky" if change.risky else "created" if change.op == "create" else "changed"
        if rank[mark] >= rank.get(marks.get(slice_name, "created"), 0):
            marks[slice_name] = mark
    return marks


MAX_COMMENT = 60_000  # GitHub rejects comments over 65,536 characters


def markdown(report: Report, root: Path = ROOT, detail_limit: int = 25, diagrams: bool = True) -> str:
    """One pull-request comment for every stack: summary table, risky changes first, details folded."""
    out = [MARKER, f"### Infrastructure diff against `{report.ref}`"
           + (f" (`{report.commit[:12]}`)" if report.commit else ""), ""]
    if report.error:
        out += ["> [!WARNING]", f"> The diff could not be computed: {report.error}", ""]
        return "\n".join(out) + "\n"
    risky = [(d, c) for d in report.stacks for c in d.risky]
    errors = [d for d in report.stacks if d.error]
    if risky:
        out += ["> [!CAUTION]",
                f"> **{len(risky)} risky change{'s' if len(risky) != 1 else ''}**: a TPU node pool or the cluster is "
                "replaced or deleted. A replaced multi-host pool loses its whole slice, and the capacity may not "
                "come back.", ">"]
        for d, c in risky:
            for reason in c.reasons:
                out.append(f"> - **{d.stack}** · {c.op} · `{c.type}` **{c.name}**: {reason}")
        out.append("")
    if errors:
        for d in errors:
            first, _, rest = d.error.partition("\n")
            out += ["> [!WARNING]", f"> {first}", ""]
            if rest.strip():
                out += ["```text", rest.strip(), "```", ""]
    if not any(d.changes for d in report.stacks) and not errors:
        out += ["**No changes**: every stack plans the same resources at both revisions.", ""]
    out += ["| stack | create | update | replace | delete | unchanged | risky |",
            "| --- | ---: | ---: | ---: | ---: | ---: | :--- |"]
    for d in report.stacks:
        if d.error:
            out.append(f"| `{d.stack}` | | | | | | cannot plan |")
            continue
        c = d.counts
        flag = f"**{len(d.risky)}** :warning:" if d.risky else ("no changes" if not d.changes else "none")
        out.append(f"| `{d.stack}` | {c['create']} | {c['update']} | {c['replace']} | {c['delete']} | "
                   f"{d.unchanged} | {flag} |")
    out.append("")
    for d in report.stacks:
        if d.error or not d.changes:
            continue
        note = d.to_json().get("note")
        ordered = d.risky + [c for c in d.changes if not c.risky]
        block = [f"<details><summary><b>{d.stack}</b>: {summary_line(d)}"
                 + (" :warning:" if d.risky else "") + "</summary>", ""]
        if note:
            block += [f"_{note}_", ""]
        block += ["```diff"]
        for change in ordered:
            block += _md_change_block(change, detail_limit)
        for o in d.outputs:
            block.append(f"!  output {o.path}: {show(o.old, 80)} => {show(o.new, 80)}")
        block += ["```", ""]
        if diagrams:
            chart = _diagram(d, root)
            if chart:
                block += [f"Slices of `{d.stack}` after this change (red: replaced or deleted pools, amber: "
                          "changed, green: new):", "", "```mermaid", chart.rstrip(), "```", ""]
        block += ["</details>", ""]
        out += block
    out += ["<sub>Offline plan: both revisions' own program and stack files under Pulumi mocks, no cloud credentials. "
            "Values only the cloud knows are not compared; where credentials are configured, the `pulumi preview` "
            "comment of each stack is authoritative.</sub>", ""]
    text = "\n".join(out)
    if len(text) > MAX_COMMENT and (detail_limit > 3 or diagrams):
        return markdown(report, root, detail_limit=3, diagrams=False)
    if len(text) > MAX_COMMENT:
        text = text[:MAX_COMMENT] + "\n\n_(truncated: run `python -m plan STACK --diff-against REF` for the rest)_"
    return text + ("" if text.endswith("\n") else "\n")
