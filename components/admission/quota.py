"""Quota: the Cloud Quotas IDs a TPU or GPU node pool draws on, what a project's `QuotaInfo`s grant in a region, and
the shortfalls of a stack's needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from .rules import rule

__all__ = [
    "QUOTA",
    "QuotaId",
    "TPU_QUOTA_IDS",
    "QuotaNeed",
    "tpu_quota_need",
    "quota_shortfalls",
    "UNLIMITED",
    "quota_value",
    "project_quota",
    "check_quota",
]


# --- quota ---------------------------------------------------------------------------------------------------------

QUOTA = rule(
    "gcp-tpu-quota",
    "TPU and GPU node pools draw on the project's per-region Compute Engine quota for their "
    "accelerator (preemptible quota for spot and flex-start); a pool beyond it fails at create. A region without an "
    "entry of its own has the quota's default (the entry without a region that lists it in applicableLocations); -1 "
    "is unlimited; a region no entry covers has none.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#ensure-quota; Cloud Quotas API v1 QuotaInfo "
    "and DimensionsInfo (googleapis google/api/cloudquotas/v1/resources.proto); gcp.cloudquota.get_s_quota_infos",
)


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
    "v5e": (
        QuotaId("TPU-LITE-PODSLICE-V5-per-project-region"),
        QuotaId("PREEMPTIBLE-TPU-LITE-PODSLICE-V5-per-project-region"),
    ),
    "v5p": (QuotaId("TPU-V5P-per-project-region"), QuotaId("PREEMPTIBLE-TPU-V5P-per-project-region")),
    "v6e": (
        QuotaId("TPUS-PER-TPU-FAMILY-per-project-region", (("tpu_family", "CT6E"),)),
        QuotaId("PREEMPTIBLE-TPU-V6E-per-project-region"),
    ),
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


# --- what a project's QuotaInfos grant -----------------------------------------------------------------------------

UNLIMITED = math.inf  # a quota value of -1 (Cloud Quotas v1 QuotaConfig.preferred_value: "-1 ... "unlimited"")


def _get(value: Any, name: str) -> Any:
    """A field of a QuotaInfo part: a typed invoke result (snake_case attributes), a mapping in snake_case (an
    output's plain value) or in camelCase (the REST/`gcloud --format=json` document)."""
    if isinstance(value, Mapping):
        camel = name.split("_")[0] + "".join(part.title() for part in name.split("_")[1:])
        return value.get(camel, value.get(name))
    return getattr(value, name, None)


def _details_value(details: Any) -> float:
    """`details.value`, an int64 that proto3 JSON writes as a string and omits when it is 0 (`"details": {}`); the
    Pulumi invoke hands `details` as a one-element list."""
    if isinstance(details, (list, tuple)):
        details = details[0] if details else None
    raw = _get(details, "value") if details is not None else None
    value = int(str(raw)) if raw not in (None, "") else 0
    return UNLIMITED if value == -1 else float(value)


def quota_value(info: Any, region: str, dimensions: Iterable[tuple[str, str]] = ()) -> float:
    """What one QuotaInfo grants in `region` for the service-specific `dimensions` (e.g. tpu_family=CT6E).

    Cloud Quotas v1 `DimensionsInfo.dimensions`: a dimension absent from an entry's map means the entry "applies to
    all the dimension values except for those that have another DimensionsInfo instance configured for the specific
    value"; `applicable_locations` lists the regions it applies to (["global"] for quotas not per region). So the
    entry without `region` is the default of every region it lists, and an entry naming the region overrides it: the
    most specific matching entry wins (the API orders them "from more specific ones to less specific ones"; between
    one naming only the region and one naming only the family, the region's wins: "Dimension precedence",
    https://cloud.google.com/docs/quotas/configure-dimensions). No matching entry: the region has none (0). -1:
    unlimited.
    """
    wanted = {"region": region, **dict(dimensions)}
    best, best_rank = None, (-1, False)
    for entry in _get(info, "dimensions_infos") or []:
        dims = dict(_get(entry, "dimensions") or {})
        if any(wanted.get(key) != value for key, value in dims.items()):
            continue  # an entry for another region or another family
        locations = list(_get(entry, "applicable_locations") or [])
        if locations and region not in locations and "global" not in locations:
            continue
        rank = (len(dims), "region" in dims)
        if rank > best_rank:  # the first of the most specific, as the API orders them
            best, best_rank = entry, rank
    return 0.0 if best is None else _details_value(_get(best, "details"))


def project_quota(quota_infos: Iterable[Any], needs: Iterable[QuotaNeed]) -> dict[tuple[str, str], float]:
    """`{(need key, region): what the project has}` for every need whose quota ID the project lists; a quota ID the
    project does not list at all is left out (unknown, a warning), never taken as zero."""
    by_id: dict[Any, Any] = {}
    for info in quota_infos or []:
        by_id.setdefault(_get(info, "quota_id"), info)
    out = {}
    for need in needs:
        if need.quota is None or need.quota.quota_id not in by_id:
            continue
        out[(need.key, need.region)] = quota_value(by_id[need.quota.quota_id], need.region, need.quota.dimensions)
    return out


def _amount(value: float) -> str:
    return "unlimited" if value == UNLIMITED else f"{value:g}"


def quota_shortfalls(
    needs: Iterable[QuotaNeed], available: dict[tuple[str, str], float]
) -> tuple[list[str], list[str]]:
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
            warnings.append(
                f"quota {key} in {region}: not found in the project's quotas; check that it allows "
                f"{chips} {unit} ({who})"
            )
        elif available[(key, region)] < chips:
            errors.append(
                f"quota {key} in {region}: the project has {_amount(available[(key, region)])} {unit}, "
                f"the stack needs {chips} ({who}); request more in the console (IAM & Admin > Quotas) or "
                "shrink the slices and pools"
            )
    return errors, warnings


def check_quota(needs: Iterable[QuotaNeed], quota_infos: Iterable[Any]) -> tuple[list[str], list[str]]:
    """(errors, warnings) for needs against a project's QuotaInfos of compute.googleapis.com."""
    needs = list(needs)
    return quota_shortfalls(needs, project_quota(quota_infos, needs))
