"""The validated forms of the keys that operate a stack's slices (pure: no Pulumi import): the in-cluster slice check
(`monitoring.sliceHealth`), the cluster's maintenance windows and exclusions (`cluster.maintenance`) and the node
pools' upgrade settings (`tpuSlices[].upgrade`, `gpuPools[].upgrade`). Each rule a service enforces cites it."""

from __future__ import annotations

import datetime
import re
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .. import admission


class _Model(BaseModel):
    # The same spelling rules as model_types.Model (camelCase in stack files, snake_case in arguments, unknown keys
    # refused); kept apart so that models.py can hold these sections without an import cycle.
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, validate_by_alias=True, validate_by_name=False, frozen=True
    )


# --- monitoring.sliceHealth ---------------------------------------------------------------------------------------


def check_cron(value: str) -> None:
    """A CronJob schedule Kubernetes accepts (admission.CRON_SCHEDULE: robfig/cron v3's parser)."""
    admission.parse_cron(value)


def cron_interval_minutes(schedule: str) -> Optional[int]:
    """The longest time between two runs of a valid schedule, in minutes (every run of `*/5 * * * *` is 5 apart)."""
    return admission.longest_gap_minutes(admission.parse_cron(schedule))


class SliceHealthConfig(_Model):
    """The in-cluster check of every TPU slice (components/resources/health.py), when monitoring is on."""

    enabled: StrictBool = True
    """Run the check (default true, when monitoring is on)."""
    schedule: str = "*/5 * * * *"
    """When the check runs (CronJob schedule, UTC)."""
    alert_after_minutes: Annotated[StrictInt, Field(ge=5, le=1440)] = 15
    """How long a slice may be wrong before its alert fires."""
    image: Optional[str] = None
    """The workloads image (workloads/Dockerfile) the check runs in; default: the image of a Ray object of the stack
    that runs on a TPU slice in the repository's workloads image."""

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        check_cron(value)
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            admission.check_image(value)
        return value

    @model_validator(mode="after")
    def _alert_after_runs(self) -> "SliceHealthConfig":
        # Each run writes one point per slice: an alert that fires sooner than two runs apart would fire on one run.
        interval = cron_interval_minutes(self.schedule)
        if interval is not None and self.alert_after_minutes < 2 * interval:
            raise ValueError(
                f"alertAfterMinutes {self.alert_after_minutes} is shorter than two runs of the schedule "
                f"{self.schedule!r} ({2 * interval} minutes)"
            )
        # The silence condition waits twice the duration, in whole windows: within Cloud Monitoring's longest absence.
        most = admission.max_slice_check_alert_minutes(interval) if interval is not None else None
        if interval is not None and most is not None and self.alert_after_minutes > most:
            silence = 2 * admission.slice_check_windows(self.alert_after_minutes, interval)[1] // 60
            allowed = (
                f"at most {most} with the schedule {self.schedule!r}"
                if most >= 2 * interval
                else "a schedule whose runs are closer together"
            )
            raise ValueError(
                f"alertAfterMinutes {self.alert_after_minutes} makes the alert on a silent slice check wait {silence} "
                f"minutes, longer than a metric-absence condition may ({admission.MAX_ABSENCE_SECONDS // 60} minutes, "
                f"{admission.ALERT_ABSENCE_MAXIMUM.id}); allowed: {allowed}"
            )
        return self


# --- cluster.maintenance -----------------------------------------------------------------------------------------


def _utc(value: str) -> datetime.datetime:
    # pulumi-gcp 10.2 ClusterMaintenancePolicy: "GKE may accept other formats, but will return values in UTC, causing a
    # permanent diff", so only RFC 3339 UTC times ending in Z are taken.
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", value):
        raise ValueError(f"{value!r} is not an RFC 3339 UTC time such as 2026-01-03T02:00:00Z")
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
MIN_WINDOW = datetime.timedelta(hours=4)  # GKE "Maintenance windows and exclusions": windows of at least 4 hours
MIN_AVAILABLE_PER_32_DAYS = datetime.timedelta(hours=48)  # ... giving at least 48 hours in any 32 days
MAX_EXCLUSIONS = 20  # pulumi-gcp 10.2 maintenance_exclusions: "up to 20 maintenance exclusions at a time"
MAX_NO_UPGRADES = datetime.timedelta(days=30)  # GKE: a "no upgrades" exclusion lasts at most 30 days


def fewest_days_in_32(byday: list[str]) -> int:
    """The fewest days of these weekdays in any 32 consecutive days: four whole weeks, and the four days left over
    placed where they hold the fewest (SA,SU: 8, when the extra days run Monday to Thursday)."""
    wanted = {WEEKDAYS.index(day) for day in byday}
    return 4 * len(wanted) + min(sum((start + k) % 7 in wanted for k in range(4)) for start in range(7))


class MaintenanceWindow(_Model):
    """A recurring window in which GKE may upgrade the cluster (GKE API RecurringTimeWindow)."""

    start_time: str
    """When the first window starts: an RFC 3339 UTC time such as 2026-01-03T02:00:00Z."""
    end_time: str
    """Only its distance from start_time counts: the window's length."""
    recurrence: str = "FREQ=WEEKLY;BYDAY=SA,SU"
    """An RFC 5545 RRULE of FREQ=DAILY, or FREQ=WEEKLY with BYDAY."""

    @model_validator(mode="after")
    def _window(self) -> "MaintenanceWindow":
        start, end = _utc(self.start_time), _utc(self.end_time)
        length = end - start
        if length < MIN_WINDOW or length > datetime.timedelta(days=1):
            raise ValueError(
                f"the window lasts {length}; GKE needs at least 4 hours (and this project takes at most "
                "24, one day of a recurrence)"
            )
        rule = dict(part.split("=", 1) for part in self.recurrence.split(";") if "=" in part)
        frequency = rule.get("FREQ")
        if frequency == "DAILY" and set(rule) == {"FREQ"}:
            days = 32
        elif frequency == "WEEKLY" and set(rule) == {"FREQ", "BYDAY"} and rule["BYDAY"]:
            byday = rule["BYDAY"].split(",")
            if any(day not in WEEKDAYS for day in byday) or len(set(byday)) != len(byday):
                raise ValueError(f"BYDAY {rule['BYDAY']!r}: days are {', '.join(WEEKDAYS)}, each once")
            days = fewest_days_in_32(byday)
        else:
            raise ValueError(
                f"recurrence {self.recurrence!r}: allowed FREQ=DAILY or FREQ=WEEKLY;BYDAY=<days> "
                "(GKE does not take SECONDLY, MINUTELY or HOURLY)"
            )
        if length * days < MIN_AVAILABLE_PER_32_DAYS:
            raise ValueError(f"{length} on {days} days gives {length * days} in 32 days; GKE needs at least 48 hours")
        return self


class MaintenanceExclusion(_Model):
    """A time in which GKE does not upgrade what `scope` names (GKE API MaintenanceExclusionOptions.Scope)."""

    name: Annotated[str, Field(min_length=1, max_length=63)]
    """The exclusion's name, unique in the cluster."""
    start_time: str
    """When the exclusion starts: an RFC 3339 UTC time."""
    end_time: Optional[str] = None
    """When it ends: an RFC 3339 UTC time (or untilEndOfSupport)."""
    until_end_of_support: StrictBool = False
    """Instead of end_time: until the cluster's minor version leaves support (NO_MINOR_* scopes only)."""
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = "NO_MINOR_OR_NODE_UPGRADES"
    """NO_MINOR_OR_NODE_UPGRADES (default): no node upgrades (which recreate a multi-host slice), only control
    plane patches; NO_MINOR_UPGRADES: patches only; NO_UPGRADES: nothing, at most 30 days."""

    @model_validator(mode="after")
    def _exclusion(self) -> "MaintenanceExclusion":
        start = _utc(self.start_time)
        # pulumi-gcp 10.2: "Exactly one of end_time and exclusion_options.end_time_behavior".
        if (self.end_time is None) == (not self.until_end_of_support):
            raise ValueError("give exactly one of endTime and untilEndOfSupport: true")
        if self.until_end_of_support and self.scope == "NO_UPGRADES":
            raise ValueError(
                "untilEndOfSupport needs scope NO_MINOR_UPGRADES or NO_MINOR_OR_NODE_UPGRADES; "
                "NO_UPGRADES lasts at most 30 days"
            )
        if self.end_time is not None:
            end = _utc(self.end_time)
            if end <= start:
                raise ValueError(f"endTime {self.end_time} is not after startTime {self.start_time}")
            if self.scope == "NO_UPGRADES" and end - start > MAX_NO_UPGRADES:
                raise ValueError(f"a NO_UPGRADES exclusion lasts at most 30 days ({end - start} given)")
        return self


class MaintenanceConfig(_Model):
    """When GKE may upgrade the cluster and its node pools, and when not."""

    window: Optional[MaintenanceWindow] = None
    """The recurring maintenance window; unset: GKE may upgrade at any time."""
    exclusions: Annotated[list[MaintenanceExclusion], Field(max_length=MAX_EXCLUSIONS)] = []
    """Times without upgrades (at most 20)."""

    @model_validator(mode="after")
    def _exclusions_need_a_window(self) -> "MaintenanceConfig":
        # pulumi-gcp 10.2 ClusterMaintenancePolicy: "one of recurring_window, recurring_maintenance_window and
        # daily_maintenance_window is required if a maintenance_policy block is supplied".
        if self.exclusions and self.window is None:
            raise ValueError(
                "exclusions need a window: GKE's maintenance policy holds exactly one window beside "
                "its exclusions; add window: {startTime, endTime, recurrence}"
            )
        return self

    @field_validator("exclusions")
    @classmethod
    def _unique(cls, value: list[MaintenanceExclusion]) -> list[MaintenanceExclusion]:
        names = [e.name for e in value]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise ValueError(f"two exclusions are named {duplicate!r}")
        return value


# --- tpuSlices[].upgrade, gpuPools[].upgrade ----------------------------------------------------------------------


class UpgradeConfig(_Model):
    """How GKE upgrades a node pool's nodes (GKE API NodePool.UpgradeSettings, strategy SURGE): maxSurge extra nodes
    at a time and maxUnavailable nodes down at a time; at least one above zero ("must not be negative and at least
    one of them must be greater than zero", pulumi-gcp 10.2 NodePoolUpgradeSettings)."""

    max_surge: Annotated[StrictInt, Field(ge=0, le=100)] = 0
    """Extra nodes created at a time during an upgrade (default 0)."""
    max_unavailable: Annotated[StrictInt, Field(ge=0, le=100)] = 1
    """Nodes taken down at a time during an upgrade (default 1)."""

    @model_validator(mode="after")
    def _some(self) -> "UpgradeConfig":
        if self.max_surge == 0 and self.max_unavailable == 0:
            raise ValueError("maxSurge and maxUnavailable are both 0: at least one must be above 0")
        return self


# --- the version set: what an image's tag says ------------------------------------------------------------------------

# Ray's own images are tagged <ray version>[-<python or variant>] (Docker Hub rayproject/ray, e.g. 2.55.0-py311), and
# the repository's workloads images <ray version> (docs/workloads.md, workloads/cloudbuild.yaml).
RAY_IMAGES = ("rayproject/ray", "docker.io/rayproject/ray", "rayproject/ray-ml", "docker.io/rayproject/ray-ml")
WORKLOADS_REPOSITORIES = ("/ray-tpu-gke/workloads-tpu", "/ray-tpu-gke/workloads-gpu")
# Images that hold vLLM and Ray Serve LLM, tagged <ray version>[-...] too: Ray's own rayproject/ray-llm (vLLM's CUDA
# build; Docker Hub tags such as 2.60.0-py311-cu128) and the repository's llm-tpu image (workloads/Dockerfile.llm-tpu:
# vllm/vllm-tpu with ray[llm]).
RAY_LLM_IMAGES = ("rayproject/ray-llm", "docker.io/rayproject/ray-llm")
LLM_TPU_REPOSITORY = "/ray-tpu-gke/llm-tpu"


def _split_image(image: str) -> tuple[str, str]:
    name = image.split("@", 1)[0]
    repository, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    return repository, tag


def is_workloads_image(image: str) -> bool:
    """The repository's workloads image (workloads/Dockerfile), which has JAX, libtpu and the workloads package."""
    return _split_image(image)[0].endswith(WORKLOADS_REPOSITORIES)


def image_ray_version(image: str) -> Optional[str]:
    """The Ray version an image's tag names, for Ray's own images and the workloads images; None for any other."""
    repository, tag = _split_image(image)
    known = repository in RAY_IMAGES + RAY_LLM_IMAGES or repository.endswith(WORKLOADS_REPOSITORIES)
    if not (known or repository.endswith(LLM_TPU_REPOSITORY)):
        return None
    match = re.match(r"(\d+\.\d+\.\d+)(?:-|$)", tag)
    return match.group(1) if match else None


def check_ray_version_of_image(ray_version: str, image: str) -> None:
    """A rayVersion the image's tag contradicts is refused: KubeRay and the autoscaler act on rayVersion while the
    pods run the image's Ray (KubeRay RayClusterSpec.rayVersion: "the version of Ray you are using")."""
    tagged = image_ray_version(image)
    if tagged is not None and tagged != ray_version:
        raise ValueError(
            f"{ray_version} contradicts the image {image}, which is Ray {tagged}: set rayVersion to "
            f"{tagged} or use the image of Ray {ray_version}"
        )


def is_plain_ray_image(image: str) -> bool:
    """Ray's own rayproject/ray and ray-ml images: Ray alone, with neither vLLM nor Ray Serve LLM's dependencies."""
    return _split_image(image)[0] in RAY_IMAGES


def lacks_jax(image: str) -> bool:
    """Ray's own images hold Ray and its dependencies, no JAX: the workloads image installs jax[tpu] on top of
    rayproject/ray (workloads/Dockerfile)."""
    return _split_image(image)[0] in RAY_IMAGES
