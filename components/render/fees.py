"""The GKE cluster management fee: what a cluster costs by itself, before any node, and the free tier's credit.

Pure (no Pulumi import). Google Kubernetes Engine pricing (https://cloud.google.com/kubernetes-engine/pricing,
"Cluster management fee and free tier"): "A flat cluster management fee of $0.10 per cluster per hour (charged in 1
second increments) applies to all GKE clusters irrespective of the mode of operation, cluster size, or topology";
"The GKE free tier provides $74.40 in monthly credits per billing account ... Free tier credits are only applied to
zonal and Autopilot clusters" (not to regional Standard clusters); unused credit is not rolled over. The credit is
per billing account, which a stack does not know (another cluster may use it), so the fee counts in full in every
total and the credit is stated beside it, never subtracted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from ..catalog.prices import HOURS_PER_MONTH, _number

GKE_PRICING = "https://cloud.google.com/kubernetes-engine/pricing"
CLUSTER_FEE_HOURLY = Decimal("0.10")  # GKE pricing: $0.10 per cluster per hour, every mode
FREE_TIER_MONTHLY_CREDIT = Decimal("74.40")  # GKE pricing: $74.40 a month per billing account
FEE_AS_OF = date(2026, 12, 1)  # the day the pricing page's text above was read
KIND = "gkeClusterFee"


@dataclass(frozen=True)
class ClusterFee:
    """The management fee of one GKE cluster; `credit_eligible` where the free tier's credit can apply to it."""

    cluster: str
    mode: str  # "standard" | "autopilot"
    location: str
    zonal: bool
    hourly: Decimal = CLUSTER_FEE_HOURLY

    kind = KIND

    @property
    def name(self) -> str:
        return self.cluster

    @property
    def credit_eligible(self) -> bool:
        return self.mode == "autopilot" or self.zonal

    @property
    def monthly(self) -> Decimal:
        return self.hourly * HOURS_PER_MONTH

    @property
    def credit_rule(self) -> str:
        where = (
            "an Autopilot cluster"
            if self.mode == "autopilot"
            else ("a zonal Standard cluster" if self.zonal else "a regional Standard cluster")
        )
        if not self.credit_eligible:
            return f"{where}: the free tier's credit does not apply to it"
        return (
            f"{where}: the free tier's ${FREE_TIER_MONTHLY_CREDIT:.2f}/month credit per billing account may "
            "cover it, if no other cluster of the billing account uses the credit"
        )

    def to_json(self) -> dict:
        return {
            "kind": KIND,
            "name": self.cluster,
            "mode": self.mode,
            "location": self.location,
            "hourly": _number(self.hourly),
            "monthly": _number(self.monthly),
            "freeTierCredit": {
                "eligible": self.credit_eligible,
                "monthly": _number(FREE_TIER_MONTHLY_CREDIT),
                "rule": self.credit_rule,
            },
            "source": GKE_PRICING,
            "asOf": FEE_AS_OF.isoformat(),
        }


def cluster_fee(name: str, mode: str, location: str, zonal: bool) -> ClusterFee:
    return ClusterFee(name, mode, location, zonal)
