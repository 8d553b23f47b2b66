"""The live version set (#24.3): the installed KubeRay CRDs have every field the stack's objects use (read from each
CRD's schema, not assumed from a version), the TPU webhook is installed and serving, and every Ray pod runs the image
the stack declares."""

from __future__ import annotations

from typing import Any, Optional

from ray_tpu_gke.workload.slice_checks import FAIL, PASS, SKIP, Check, listing, name_of

from .kubectl import Kubectl

CRDS = {"RayCluster": "rayclusters.ray.io", "RayService": "rayservices.ray.io", "RayJob": "rayjobs.ray.io"}
API_VERSION = "v1"  # the KubeRay API version the stack's objects use (apiVersion ray.io/v1)
# KubeRay's pod label that the TPU webhook's MutatingWebhookConfiguration selects pods by (ai-on-gke
# kuberay-tpu-webhook deployments: objectSelector app.kubernetes.io/name: kuberay); the add-on's own object names are
# not documented, so the webhook is found by what it does: mutate pod creation for KubeRay's pods.
KUBERAY_POD_LABEL = ("app.kubernetes.io/name", "kuberay")


def schema_has(schema: dict, path: str) -> bool:
    """Whether a CRD's openAPIV3Schema has the field path ("spec.workerGroupSpecs[].numOfHosts"): objects by their
    properties, lists by their items; a node that keeps unknown fields or is a map holds any key below it."""
    node: Any = schema
    for part in path.replace("[]", ".[]").split("."):
        if not isinstance(node, dict):
            return False
        if node.get("x-kubernetes-preserve-unknown-fields") or isinstance(node.get("additionalProperties"), dict):
            return True
        if part == "[]":
            node = node.get("items")
        else:
            node = (node.get("properties") or {}).get(part)
        if node is None:
            return False
    return True


def crd_checks(kubectl: Kubectl, fields: dict[str, list[str]]) -> list[Check]:
    """Per kind the stack uses: its CRD is installed, serves ray.io/v1, and its schema has every field used."""
    checks = []
    for kind, paths in fields.items():
        subject = f"CRD {CRDS[kind]}"
        crd = kubectl.json("get", "crd", CRDS[kind], missing_ok=True)
        if crd is None:
            checks.append(Check(subject, "installed", FAIL, "not found: the Ray Operator add-on serves it"))
            continue
        version = next((v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("name") == API_VERSION), None)
        if version is None or not version.get("served"):
            checks.append(Check(subject, "installed", FAIL, f"does not serve {API_VERSION}"))
            continue
        checks.append(Check(subject, "installed", PASS, f"serves ray.io/{API_VERSION}"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        missing = [p for p in paths if not schema_has(schema, p)]
        checks.append(
            Check(
                subject,
                "fields",
                FAIL if missing else PASS,
                f"missing: {listing(missing)}"
                if missing
                else f"all {len(paths)} fields the stack's {kind} objects set",
            )
        )
    return checks


def _mutates_kuberay_pods(webhook: dict) -> bool:
    creates_pods = any(
        "pods" in (r.get("resources") or []) and "CREATE" in (r.get("operations") or [])
        for r in webhook.get("rules") or []
    )
    labels = (webhook.get("objectSelector") or {}).get("matchLabels") or {}
    service = ((webhook.get("clientConfig") or {}).get("service") or {}).get("name", "")
    return creates_pods and (labels.get(KUBERAY_POD_LABEL[0]) == KUBERAY_POD_LABEL[1] or "tpu-webhook" in service)


def webhook_checks(kubectl: Kubectl, group_checks: list[Check], tpu_groups: int) -> list[Check]:
    """Installed: a mutating webhook of pod creation for KubeRay's pods. Serving: the TPU worker pods carry its
    environment (each group's "webhook env" check)."""
    subject = "TPU webhook"
    if not tpu_groups:
        return [Check(subject, "installed", SKIP, "the stack has no TPU worker group")]
    configs = (kubectl.json("get", "mutatingwebhookconfigurations") or {}).get("items", [])
    found = [
        f"{name_of(c)}/{w.get('name')}" for c in configs for w in c.get("webhooks") or [] if _mutates_kuberay_pods(w)
    ]
    checks = [
        Check(
            subject,
            "installed",
            PASS if found else FAIL,
            f"{', '.join(found)} mutates KubeRay pods on creation"
            if found
            else "no mutating webhook of pod creation selects KubeRay's pods (app.kubernetes.io/name=kuberay)",
        )
    ]
    envs = [c for c in group_checks if c.name == "webhook env"]
    failed = [c.subject for c in envs if c.status == FAIL]
    if not envs:
        checks.append(Check(subject, "serving", SKIP, "no TPU worker pods to read"))
    else:
        checks.append(
            Check(
                subject,
                "serving",
                FAIL if failed else PASS,
                f"worker pods without its environment: {listing(failed)}"
                if failed
                else f"its environment on the worker pods of {len(envs)} group(s)",
            )
        )
    return checks


def image_check(subject: str, image: str, pods: list[dict]) -> Check:
    """Every Ray container (KubeRay's ray-head and ray-worker containers, and this stack's TPU and GPU workers: all
    but the sidecars GKE adds) of the object's pods runs the declared image."""
    if not pods:
        return Check(subject, "image", SKIP, "no Ray pods")
    wrong = []
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            if container.get("name", "").startswith("ray-") and container.get("image") != image:
                wrong.append(f"{name_of(pod)}/{container.get('name')} runs {container.get('image')}")
    return Check(
        subject, "image", FAIL if wrong else PASS, listing(wrong) if wrong else f"{len(pods)} pods run {image}"
    )


def declared_images(plan_json: Optional[dict]) -> dict[tuple[str, str], str]:
    """The image each Ray object declares, by (namespace, name), from the plan's `versions`."""
    objects = ((plan_json or {}).get("versions") or {}).get("rayObjects") or {}
    return {(o["namespace"], key.rsplit("/", 1)[-1]): o["image"] for key, o in objects.items()}
