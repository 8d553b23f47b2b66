"""When and how GKE upgrades a stack's cluster and node pools, as plain data (pure: no Pulumi import): the cluster's
maintenance policy (`cluster.maintenance`) and each TPU or GPU pool's upgrade settings.

A node upgrade recreates a node; on a multi-host TPU slice the hosts share one lifecycle (GKE "Perform host maintenance
for nodes running training and inference workloads": the nodes of a multi-host TPU slice node pool "have a shared
lifecycle"), so upgrading one host stops the whole slice. The maintenance policy governs GKE's own maintenance only:
a window for when GKE may upgrade and, for environments that train, an exclusion of node upgrades (scope
NO_MINOR_OR_NODE_UPGRADES), lifted by the runbook (docs/operations.md, "Upgrading the version set"). It does not
govern Compute Engine's host maintenance of the TPU and GPU VMs, which stops a slice on Compute Engine's schedule
whatever the window (GKE "Maintenance windows and exclusions": they "don't impact the timing of maintenance for
services on which GKE depends, including Compute Engine"); that is announced ahead ("View maintenance
notifications", Cloud TPU) and shows on the slice's alerts (MaintenanceTaint, RebootEvent).
"""

from __future__ import annotations

from typing import Optional

from ..spec.models import GpuPoolConfig, TpuSliceConfig
from ..spec.operations import MaintenanceConfig


def maintenance_policy(maintenance: Optional[MaintenanceConfig]) -> Optional[dict]:
    """The cluster's maintenancePolicy (pulumi-gcp 10.2 ClusterMaintenancePolicy: recurringWindow and
    maintenanceExclusions, times in UTC as GKE returns them), or None: GKE upgrades at any time."""
    if maintenance is None or (maintenance.window is None and not maintenance.exclusions):
        return None
    policy: dict = {}
    if maintenance.window is not None:
        w = maintenance.window
        policy["recurringWindow"] = {"startTime": w.start_time, "endTime": w.end_time, "recurrence": w.recurrence}
    if maintenance.exclusions:
        policy["maintenanceExclusions"] = [
            {
                "exclusionName": e.name,
                "startTime": e.start_time,
                **({"endTime": e.end_time} if e.end_time else {}),
                # GKE API MaintenanceExclusionOptions: scope, and end_time_behavior UNTIL_END_OF_SUPPORT.
                "exclusionOptions": {
                    "scope": e.scope,
                    **({"endTimeBehavior": "UNTIL_END_OF_SUPPORT"} if e.until_end_of_support else {}),
                },
            }
            for e in maintenance.exclusions
        ]
    return policy


# Fixed-capacity surge: no extra node, one node down at a time (GKE "Node upgrade strategies", surge upgrades, "upgrade
# using fixed capacity for resource-constrained environments"). TPU and GPU capacity is scarce (quota, a reservation
# sized to the pool, stockouts), so a surge node may never come and would block the upgrade.
FIXED_CAPACITY = {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


def upgrade_settings(entry: TpuSliceConfig | GpuPoolConfig) -> Optional[dict]:
    """A TPU or GPU pool's upgradeSettings (pulumi-gcp 10.2 NodePoolUpgradeSettings), or None to leave GKE's.

    - The entry's own `upgrade`, when given.
    - Flex-start: None. GKE upgrades flex-start nodes with its short-lived strategy and no other ("Node upgrade
      strategies": "For nodes that use Flex-start VMs, GKE uses short-lived upgrades").
    - A multi-host TPU slice: None. Its hosts share one lifecycle, so any node upgrade stops the slice whatever the
      surge settings; no GKE page read says which maxSurge/maxUnavailable a multi-host pool honours, so none is
      claimed. The maintenance exclusion is what holds GKE's node upgrades back from a running slice.
    - Single-host TPU and GPU pools: FIXED_CAPACITY.
    """
    if entry.upgrade is not None:
        return {
            "strategy": "SURGE",
            "maxSurge": entry.upgrade.max_surge,
            "maxUnavailable": entry.upgrade.max_unavailable,
        }
    if entry.capacity == "flexStart":
        return None
    if isinstance(entry, TpuSliceConfig) and entry.shape.multi_host:
        return None
    return dict(FIXED_CAPACITY)
