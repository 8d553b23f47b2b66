"""Names and labels: what Kubernetes, Google Cloud and container registries accept as a name, a label, an image or a
quantity."""

from __future__ import annotations

import hashlib
import re

from .rules import rule

__all__ = [
    "K8S_LABEL_VALUE",
    "K8S_LABEL_KEY",
    "DNS_LABEL",
    "NAMESPACE",
    "GCP_LABEL",
    "SERVICE_ACCOUNT_ID",
    "IMAGE",
    "QUANTITY",
    "RESERVED_NAMESPACES",
    "BUCKET_NAME",
    "BUCKET_LOCATION",
    "GOOGLE_CLOUD_REGIONS",
    "BUCKET_LOCATIONS",
    "check_bucket_name",
    "check_bucket_location",
    "check_service_account_id",
    "SERVICE_ACCOUNT_PURPOSES",
    "check_label_value",
    "check_label_key",
    "check_dns_label",
    "check_namespace",
    "check_gcp_label_value",
    "check_image",
    "check_quantity",
    "parse_quantity",
    "service_account_id",
]


# --- names and labels ----------------------------------------------------------------------------------------------

K8S_LABEL_VALUE = rule(
    "k8s-label-value",
    "A label value (and so a node selector value) has at most 63 characters, is empty or starts "
    "and ends with [A-Za-z0-9], with '-', '_', '.' between: no '/'.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set; "
    "apimachinery pkg/api/validate/content/kube.go (labelValueFmt)",
)
K8S_LABEL_KEY = rule(
    "k8s-label-key",
    "A label key is an optional DNS-subdomain prefix (at most 253) and '/', then a name of at most "
    "63 characters in the label-value alphabet.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set",
)
DNS_LABEL = rule(
    "dns-label",
    "GKE cluster, node pool and KubeRay object names are RFC 1035 labels: lowercase letters, digits "
    "and '-', starting with a letter, not ending with '-'.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#rfc-1035-label-names; GKE cluster "
    "names: at most 40 characters (gcloud container clusters create)",
)
NAMESPACE = rule(
    "k8s-namespace",
    "A namespace name is an RFC 1123 label of at most 63 characters; default, kube-system, "
    "kube-public, kube-node-lease and the kube- prefix are Kubernetes' own and never created by a stack.",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces",
)
GCP_LABEL = rule(
    "gcp-label-value",
    "A Google Cloud label value has at most 63 lowercase letters, digits, '-' and '_'.",
    "https://cloud.google.com/resource-manager/docs/labels-overview#requirements",
)
SERVICE_ACCOUNT_ID = rule(
    "gcp-service-account-id",
    "A service account ID has 6 to 30 characters: a lowercase letter, then lowercase "
    "letters, digits and '-', not ending with '-'.",
    "https://cloud.google.com/iam/docs/service-accounts-create#creating (account ID rules)",
)
IMAGE = rule(
    "image-reference",
    "A container image is a reference [host[:port]/]path[:tag][@digest] without spaces or control characters.",
    "https://github.com/distribution/reference/blob/main/regexp.go",
)
QUANTITY = rule(
    "k8s-quantity",
    "CPU and memory are Kubernetes quantities such as 500m, 2, 8Gi.",
    "https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/",
)

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_RFC1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def check_label_value(value: str) -> None:
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(
            "must be a Kubernetes label value: at most 63 characters, empty or starting and ending with "
            "a letter or digit, with '-', '_' and '.' between (no '/')"
        )


def check_label_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (
        len(name) > 63
        or not _LABEL_NAME.fullmatch(name)
        or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)))
    ):
        raise ValueError("must be a Kubernetes label key: [DNS subdomain/]name, the name at most 63 characters")


def check_dns_label(value: str, max_length: int) -> None:
    if len(value) > max_length or not _RFC1035.fullmatch(value):
        raise ValueError(
            f"must be a DNS label of at most {max_length} characters: lowercase letters, digits and "
            "'-', starting with a letter and not ending with '-'"
        )


def check_namespace(value: str) -> None:
    if len(value) > 63 or not _RFC1123.fullmatch(value):
        raise ValueError(
            "must be a namespace name: at most 63 lowercase letters, digits and '-', starting and "
            "ending with a letter or digit"
        )
    if value in RESERVED_NAMESPACES or value.startswith("kube-"):
        raise ValueError(
            f"is a namespace of Kubernetes itself; use a namespace of your own (not "
            f"{', '.join(RESERVED_NAMESPACES)} or kube-*)"
        )


def check_gcp_label_value(value: str) -> None:
    if not re.fullmatch(r"[a-z0-9_-]{0,63}", value):
        raise ValueError("must be a label value: at most 63 lowercase letters, digits, '-' and '_'")


_IMAGE = re.compile(
    r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?"
)


def check_image(value: str) -> None:
    if not _IMAGE.fullmatch(value):
        raise ValueError(
            "must be an image reference such as rayproject/ray:2.55.0-py311 or "
            "REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG"
        )


_QUANTITY = re.compile(r"(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def check_quantity(value: str) -> None:
    if not _QUANTITY.fullmatch(value) or parse_quantity(value) <= 0:
        raise ValueError("must be a positive Kubernetes quantity such as 500m, 2, 8Gi")


def parse_quantity(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(\D*)", value)
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.groups()
    return float(number) * _SUFFIX[suffix]


# The Google service accounts a stack creates per cluster (resources/identity.py): the nodes' and Ray's.
SERVICE_ACCOUNT_PURPOSES = ("nodes", "ray")


def service_account_id(cluster: str, purpose: str) -> str:
    """A service account ID for one purpose of one cluster: `<cluster>-<purpose>` where that is valid, else a
    shortened cluster name with a hash of the whole name, so two clusters never share an ID."""
    plain = f"{cluster}-{purpose}"
    if 6 <= len(plain) <= 30:
        return plain
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:6]
    head = cluster[: 30 - len(purpose) - len(digest) - 2].rstrip("-")
    return f"{head}-{digest}-{purpose}"


def check_service_account_id(value: str) -> None:
    if not (6 <= len(value) <= 30 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", value)):
        raise ValueError(
            f"derives the service account ID {value!r}; allowed: 6 to 30 characters, a lowercase letter, "
            "then lowercase letters, digits and '-', not ending with '-'"
        )


# --- Cloud Storage -------------------------------------------------------------------------------------------------

BUCKET_NAME = rule(
    "gcs-bucket-name",
    "A bucket name has 3-63 lowercase letters, digits, '-', '_' and '.', starts and ends with a "
    'letter or digit, is no dotted-decimal IP address, does not begin with "goog" and does not contain "google" '
    "or a close misspelling (Google publishes no list; refused here: the name with 0/1/3 read as o/l/e, '-', '_' "
    "and '.' removed and runs of 'o' as one 'o', containing \"gogle\", e.g. g00gle, goo-gle, gogle).",
    "https://cloud.google.com/storage/docs/naming-buckets (Bucket name requirements)",
)
BUCKET_LOCATION = rule(
    "gcs-bucket-location",
    "A bucket location is a multi-region (US, EU, ASIA), a predefined dual-region (ASIA1, "
    "EUR4, EUR5, EUR7, EUR8, NAM4) or a region, in any letter case (Cloud Storage stores it upper-case); never a "
    "zone, never with spaces.",
    "https://cloud.google.com/storage/docs/locations#available-locations; terraform-provider-google "
    "resource_storage_bucket.go (location: StateFunc strings.ToUpper)",
)

# Google Cloud regions: those of the Compute Engine catalogue snapshot anycloud-sh/catalog gcp/vms.csv @62ff0a98
# (2026-05-20); the Cloud Storage and Compute region tables themselves could not be read back.
GOOGLE_CLOUD_REGIONS = (
    "africa-south1",
    "asia-east1",
    "asia-east2",
    "asia-northeast1",
    "asia-northeast2",
    "asia-northeast3",
    "asia-south1",
    "asia-south2",
    "asia-southeast1",
    "asia-southeast2",
    "asia-southeast3",
    "australia-southeast1",
    "australia-southeast2",
    "europe-central2",
    "europe-north1",
    "europe-north2",
    "europe-southwest1",
    "europe-west1",
    "europe-west10",
    "europe-west12",
    "europe-west2",
    "europe-west3",
    "europe-west4",
    "europe-west6",
    "europe-west8",
    "europe-west9",
    "me-central1",
    "me-central2",
    "me-west1",
    "northamerica-northeast1",
    "northamerica-northeast2",
    "northamerica-south1",
    "southamerica-east1",
    "southamerica-west1",
    "us-central1",
    "us-central2",
    "us-east1",
    "us-east4",
    "us-east5",
    "us-south1",
    "us-west1",
    "us-west2",
    "us-west3",
    "us-west4",
)
_MULTI_REGIONS = ("US", "EU", "ASIA")
_DUAL_REGIONS = ("ASIA1", "EUR4", "EUR5", "EUR7", "EUR8", "NAM4")
# us-central2 is a Compute region for TPU v4 only; no source found lists it as a Cloud Storage location.
_NOT_STORAGE_REGIONS = ("us-central2",)
BUCKET_LOCATIONS = (
    _MULTI_REGIONS + _DUAL_REGIONS + tuple(r.upper() for r in GOOGLE_CLOUD_REGIONS if r not in _NOT_STORAGE_REGIONS)
)


def _looks_like_google(name: str) -> bool:
    folded = name.translate(str.maketrans("013", "ole")).replace("-", "").replace("_", "").replace(".", "")
    return "gogle" in re.sub(r"o+", "o", folded)


def check_bucket_name(value: str) -> None:
    if not re.fullmatch(r"[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]", value):
        raise ValueError(
            "must be a bucket name: 3-63 lowercase letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit"
        )
    if re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", value):
        raise ValueError("is an IP address; Cloud Storage refuses bucket names in dotted-decimal notation")
    if value.startswith("goog"):
        raise ValueError('begins with "goog", which Cloud Storage refuses; allowed: another prefix')
    if _looks_like_google(value):
        raise ValueError(
            'contains "google" or a close misspelling, which Cloud Storage refuses (rule '
            "gcs-bucket-name); allowed: a name without it"
        )


def check_bucket_location(value: str) -> None:
    if not isinstance(value, str) or re.search(r"\s", value) or not value:
        raise ValueError("must be a Cloud Storage location without spaces, such as US, EU, NAM4 or us-central1")
    if re.fullmatch(r"[A-Za-z]+-[A-Za-z]+[0-9]+-[A-Za-z]", value):
        raise ValueError(
            f"is a zone; a bucket location is a region, dual-region or multi-region: allowed: "
            f"{value.rsplit('-', 1)[0]}, US, EU, ASIA, ..."
        )
    if value.upper() not in BUCKET_LOCATIONS:
        raise ValueError(
            f"is not a Cloud Storage location; allowed: {', '.join(_MULTI_REGIONS + _DUAL_REGIONS)} or "
            "a region such as us-central1"
        )
