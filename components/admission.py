"""What GKE, Compute Engine, Kubernetes, KubeRay and Ray accept: every rule once, each with its source.

Pure (no Pulumi import). Config validation, the components, the policy pack and the tests all ask this module, so a
rule learned once (a label value, a version, what fits a node) holds everywhere. `RULES` lists them for reviewers
(docs/admission.md is generated from it and checked by a test).

Checks raise `ValueError` with a message that says what is allowed; callers add the key path and the value.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from . import catalog


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    source: str


RULES: dict[str, Rule] = {}


def rule(id: str, summary: str, source: str) -> Rule:
    RULES[id] = Rule(id, summary, source)
    return RULES[id]


# --- names and labels ----------------------------------------------------------------------------------------------

K8S_LABEL_VALUE = rule(
    "k8s-label-value", "A label value (and so a node selector value) has at most 63 characters, is empty or starts "
    "and ends with [A-Za-z0-9], with '-', '_', '.' between: no '/'.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set; "
    "apimachinery pkg/api/validate/content/kube.go (labelValueFmt)")
K8S_LABEL_KEY = rule(
    "k8s-label-key", "A label key is an optional DNS-subdomain prefix (at most 253) and '/', then a name of at most "
    "63 characters in the label-value alphabet.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set")
DNS_LABEL = rule(
    "dns-label", "GKE cluster, node pool and KubeRay object names are RFC 1035 labels: lowercase letters, digits "
    "and '-', starting with a letter, not ending with '-'.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#rfc-1035-label-names; GKE cluster "
    "names: at most 40 characters (gcloud container clusters create)")
NAMESPACE = rule(
    "k8s-namespace", "A namespace name is an RFC 1123 label of at most 63 characters; default, kube-system, "
    "kube-public, kube-node-lease and the kube- prefix are Kubernetes' own and never created by a stack.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces")
GCP_LABEL = rule(
    "gcp-label-value", "A Google Cloud label value has at most 63 lowercase letters, digits, '-' and '_'.",
    "https://cloud.google.com/resource-manager/docs/labels-overview#requirements")
SERVICE_ACCOUNT_ID = rule(
    "gcp-service-account-id", "A service account ID has 6 to 30 characters: a lowercase letter, then lowercase "
    "letters, digits and '-', not ending with '-'.",
    "https://cloud.google.com/iam/docs/service-accounts-create#creating (account ID rules)")
IMAGE = rule(
    "image-reference", "A container image is a reference [host[:port]/]path[:tag][@digest] without spaces or "
    "control characters.", "https://github.com/distribution/reference/blob/main/regexp.go")
QUANTITY = rule(
    "k8s-quantity", "CPU and memory are Kubernetes quantities such as 500m, 2, 8Gi.",
    "https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/")

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_RFC1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def check_label_value(value: str) -> None:
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError("must be a Kubernetes label value: at most 63 characters, empty or starting and ending with "
                         "a letter or digit, with '-', '_' and '.' between (no '/')")


def check_label_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (len(name) > 63 or not _LABEL_NAME.fullmatch(name)
            or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)))):
        raise ValueError("must be a Kubernetes label key: [DNS subdomain/]name, the name at most 63 characters")


def check_dns_label(value: str, max_length: int) -> None:
    if len(value) > max_length or not _RFC1035.fullmatch(value):
        raise ValueError(f"must be a DNS label of at most {max_length} characters: lowercase letters, digits and "
                         "'-', starting with a letter and not ending with '-'")


def check_namespace(value: str) -> None:
    if len(value) > 63 or not _RFC1123.fullmatch(value):
        raise ValueError("must be a namespace name: at most 63 lowercase letters, digits and '-', starting and "
                         "ending with a letter or digit")
    if value in RESERVED_NAMESPACES or value.startswith("kube-"):
        raise ValueError(f"is a namespace of Kubernetes itself; use a namespace of your own (not "
                         f"{', '.join(RESERVED_NAMESPACES)} or kube-*)")


def check_gcp_label_value(value: str) -> None:
    if not re.fullmatch(r"[a-z0-9_-]{0,63}", value):
        raise ValueError("must be a label value: at most 63 lowercase letters, digits, '-' and '_'")


_IMAGE = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*"
                    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?")


def check_image(value: str) -> None:
    if not _IMAGE.fullmatch(value):
        raise ValueError("must be an image reference such as rayproject/ray:2.55.0-py311 or "
                         "REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG")


_QUANTITY = re.compile(r"(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def check_quantity(value: str) -> None:
    if not _QUANTITY.fullmatch(value) or parse_quantity(value) <= 0:
        raise ValueError("must be a positive Kubernetes quantity such as 500m, 2, 8Gi")


def parse_quantity(value: str) -> float:
    number, suffix = re.fullmatch(r"([\d.]+)(\D*)", value).groups()
    return float(number) * _SUFFIX[suffix]


def service_account_id(cluster: str, purpose: str) -> str:
    """A service account ID for one purpose of one cluster: `<cluster>-<purpose>` where that is valid, else a
    shortened cluster name with a hash of the whole name, so two clusters never share an ID."""
    plain = f"{cluster}-{purpose}"
    if 6 <= len(plain) <= 30:
        return plain
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:6]
    head = cluster[:30 - len(purpose) - len(digest) - 2].rstrip("-")
    return f"{head}-{digest}-{purpose}"


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
    "gke-version-pin", "A minMasterVersion pin is a minor alias (1.34) or an exact GKE version (1.34.1-gke.3084001) "
    "and is never older than any feature the stack uses needs. Unset, the release channel picks the version; the "
    "deploy-time check compares the channel's default with those minimums before the cluster is created.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels; pulumi-gcp ClusterArgs."
    "min_master_version; gcp.container.get_engine_versions")


def check_gke_version_pin(value: str) -> None:
    if not _GKE_VERSION.fullmatch(value):
        raise ValueError("must be a GKE version: a minor such as 1.34, or an exact version such as "
                         "1.34.1-gke.3084001")


def version_key(version: str) -> tuple[int, ...]:
    return catalog.parse_gke_version(version)


def is_minor_alias(version: str) -> bool:
    return version.count(".") == 1


# --- GKE features and the versions they need -----------------------------------------------------------------------

RAY_OPERATOR = rule(
    "gke-ray-operator-version", "The Ray Operator add-on needs GKE 1.30.0-gke.1747000 or later.",
    "https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/concepts/overview")
FLEX_START = rule(
    "gke-flex-start-tpu-version", "Flex-start TPU node pools and flex-start ComputeClasses need GKE "
    "1.33.0-gke.1712000 or later; not every zone offers flex-start for every generation.",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/flex-start-vms (About flex-start provisioning mode)")
TPU_GENERATION = rule(
    "gke-tpu-generation-version", "Each TPU generation needs a minimum GKE version, Autopilot sometimes a newer one "
    "(catalogue: Generation.min_gke_version).", "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus")
AUTOPILOT_COMPUTE_CLASS = rule(
    "gke-autopilot-compute-class-version", "Autopilot custom ComputeClasses with TPU priorities need GKE "
    "1.30.3-gke.1451000 or later.", "https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes")

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


# --- cluster shape -------------------------------------------------------------------------------------------------

AUTOPILOT_REGIONAL = rule(
    "gke-autopilot-regional", "Autopilot clusters are regional: their location is a region, never a zone.",
    "https://cloud.google.com/kubernetes-engine/docs/resources/autopilot-standard-feature-comparison "
    "(Regional availability); gcloud container clusters create-auto takes --location REGION")
PER_ZONE_LIMITS = rule(
    "gke-autoscaling-total-limits", "min/max node counts of a node pool are per zone; a regional pool without "
    "node locations runs them in every zone, so pools are sized with total limits (GKE 1.24.1+).",
    "pulumi-gcp NodePoolAutoscalingArgs (min_node_count: 'per zone'; total_min_node_count: 'Total ... in the "
    "NodePool'); https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler#minimum_and_maximum_node_pool_size")
MAX_SLICES = rule(
    "gke-node-pools-per-cluster", "A Standard cluster has at most 200 node pools; one tpuSlices entry asks for at most "
    "that many slices (each slice is one pool).",
    "https://cloud.google.com/kubernetes-engine/quotas (Node pools per cluster)")
MAX_SLICES_PER_ENTRY = 200

# Compute Engine machine series whose predefined types the system pool may use, with memory (GB) per vCPU by class.
# https://cloud.google.com/compute/docs/general-purpose-machines (E2, N2, N2D, N4, C3 machine type tables).
_CPU_SERIES = {
    "e2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2d": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n4": {"standard": 4, "highmem": 8, "highcpu": 2},
    "c3": {"standard": 4, "highmem": 8, "highcpu": 2},
}
_CPU_MACHINE = re.compile(r"(e2|n2|n2d|n4|c3)-(standard|highmem|highcpu)-([0-9]+)")


def cpu_machine(name: str) -> Optional[tuple[int, float]]:
    """(vCPUs, memory GiB) of a predefined general-purpose machine type, or None if unknown here."""
    match = _CPU_MACHINE.fullmatch(name)
    if not match:
        return None
    series, kind, vcpus = match.group(1), match.group(2), int(match.group(3))
    return vcpus, float(vcpus * _CPU_SERIES[series][kind])


def check_cpu_machine_type(name: str) -> None:
    if cpu_machine(name) is None or cpu_machine(name)[0] < 2:
        raise ValueError("must be a predefined machine type with at least 2 vCPUs of the E2, N2, N2D, N4 or C3 "
                         "series, such as e2-standard-8 (shared-core types leave no room for Ray heads)")


# --- what fits a node ----------------------------------------------------------------------------------------------

ALLOCATABLE = rule(
    "gke-node-allocatable", "A Standard node allocates its capacity less GKE's reservations: CPU 6% of the first "
    "core, 1% of the next, 0.5% of the next 2, 0.25% above 4; memory 25% of the first 4 GiB, 20% of the next 4, 10% "
    "of the next 8, 6% of the next 112, 2% above 128; and a 100 MiB eviction threshold. Node DaemonSets take a "
    "further allowance (an estimate: measure with kubectl describe node).",
    "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations")
FITS = rule(
    "pod-fits-node", "Every Ray pod (containers, the KubeRay autoscaler sidecar of the head, the GCS FUSE sidecar) "
    "requests no more CPU and memory than its node type allocates.",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/#kube-scheduler-implementation "
    "(filtering: NodeResourcesFit)")

# Node DaemonSets (logging, metrics, networking, CSI drivers, the TPU device plugin) request resources of their own.
# GKE publishes no figure for them; this allowance is deliberately generous and is checked after deploy.
DAEMONSET_ALLOWANCE_CPU = 0.4
DAEMONSET_ALLOWANCE_MEMORY_GIB = 1.0
EVICTION_THRESHOLD_GIB = 100 / 1024

# Sidecars that are injected into Ray pods.
# KubeRay ray-operator/controllers/ray/common/pod.go (v1.3.2 and v1.7.0): the autoscaler container requests and is
# limited to 500m CPU and 512Mi.
AUTOSCALER_SIDECAR = (0.5, 0.5)
# GoogleCloudPlatform/gcs-fuse-csi-driver cmd/webhook/main.go: the sidecar requests 250m CPU and 256Mi by default.
GCS_FUSE_SIDECAR = (0.25, 0.25)


def _tiers(amount: float, tiers: tuple[tuple[float, float], ...], rest: float) -> float:
    reserved, start = 0.0, 0.0
    for end, share in tiers:
        reserved += max(0.0, min(amount, end) - start) * share
        start = end
    return reserved + max(0.0, amount - start) * rest


def allocatable(vcpus: float, memory_gib: float) -> tuple[float, float]:
    """(CPU, memory GiB) that pods may request on a GKE Standard node of this size, after GKE's reservations, the
    eviction threshold and the DaemonSet allowance."""
    cpu_reserved = _tiers(vcpus, ((1, 0.06), (2, 0.01), (4, 0.005)), 0.0025)
    if memory_gib < 1:
        memory_reserved = 255 / 1024
    else:
        memory_reserved = _tiers(memory_gib, ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06)), 0.02)
    return (vcpus - cpu_reserved - DAEMONSET_ALLOWANCE_CPU,
            memory_gib - memory_reserved - EVICTION_THRESHOLD_GIB - DAEMONSET_ALLOWANCE_MEMORY_GIB)


def pod_requests(pod_spec: dict, sidecars: Iterable[tuple[float, float]] = ()) -> tuple[float, float]:
    """(CPU, memory GiB) a pod requests: its containers plus injected sidecars."""
    cpu = memory = 0.0
    for container in pod_spec.get("containers", []):
        requests = container.get("resources", {}).get("requests", {})
        cpu += parse_quantity(str(requests.get("cpu", "0")))
        memory += parse_quantity(str(requests.get("memory", "0"))) / 2**30
    for extra_cpu, extra_memory in sidecars:
        cpu += extra_cpu
        memory += extra_memory
    return cpu, memory


def node_worker_resources(vcpus: float, memory_gib: float, gcs_fuse: bool) -> tuple[int, int]:
    """Whole CPUs and GiB the one Ray worker container of a node requests: what the node allocates, less the GCS FUSE
    sidecar beside it."""
    cpu, memory = allocatable(vcpus, memory_gib)
    if gcs_fuse:
        cpu, memory = cpu - GCS_FUSE_SIDECAR[0], memory - GCS_FUSE_SIDECAR[1]
    return math.floor(cpu), math.floor(memory)



# --- capacity, reservations, Ray -----------------------------------------------------------------------------------

RESERVATION_SELECTOR = rule(
    "gke-reservation-selector", "Autopilot pods select a reservation by its short name "
    "(cloud.google.com/reservation-name), a shared reservation's owner by cloud.google.com/reservation-project, "
    "with cloud.google.com/reservation-affinity: specific.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations")


def check_reservation(value: str) -> None:
    parts = value.split("/")
    if len(parts) == 1 and _RFC1035.fullmatch(value) and len(value) <= 63:
        return
    if (len(parts) == 4 and parts[0] == "projects" and parts[2] == "reservations"
            and re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", parts[1])
            and _RFC1035.fullmatch(parts[3]) and len(parts[3]) <= 63):
        return
    raise ValueError("must be a reservation name, or projects/<project>/reservations/<name> when shared")


RAYSERVICE_SURGE = rule(
    "kuberay-rayservice-surge", "A RayService with upgradeStrategy NewCluster starts a whole second Ray cluster during "
    "an upgrade, so its TPU worker groups need twice their slices while it runs.",
    "https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html; KubeRay "
    "rayservice_types.go (NewCluster: create new upgraded cluster and switch to it when it becomes ready)")
NEVER_RUNS = rule(
    "kuberay-group-never-runs", "A worker group with replicas 0 and Ray autoscaling off never gets a pod.",
    "KubeRay raycluster_controller.go: the operator creates `replicas` pods per group; only the autoscaler "
    "changes replicas")

# Ray's in-tree autoscaler maps the GKE accelerator label of a TPU worker group to a generation and raises on values
# it does not know. Ray 2.55: python/ray/autoscaler/_private/kuberay/utils.py (gke_tpu_accelerator_to_generation).
RAY_AUTOSCALER_TPU = rule(
    "ray-autoscaler-tpu-generations", "Ray's autoscaler knows only some GKE TPU accelerator values; a Ray cluster "
    "with autoscaling and a worker group of another generation fails in the autoscaler.",
    "ray python/ray/autoscaler/_private/kuberay/utils.py (Ray 2.55)")
RAY_AUTOSCALER_ACCELERATORS: dict[str, tuple[str, ...]] = {
    # Ray version: the accelerators its autoscaler maps (read from the released wheels). Older releases are taken to
    # know no more than 2.55.
    "2.55.0": ("tpu-v4-podslice", "tpu-v5-lite-device", "tpu-v5-lite-podslice", "tpu-v5p-slice", "tpu-v6e-slice"),
    # Ray 2.56.0 (ray-project/ray#62786) adds "tpu7x" to the map and stops raising on unknown values.
    "2.56.0": ("tpu-v4-podslice", "tpu-v5-lite-device", "tpu-v5-lite-podslice", "tpu-v5p-slice", "tpu-v6e-slice",
               "tpu7x"),
}


def check_ray_version(value: str) -> None:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", value):
        raise ValueError("must be a Ray release such as 2.55.0")


def _ray_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def ray_autoscaler_accelerators(ray_version: str) -> tuple[str, ...]:
    known = [v for v in RAY_AUTOSCALER_ACCELERATORS if _ray_key(v) <= _ray_key(ray_version)]
    return RAY_AUTOSCALER_ACCELERATORS[max(known or ["2.55.0"], key=_ray_key)]


# --- every pod the plan emits --------------------------------------------------------------------------------------


def pod_label_problems(pod_spec: dict, labels: dict | None = None) -> list[str]:
    """Node selector and label entries of a pod that Kubernetes would refuse, one line each."""
    problems = []
    for kind, mapping in (("nodeSelector", pod_spec.get("nodeSelector") or {}), ("labels", labels or {})):
        for key, value in mapping.items():
            for check, what in ((check_label_key, key), (check_label_value, value)):
                try:
                    check(what)
                except ValueError as error:
                    problems.append(f"{kind} {key}={value!r}: {what!r} {error}")
    return problems


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


def markdown() -> str:
    """The rules as the table of docs/admission.md (a test keeps the page equal to this)."""
    lines = ["| rule | what the service accepts | source |", "| --- | --- | --- |"]
    lines += [f"| `{r.id}` | {r.summary} | {r.source} |" for r in RULES.values()]
    return "\n".join(lines) + "\n"


# --- GPUs ----------------------------------------------------------------------------------------------------------

GPU_VERSION = rule(
    "gke-gpu-version", "GKE installs GPU drivers itself (gpu-driver-version) from 1.27.2-gke.1200; H200 (A3 Ultra) "
    "gets its default driver from 1.31.5-gke.1169000, B200 (A4) needs 1.32.1-gke.1729000; Autopilot has its own "
    "minimums per GPU; flex-start GPUs need 1.32.2-gke.1652000.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus; "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-gpus; "
    "https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute")
GPU_CAPACITY = rule(
    "gce-gpu-capacity", "A3 Ultra (H200) and A4 (B200) VMs come only from reservations, Spot or flex-start; A3 High "
    "with 1, 2 or 4 GPUs only from Spot or flex-start.",
    "https://cloud.google.com/compute/docs/accelerator-optimized-machines")
GPU_TAINT = rule(
    "gke-gpu-taint", "GPU nodes carry nvidia.com/gpu=present:NoSchedule (GKE adds it only when a non-GPU pool already "
    "exists, so the pools set it themselves); pods that request nvidia.com/gpu tolerate it.",
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (GPU node taint)")
GPU_FLEX_START_MIN_GKE_VERSION = "1.32.2-gke.1652000"


def gpu_version_needs(accelerator: str, capacity: str, autopilot: bool) -> list[VersionNeed]:
    gpu = catalog.gpu(accelerator)
    needs = [VersionNeed(RAY_OPERATOR_MIN_GKE_VERSION, "the Ray Operator add-on")]
    if autopilot and gpu.min_gke_version_autopilot:
        needs.append(VersionNeed(gpu.min_gke_version_autopilot, f"{accelerator} in Autopilot"))
    else:
        needs.append(VersionNeed(gpu.min_gke_version, f"{accelerator} with GKE-installed drivers"))
    if capacity == "flexStart":
        needs.append(VersionNeed(GPU_FLEX_START_MIN_GKE_VERSION, "flex-start GPUs"))
    return needs


# Cloud Quotas IDs of compute.googleapis.com per GPU: (on-demand, preemptible: spot and flex-start). The legacy metric
# names (NVIDIA_L4_GPUS ...) are in Google's cluster toolkit (pkg/validators/quota.go); the Cloud Quotas IDs follow
# the same pattern as reported by public projects. Unknown IDs are warnings at deploy time, never guesses.
GPU_QUOTA_IDS: dict[str, tuple[QuotaId, QuotaId]] = {
    accelerator: (QuotaId(f"NVIDIA-{metric}-GPUS-per-project-region"),
                  QuotaId(f"PREEMPTIBLE-NVIDIA-{metric}-GPUS-per-project-region"))
    for accelerator, metric in (("nvidia-l4", "L4"), ("nvidia-tesla-a100", "A100"), ("nvidia-a100-80gb", "A100-80GB"),
                                ("nvidia-h100-80gb", "H100"), ("nvidia-h100-mega-80gb", "H100-MEGA"),
                                ("nvidia-h200-141gb", "H200"), ("nvidia-b200", "B200"))
}


def gpu_quota_need(accelerator: str, capacity: str, gpus: int, region: str, who: str) -> Optional[QuotaNeed]:
    if capacity == "reservation":
        return None
    on_demand, preemptible = GPU_QUOTA_IDS[accelerator]
    return QuotaNeed(on_demand if capacity == "onDemand" else preemptible, region, gpus, who, unit="GPUs")
