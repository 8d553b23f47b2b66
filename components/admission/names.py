"""Names and labels: what Kubernetes, Google Cloud and container registries accept as a name, a label, an image or a
quantity."""

from __future__ import annotations

import hashlib
import re

from .rules import rule

__all__ = ["K8S_LABEL_VALUE", "K8S_LABEL_KEY", "DNS_LABEL", "NAMESPACE", "GCP_LABEL", "SERVICE_ACCOUNT_ID", "IMAGE",
    "QUANTITY", "RESERVED_NAMESPACES", "check_label_value", "check_label_key", "check_dns_label", "check_namespace",
    "check_gcp_label_value", "check_image", "check_quantity", "parse_quantity", "service_account_id"]


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




