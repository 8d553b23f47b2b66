"""Two plans of a stack -> its changes: each resource created, updated, replaced or deleted, and which are risky.

Resources are matched by URN, then (for a URN that changed) by type and name, physical name, or name and parent:
Pulumi replaces such a resource, so it is one replacement rather than a create and a delete. An input change is a
replacement where the Google provider's rules say so (`replacement`). Replacing or deleting a TPU node pool, the
cluster or a protected resource is risky: a replaced multi-host pool loses its whole slice, and the capacity may not
come back.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ray_tpu_gke.catalog.resource_types import RAY_KIND_PREFIX

from ..steps import steps_of_type
from . import tpu
from .change import Change, Detail
from .changes import StackDiff
from .paths import ABSENT, apply_ignore_changes, covers, format_path, leaf_diffs, lookup, parse_path
from .replacement import CLUSTER, NODE_POOL, replace_rule
from .revisions import Side

RAYJOB = RAY_KIND_PREFIX + "RayJob"
RAYSERVICE = RAY_KIND_PREFIX + "RayService"


def _state(step: dict) -> dict:
    return step["newState"]


def _describe_pool(change: Change, old: dict | None, new: dict | None) -> None:
    """A TPU pool's change: what the pool is (its new shape, or the old one where it goes) and its sizes."""
    change.summary = tpu.summary(new if new is not None else old)
    change.before, change.after = tpu.size(old), tpu.size(new)


def _risk(change: Change, old: dict | None, new: dict | None, tpu_pool: bool, pools: int) -> None:
    if change.op not in ("replace", "delete"):
        return
    verb = "replaces" if change.op == "replace" else "deletes"
    if tpu_pool:
        change.risky = True
        was = tpu.summary(old) if old is not None and tpu.is_tpu_pool(old) else change.summary
        change.reasons.append(
            f"{verb} TPU node pool {change.name} ({was}): the slice on it is torn down"
            + (
                " and its capacity must be obtained again, which may not succeed"
                if change.op == "replace"
                else " and its capacity released"
            )
        )
    elif tpu.gpus_of(old) or tpu.gpus_of(new):
        change.risky = True
        change.reasons.append(
            f"{verb} GPU node pool {change.name} ({tpu.gpus_of(old) or tpu.gpus_of(new)}): its "
            "nodes and the Ray pods on them go"
            + (", and GPU capacity must be obtained again" if change.op == "replace" else "")
        )
    if change.type == RAYJOB and change.op == "replace":
        # resources/ray.py RAYJOB_REPLACE: KubeRay runs a RayJob once, so a changed one is deleted and created again.
        change.risky = True
        change.reasons.append(
            f"replaces RayJob {change.name}: the job runs again (its finished or running run is "
            "deleted first, with the Ray cluster it created)"
        )
    if change.type == RAYSERVICE and change.op == "replace":
        # resources/ray.py RAYSERVICE_NONE_REPLACE: under upgradeStrategy None KubeRay applies no cluster change.
        change.risky = True
        change.reasons.append(
            f"replaces RayService {change.name}: deleted first with its Ray cluster, the service is down until "
            "the new cluster is ready and serving (upgradeStrategy None applies no cluster change in place)"
        )
    if change.type == CLUSTER:
        change.risky = True
        change.reasons.append(
            f"{verb} the GKE cluster {change.name}: every node pool ({pools}), TPU slice and Ray "
            "workload on it goes with it"
        )
    if old is not None and _state(old)["options"].get("protect"):
        change.risky = True
        change.reasons.append(
            "the resource is protected: `pulumi up` refuses to "
            + change.op
            + " it until protection is lifted in the program (and `pulumi state unprotect`)"
        )


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
    for key in (
        lambda s: (_state(s)["type"], _state(s)["name"]),
        _physical_name,
        lambda s: (_state(s)["name"], _state(s)["parent"], _state(s)["custom"]),
    ):
        old_only = [
            s for s in old_steps if s["urn"] not in new_by_urn and s["urn"] not in {o["urn"] for o in matched.values()}
        ]
        new_only = [s for s in new_steps if s["urn"] not in matched]
        for o, n in _pair(old_only, new_only, key):
            matched[n["urn"]] = o

    pools = len(steps_of_type(new_steps, NODE_POOL)) or len(steps_of_type(old_steps, NODE_POOL))
    for n in new_steps:
        ns = _state(n)
        o = matched.get(n["urn"])
        tpu_pool = tpu.is_tpu_pool(o, n)
        if o is None:
            change = Change("create", n["urn"], ns["type"], ns["name"])
            if tpu_pool:
                _describe_pool(change, None, n)
            result.changes.append(change)
            continue
        change = _compare_pair(o, n, tpu_pool)
        if change is None:
            result.unchanged += 1
            continue
        _risk(change, o, n, tpu_pool, pools)
        result.changes.append(change)

    used = {o["urn"] for o in matched.values()}
    for o in old_steps:
        if o["urn"] in used:
            continue
        os_ = _state(o)
        tpu_pool = tpu.is_tpu_pool(o)
        change = Change("delete", o["urn"], os_["type"], os_["name"], protected=bool(os_["options"].get("protect")))
        if tpu_pool:
            _describe_pool(change, o, None)
        _risk(change, o, None, tpu_pool, pools)
        result.changes.append(change)

    old_outputs = old.plan.get("outputs", {}) if old.plan else {}
    new_outputs = new.plan.get("outputs", {}) if new.plan else {}
    result.outputs = [Detail(format_path(p), a, b) for p, a, b in leaf_diffs(old_outputs, new_outputs)]
    result.changes += version_changes(old.plan or {}, new.plan or {})
    return result


VERSIONS_TYPE = "ray-tpu-gke:versions"


def version_changes(old_plan: dict, new_plan: dict) -> list[Change]:
    """Each changed element of the version set (the plans' `versions`, plan/version_set.py) as one change of one line; a
    GKE or Ray version change is risky for running slices: a node upgrade recreates a multi-host slice and a new Ray
    image restarts every pod of its Ray cluster (docs/operations.md, "Upgrading the version set")."""
    from .. import version_set

    if "versions" not in old_plan or "versions" not in new_plan:
        return []  # a side from before the version set: nothing to compare
    a, b = version_set.flat(old_plan["versions"]), version_set.flat(new_plan["versions"])
    out = []
    for path in sorted(set(a) | set(b)):
        before, after = a.get(path, ABSENT), b.get(path, ABSENT)
        if before == after:
            continue
        # One line in the text and markdown diffs: the element, and its value before and after as the summary.
        shown = " → ".join(json.dumps(v, sort_keys=True) if v is not ABSENT else "(none)" for v in (before, after))
        change = Change("update", f"versions:{path}", VERSIONS_TYPE, path, summary=shown)
        if version_set.risky(path):
            change.risky = True
            change.reasons.append(
                f"changes {path} ({shown}): a GKE or Ray version change stops running slices; "
                'upgrade the set as docs/operations.md "Upgrading the version set" says'
            )
        out.append(change)
    return out


def _compare_pair(o: dict, n: dict, tpu_pool: bool) -> Change | None:
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
    replace_on = [parse_path(p) for p in ns["options"].get("replaceOnChanges") or []]  # the program's own option
    for tokens, a, b in leaf_diffs(old_inputs, new_inputs):
        details.append(
            Detail(
                format_path(tokens),
                a,
                b,
                replaces=replace_rule(ns["type"], tokens, old_inputs, new_inputs, tpu_pool)
                or any(covers(rule, tokens) for rule in replace_on),
            )
        )
    if bool(os_["options"].get("protect")) != bool(ns["options"].get("protect")):
        details.append(Detail("[protect]", bool(os_["options"].get("protect")), bool(ns["options"].get("protect"))))
    if not details:
        return None
    op = "replace" if any(d.replaces for d in details) else "update"
    change = Change(
        op,
        n["urn"],
        ns["type"],
        ns["name"],
        details=details,
        old_urn=o["urn"],
        protected=bool(os_["options"].get("protect")),
    )
    if tpu_pool:
        _describe_pool(change, o, n)
    return change
