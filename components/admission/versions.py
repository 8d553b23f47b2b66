"""Locations, networks and GKE versions, and the GKE versions each feature needs."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable

from .. import catalog
from .rules import rule

__all__ = [
    "is_zone",
    "region_of",
    "check_zone",
    "check_location",
    "check_cidr",
    "GKE_VERSION_PIN",
    "check_gke_version_pin",
    "version_key",
    "is_minor_alias",
    "RAY_OPERATOR",
    "FLEX_START",
    "TPU_GENERATION",
    "AUTOPILOT_COMPUTE_CLASS",
    "RAY_OPERATOR_MIN_GKE_VERSION",
    "FLEX_START_MIN_GKE_VERSION",
    "AUTOPILOT_COMPUTE_CLASS_MIN_GKE_VERSION",
    "VersionNeed",
    "gke_version_needs",
    "newest",
    "version_satisfies",
    "FLEX_START_ZONES",
    "FLEX_START_UNSUPPORTED",
]


# --- locations, networks, versions ---------------------------------------------------------------------------------

_ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]")
_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")


def is_zone(value: str) -> bool:
    return bool(_ZONE.fullmatch(value))


def region_of(location: str) -> str:
    return location.rsplit("-", 1)[0] if is_zone(location) else location


def check_zone(value: str) -> None:
    if not is_zone(value):
        raise ValueError("must be a zone such as us-east5-b")


def check_location(value: str) -> None:
    if not (is_zone(value) or _REGION.fullmatch(value)):
        raise ValueError("must be a zone (us-east5-b) or a region (us-east5)")


def check_cidr(value: str) -> None:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError:
        network = None
    if network is None or "/" not in value or not value.isascii():
        raise ValueError("must be a CIDR range with its prefix length, such as 10.16.0.0/14")


_GKE_VERSION = re.compile(r"1\.[0-9]{2}(\.[0-9]+(-gke\.[0-9]+)?)?")

GKE_VERSION_PIN = rule(
    "gke-version-pin",
    "A minMasterVersion pin is a minor alias (1.34) or an exact GKE version (1.34.1-gke.3084001) "
    "and is never older than any feature the stack uses needs. Unset, the release channel picks the version; the "
    "deploy-time check compares the channel's default with those minimums before the cluster is created.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels; pulumi-gcp ClusterArgs."
    "min_master_version; gcp.container.get_engine_versions",
)


def check_gke_version_pin(value: str) -> None:
    if not _GKE_VERSION.fullmatch(value):
        raise ValueError("must be a GKE version: a minor such as 1.34, or an exact version such as 1.34.1-gke.3084001")


def version_key(version: str) -> tuple[int, ...]:
    return catalog.parse_gke_version(version)


def is_minor_alias(version: str) -> bool:
    return version.count(".") == 1


# --- GKE features and the versions they need -----------------------------------------------------------------------

RAY_OPERATOR = rule(
    "gke-ray-operator-version",
    "The Ray Operator add-on needs GKE 1.30.0-gke.1747000 or later.",
    "https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/concepts/overview",
)
FLEX_START = rule(
    "gke-flex-start-tpu-version",
    "Flex-start TPU node pools and flex-start ComputeClasses need GKE "
    "1.33.0-gke.1712000 or later; not every zone offers flex-start for every generation.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/flex-start-vms (About flex-start provisioning mode)",
)
TPU_GENERATION = rule(
    "gke-tpu-generation-version",
    "Each TPU generation needs a minimum GKE version, Autopilot sometimes a newer one "
    "(catalogue: Generation.min_gke_version).",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus",
)
AUTOPILOT_COMPUTE_CLASS = rule(
    "gke-autopilot-compute-class-version",
    "Autopilot custom ComputeClasses with TPU priorities need GKE 1.30.3-gke.1451000 or later.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes",
)

RAY_OPERATOR_MIN_GKE_VERSION = "1.30.0-gke.1747000"
FLEX_START_MIN_GKE_VERSION = "1.33.0-gke.1712000"
AUTOPILOT_COMPUTE_CLASS_MIN_GKE_VERSION = "1.30.3-gke.1451000"


@dataclass(frozen=True)
class VersionNeed:
    version: str
    reason: str


def gke_version_needs(generation: str, capacity: str, autopilot: bool) -> list[VersionNeed]:
    """Every minimum GKE version one slice of this generation and capacity needs, with why."""
    gen = catalog.generation(generation)
    needs = [VersionNeed(RAY_OPERATOR_MIN_GKE_VERSION, "the Ray Operator add-on")]
    if autopilot and gen.min_gke_version_autopilot:
        needs.append(VersionNeed(gen.min_gke_version_autopilot, f"TPU {generation} in Autopilot"))
    else:
        needs.append(VersionNeed(gen.min_gke_version, f"TPU {generation}"))
    if capacity == "flexStart":
        needs.append(VersionNeed(FLEX_START_MIN_GKE_VERSION, "flex-start TPUs"))
        if autopilot:
            needs.append(VersionNeed(AUTOPILOT_COMPUTE_CLASS_MIN_GKE_VERSION, "Autopilot ComputeClasses"))
    return needs


def newest(needs: Iterable[VersionNeed]) -> VersionNeed:
    return max(needs, key=lambda n: version_key(n.version))


def version_satisfies(version: str, need: str) -> bool:
    """Whether a GKE version is at least `need`. A minor alias (1.34) stands for the newest patch GKE offers of that
    minor, so offline it is judged by its minor; the deploy-time check reads the patch it resolves to."""
    if is_minor_alias(version):
        return version_key(version)[:2] >= version_key(need)[:2]
    return version_key(version) >= version_key(need)


# Zones that offer flex-start for TPUs (GKE "About flex-start provisioning mode", availability). A zone outside the
# list is a warning: availability changes, and the deploy fails clearly if the zone has none.
# The same page: "TPU v3 and v4 are not supported"; tpu7x is not listed (a warning, not an error).
FLEX_START_ZONES: dict[str, tuple[str, ...]] = {
    "v5e": ("us-west4-a",),
    "v5p": ("us-east5-a",),
    "v6e": ("asia-northeast1-b", "us-east5-a", "us-east5-b"),
}
FLEX_START_UNSUPPORTED = ("v4",)
