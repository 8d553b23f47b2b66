"""`python -m plan.compare STACK --dry-run`: what a live run would create and what it may cost, before anything is
created. Per side: the RayJob it creates (name, namespace, image, entrypoint), the hardware and the accelerator quota
it draws on, and its cost ceiling, the side's price for an hour x `--timeout` (a job that runs until the collector
gives up, plus KubeRay's minute of `ttlSecondsAfterFinished`; the autoscaler's removal of the emptied node is not
counted, and said so). Pure but for printing.
"""

from __future__ import annotations

import sys
from typing import Optional

from ray_tpu_gke import admission

from .sides import TTL_AFTER_FINISHED_S, SidePlan, run_manifest


def quota_need(side: SidePlan, region: Optional[str]) -> str:
    """The Cloud Quotas entry the side's hardware draws on (components/admission/quota.py, gpu.py), in words."""
    if not region:
        return "unknown (the plan has no region)"
    capacity = side.capacity or "onDemand"
    try:
        if side.kind == "tpu":
            need = admission.tpu_quota_need(side.generation or "", capacity, side.devices, region, side.item)
        else:
            need = admission.gpu_quota_need(side.gpu_accelerator or "", capacity, side.devices, region, side.item)
    except KeyError:
        return f"unknown for {side.generation or side.gpu_accelerator}"
    if need is None:
        return "none: reserved capacity draws on its reservation"
    return f"{need.key} in {need.region}: {need.chips} {need.unit}"


def _env_vars(job: dict) -> dict:
    """The environment variables of the RayJob's runtime environment: what the run tells its job, and the stack's."""
    import yaml

    return (yaml.safe_load(job["spec"].get("runtimeEnvYAML") or "") or {}).get("env_vars") or {}


def ceiling(side: SidePlan, timeout_s: float) -> Optional[float]:
    """The most the side's hardware can bill in one run: its hourly price for the timeout and KubeRay's minute."""
    return None if side.hourly is None else side.hourly * (timeout_s + TTL_AFTER_FINISHED_S) / 3600.0


def lines(plan: dict, found: list[SidePlan], run_id: str, seed: int, timeout_s: float) -> list[str]:
    region = (plan.get("cost") or {}).get("region")
    out = [f"Dry run of comparison {run_id}: nothing is created. A live run (--context CTX) would create, per side:"]
    total = 0.0
    for side in found:
        job = run_manifest(side, run_id, seed=seed)
        top = ceiling(side, timeout_s)
        total += top or 0.0
        price = "no price in the plan" if side.hourly is None else f"${side.hourly:,.2f}/hour"
        most = "unknown" if top is None else f"${top:,.2f}"
        out += [
            f"- {side.name}: RayJob {job['metadata']['namespace']}/{job['metadata']['name']} (not suspended), "
            f"{side.kind.upper()} {side.accelerator} on {side.item} ({side.nodes} node(s), {side.capacity})",
            f"    image {', '.join(side.images) or '?'}",
            f"    entrypoint {job['spec']['entrypoint']}",
            "    runtime environment " + " ".join(f"{k}={v}" for k, v in sorted(_env_vars(job).items())),
            f"    quota {quota_need(side, region)}",
            f"    cost ceiling {most} ({price} x ({timeout_s:.0f} s --timeout + {TTL_AFTER_FINISHED_S} s until "
            "KubeRay deletes the Ray cluster))",
        ]
    out.append(
        f"Cost ceiling of the run: ${total:,.2f} for {len(found)} side(s). The run stops following its jobs "
        "after --timeout and deletes them (unless --keep-jobs); not counted: the minutes the cluster "
        "autoscaler takes to remove an emptied node (--wait-for-removal measures them)."
    )
    return out


def main(plan: dict, found: list[SidePlan], run_id: str, seed: int, timeout_s: float, stream=None) -> int:
    for line in lines(plan, found, run_id, seed, timeout_s):
        print(line, file=stream or sys.stdout)
    return 0
