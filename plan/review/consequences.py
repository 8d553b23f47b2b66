"""What a change entails beyond its resources, for the reviewer: a budget it breaks, the reservation capacity a
changed slice or pool needs, and a name that states a shape or size the new configuration no longer has.

- **Budget**: the policy pack's own rule `cost-monthly-budget` (policy/rules/cost.py), run on both revisions' plans:
  its verdict and message after the change, and whether it held before. Nothing is recomputed here.
- **Reservations**: per reservation a changed TPU or GPU node pool consumes (`reservationAffinity`
  SPECIFIC_RESERVATION), what every pool of the stack that consumes it needs at most, in the new revision and the
  old: VMs of the machine type and their TPU chips or GPUs. A specific reservation holds VMs of one machine type in
  one zone (Compute Engine "Reservations of Compute Engine zonal resources"; GKE "Consume reserved zonal resources":
  a node pool consumes it with --reservation-affinity=specific), so a pool of more nodes than it holds does not get
  them. The stack declares no reservation's size, so the review says what it must hold, and that the stack does
  not say it holds it.
- **Names**: a slice whose name states a generation and a chip count (`v6e-64`: the catalogue's generation names,
  followed by a number) or a topology (`...-8x8`), which its new shape contradicts: `v6e-64` now 128 chips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ray_tpu_gke import catalog

from ..steps import states_of_type
from .paths import ABSENT, lookup
from .replacement import NODE_POOL
from .tpu import SLICE_LABEL, size

BUDGET_RULE = "cost-monthly-budget"  # policy/rules/cost.py
TOPOLOGY = re.compile(r"(?<![0-9x])(\d+x\d+(?:x\d+)?)(?![0-9x])")
GENERATION_CHIPS = re.compile(
    r"(?:^|[-_.])("
    + "|".join(sorted(map(re.escape, catalog.GENERATIONS), key=len, reverse=True))
    + r")-(\d+)(?![0-9x])"
)


@dataclass
class Consequences:
    budget: dict[str, Any] | None = None  # the rule's verdict after the change (and before)
    reservations: list[dict[str, Any]] = field(default_factory=list)
    names: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.budget or self.reservations or self.names)

    def to_json(self) -> dict:
        out: dict[str, Any] = {}
        if self.budget:
            out["budget"] = self.budget
        if self.reservations:
            out["reservations"] = self.reservations
        if self.names:
            out["names"] = self.names
        return out

    def lines(self) -> list[str]:
        """One sentence each, for the text and markdown outputs."""
        out = []
        if self.budget:
            b = self.budget
            was = "it held before the change" if b["before"] == "pass" else "it failed before the change too"
            out.append(f"Budget: policy rule {b['rule']} ({b['level']}) fails: {b['message']} ({was})")
        for r in self.reservations:
            need, was = r["needs"], r["before"]
            what = f"{need['vms']} {r['machineType']} VMs, {need[r['unit']]} {r['unit']}"
            before = f"{was['vms']} VMs, {was[r['unit']]} {r['unit']}" if was else "nothing"
            out.append(
                f"Reservation {r['reservation']}{' in ' + r['zone'] if r['zone'] else ''}: must hold {what} "
                f"for {', '.join(r['pools'])} (before: {before}); {r['said']}"
            )
        for n in self.names:
            out.append(f"Name: {n['kind']} {n['name']} states {n['states']}, but is now {n['is']}")
        return out


def _pools(plan: dict | None) -> list[dict[str, Any]]:
    return states_of_type(plan, NODE_POOL)


def _reservation(state: dict) -> str | None:
    affinity = lookup(state["inputs"], ("nodeConfig", "reservationAffinity"))
    if not isinstance(affinity, dict) or affinity.get("consumeReservationType") != "SPECIFIC_RESERVATION":
        return None
    values = affinity.get("values") or []
    return values[0] if values and isinstance(values[0], str) else None


def _need(state: dict) -> tuple[str, int, int] | None:
    """(unit, VMs, chips or GPUs) a pool needs at most: its hosts (TPU, plan/review/tpu.py) or its nodes (GPU)."""
    tpu = size({"newState": state})
    if tpu is not None:
        return "chips", tpu.hosts, tpu.chips
    nodes = lookup(state["inputs"], ("autoscaling", "maxNodeCount"))
    nodes = lookup(state["inputs"], ("nodeCount",)) if nodes is ABSENT else nodes
    accelerators = lookup(state["inputs"], ("nodeConfig", "guestAccelerators"))
    if not isinstance(nodes, int) or not isinstance(accelerators, list):
        return None
    gpus = sum(a.get("count", 0) for a in accelerators if isinstance(a, dict) and isinstance(a.get("count"), int))
    return "gpus", nodes, nodes * gpus


def _by_reservation(plan: dict | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for state in _pools(plan):
        name, need = _reservation(state), _need(state)
        if name is None or need is None:
            continue
        unit, vms, amount = need
        entry = out.setdefault(
            name,
            {
                "unit": unit,
                "vms": 0,
                unit: 0,
                "pools": [],
                "machineType": lookup(state["inputs"], ("nodeConfig", "machineType")),
                "zone": ",".join(state["inputs"].get("nodeLocations") or []),
            },
        )
        entry["vms"] += vms
        entry[unit] += amount
        entry["pools"].append(state["name"])
    return out


def reservations(old: dict | None, new: dict | None, changed: set[str]) -> list[dict[str, Any]]:
    """What each reservation a changed pool consumes must hold after the change, against before."""
    before, after = _by_reservation(old), _by_reservation(new)
    out = []
    for name, entry in sorted(after.items()):
        if not set(entry["pools"]) & changed:
            continue
        was = before.get(name)
        unit = entry["unit"]
        if was and (was["vms"], was.get(unit)) == (entry["vms"], entry[unit]):
            continue  # the pools changed, not what they take from the reservation
        out.append(
            {
                "reservation": name,
                "zone": entry["zone"],
                "machineType": entry["machineType"],
                "unit": unit,
                "pools": entry["pools"],
                "needs": {"vms": entry["vms"], unit: entry[unit]},
                "before": {"vms": was["vms"], unit: was.get(unit, 0)} if was else None,
                "said": "the stack does not state what the reservation holds: check it before applying "
                f"(gcloud compute reservations describe {name.rsplit('/', 1)[-1]}"
                + (f" --zone={entry['zone']})" if entry["zone"] and "," not in entry["zone"] else ")"),
            }
        )
    return out


def _slices(plan: dict | None) -> dict[str, dict[str, Any]]:
    """Each TPU slice of a plan, from its pools: generation, topology and chips per slice."""
    out: dict[str, dict[str, Any]] = {}
    for state in _pools(plan):
        labels = lookup(state["inputs"], ("nodeConfig", "labels"))
        tpu = size({"newState": state})
        if tpu is None or not isinstance(labels, dict) or not isinstance(labels.get(SLICE_LABEL), str):
            continue
        out[labels[SLICE_LABEL]] = {
            "generation": labels.get("ray-tpu-gke/generation"),
            "topology": labels.get("ray-tpu-gke/topology"),
            "chips": tpu.chips,
        }
    return out


def stated(name: str) -> dict[str, Any]:
    """What a slice's name states: {"generation", "chips"} and/or {"topology"}; empty if it states neither."""
    out: dict[str, Any] = {}
    found = GENERATION_CHIPS.search(name)
    if found:
        out.update(generation=found.group(1), chips=int(found.group(2)))
    topology = TOPOLOGY.search(name)
    if topology:
        out["topology"] = topology.group(1)
    return out


def names(old: dict | None, new: dict | None) -> list[dict[str, Any]]:
    """The slices whose shape the change altered and whose name now states another."""
    before, out = _slices(old), []
    for name, now in sorted(_slices(new).items()):
        if before.get(name) == now:
            continue  # unchanged: a name that never matched is not this change's doing
        says = stated(name)
        wrong = []
        if "chips" in says and (says["generation"], says["chips"]) != (now["generation"], now["chips"]):
            wrong.append(
                (f"{says['generation']} with {says['chips']} chips", f"{now['generation']} with {now['chips']} chips")
            )
        if "topology" in says and says["topology"] != now["topology"]:
            wrong.append((f"topology {says['topology']}", f"topology {now['topology']}"))
        for states, is_ in wrong:
            out.append({"kind": "slice", "name": name, "states": states, "is": is_})
    return out


def budget(old: dict | None, new: dict | None, stack: str) -> dict[str, Any] | None:
    """The budget rule's verdict on the new plan where it fails, with whether it failed on the old."""
    if not new:
        return None
    from ..policy_pack import policy_engine

    engine = policy_engine()
    rule = next(r for r in engine.RULES if r.id == BUDGET_RULE)

    def failures(plan: dict) -> list[str]:
        return [v.message for v in engine.evaluate(engine.views.from_plan(plan, stack), [rule])]

    after = failures(new)
    if not after:
        return None
    return {
        "rule": rule.id,
        "level": rule.level,
        "verdict": "fail",
        "message": after[0],
        "before": "fail" if old and failures(old) else "pass",
    }


def of_diff(old: dict | None, new: dict | None, stack: str, changed: set[str]) -> Consequences:
    """`changed`: the names of the node pools the change creates, updates or replaces."""
    return Consequences(budget(old, new, stack), reservations(old, new, changed), names(old, new))
