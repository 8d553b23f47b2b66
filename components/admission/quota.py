"""Quota: the Cloud Quotas IDs a TPU or GPU node pool draws on, and the shortfalls of a stack's needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from .rules import rule

__all__ = ["QUOTA", "QuotaId", "TPU_QUOTA_IDS", "QuotaNeed", "tpu_quota_need", "quota_shortfalls"]


# --- quota ---------------------------------------------------------------------------------------------------------

QUOTA = rule(
    "gcp-tpu-quota", "TPU node pools draw on the project's per-region Compute Engine TPU quota for their generation "
    "(preemptible quota for spot and flex-start); a pool beyond it fails at create.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#ensure-quota; Cloud Quotas API "
    "(gcp.cloudquota.get_s_quota_infos)")


@dataclass(frozen=True)
class QuotaId:
    quota_id: str
    dimensions: tuple[tuple[str, str], ...] = ()  # e.g. (("tpu_family", "CT6E"),)

    def __str__(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.dimensions)
        return f"{self.quota_id}{extra}"


# Cloud Quotas IDs of compute.googleapis.com, per generation: (on-demand, preemptible: spot and flex-start).
# Taken from what `gcloud`/the Cloud Quotas API report in public projects (the GKE quota table itself could not be
# read back); the deploy-time check warns, never guesses, when a project does not list an ID.
TPU_QUOTA_IDS: dict[str, tuple[Optional[QuotaId], Optional[QuotaId]]] = {
    "v5e": (QuotaId("TPU-LITE-PODSLICE-V5-per-project-region"),
            QuotaId("PREEMPTIBLE-TPU-LITE-PODSLICE-V5-per-project-region")),
    "v5p": (QuotaId("TPU-V5P-per-project-region"), QuotaId("PREEMPTIBLE-TPU-V5P-per-project-region")),
    "v6e": (QuotaId("TPUS-PER-TPU-FAMILY-per-project-region", (("tpu_family", "CT6E"),)),
            QuotaId("PREEMPTIBLE-TPU-V6E-per-project-region")),
    "v4": (None, None),  # no source found for v4's IDs: the deploy-time check warns
    "tpu7x": (None, None),
}


@dataclass(frozen=True)
class QuotaNeed:
    quota: Optional[QuotaId]
    region: str
    chips: int  # TPU chips, or GPUs (unit)
    who: str
    unit: str = "TPU chips"

    @property
    def key(self) -> str:
        return str(self.quota) if self.quota else "unknown"


def tpu_quota_need(generation: str, capacity: str, chips: int, region: str, who: str) -> Optional[QuotaNeed]:
    """The quota a slice draws on, or None where it draws on none (a reservation's capacity is already granted)."""
    if capacity == "reservation":
        return None
    on_demand, preemptible = TPU_QUOTA_IDS.get(generation, (None, None))
    return QuotaNeed(on_demand if capacity == "onDemand" else preemptible, region, chips, who)


def quota_shortfalls(needs: Iterable[QuotaNeed],
                     available: dict[tuple[str, str], float]) -> tuple[list[str], list[str]]:
    """(errors, warnings) for needs against what a project has: `available[(quota key, region)]`."""
    totals: dict[tuple[str, str], list[QuotaNeed]] = {}
    for need in needs:
        totals.setdefault((need.key, need.region), []).append(need)
    errors, warnings = [], []
    for (key, region), group in sorted(totals.items()):
        chips = sum(n.chips for n in group)
        who = ", ".join(n.who for n in group)
        unit = group[0].unit
        if key == "unknown" or (key, region) not in available:
            warnings.append(f"quota {key} in {region}: not found in the project's quotas; check that it allows "
                            f"{chips} {unit} ({who})")
        elif available[(key, region)] < chips:
            errors.append(f"quota {key} in {region}: the project has {available[(key, region)]:g} {unit}, the stack "
                          f"needs {chips} ({who}); request more in the console (IAM & Admin > Quotas) or shrink the "
                          "slices and pools")
    return errors, warnings




