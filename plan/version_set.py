"""The version set of a stack: what must stay together (#24.3), for the plan's table and its JSON's top-level
`versions` object, and for `plan.verify`'s live checks of it.

- `gke`: the release channel and pin, and the newest minimum GKE version the stack needs and why;
- `rayOperatorAddon`: GKE's Ray Operator add-on, which serves the KubeRay CRDs and runs the operator and the TPU
  webhook (its version comes with the cluster's GKE version: it has none of its own to pin);
- `kuberay`: the API version, the oldest KubeRay that runs the stack's Ray (catalog.ray_versions.KUBERAY_MINIMUM), and
  every KubeRay field the stack's objects set, per kind (what an installed CRD must
  have: `plan.verify` reads them from its schema);
- `rayObjects`: per Ray object (by name) its kind, namespace, Ray version and image (with what the image tag says);
- `workloadsImages`: what the repository's two workloads images pin, per variant (`tpu`: workloads/Dockerfile,
  `gpu`: workloads/Dockerfile.gpu): the base image, JAX and libtpu or JAX's CUDA plugin.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Optional

from ray_tpu_gke.catalog.ray_versions import KUBERAY_MINIMUM
from ray_tpu_gke.catalog.resource_types import RAY_KIND_PREFIX
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.operations import (
    LLM_TPU_REPOSITORY,
    RAY_LLM_IMAGES,
    image_ray_version,
    is_workloads_image,
    lacks_jax,
)
from rich.table import Table

from .harness import Plan

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
DOCKERFILES = {"tpu": "Dockerfile", "gpu": "Dockerfile.gpu"}  # the workloads-tpu and workloads-gpu images
LLM_TPU_DOCKERFILE = "Dockerfile.llm-tpu"  # the llm-tpu image: vLLM's TPU build with Ray Serve LLM
# Fields below which the KubeRay CRDs take another API's schema or free-form values: the pod template (core/v1
# PodTemplateSpec), rayStartParams (a map of strings) and metadata (labels, annotations).
OPAQUE = {"template", "rayStartParams", "metadata"}


def _field_paths(value: Any, prefix: str = "") -> Iterable[str]:
    """Every field path set in `value` ("spec.workerGroupSpecs[].numOfHosts"), list items as [], not below OPAQUE."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            if key not in OPAQUE:
                yield from _field_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            yield from _field_paths(item, f"{prefix}[]")


def kuberay_fields(plan: Plan) -> dict[str, list[str]]:
    """Per KubeRay kind, every field its objects in the plan set (under `spec`)."""
    fields: dict[str, set[str]] = {}
    for step in plan.steps:
        if step.type.startswith(RAY_KIND_PREFIX):
            kind = step.type[len(RAY_KIND_PREFIX) :]
            fields.setdefault(kind, set()).update(_field_paths(step.inputs.get("spec") or {}, "spec"))
    return {kind: sorted(paths) for kind, paths in sorted(fields.items())}


def dockerfile_pins(variant: str, folder: Path = WORKLOADS) -> Optional[dict[str, str]]:
    """A workloads image's base and pins, read from its Dockerfile (None where the file is not there: a project
    that uses the library without this repository)."""
    name = DOCKERFILES[variant]
    try:
        text = (folder / name).read_text()
    except OSError:
        return None
    base = re.search(r"^FROM\s+(\S+)", text, re.M)
    pins = {
        package: m.group(1)
        for package in ("jax", "jaxlib", "libtpu", "jax-cuda12-plugin")
        if (m := re.search(rf'"{package}(?:\[[a-z0-9]+\])?==([^"]+)"', text))
    }
    return {"dockerfile": f"workloads/{name}", "base": base.group(1) if base else "", **pins}


def vllm_of(image: str, folder: Path = WORKLOADS) -> str:
    """Where an LLM service's image takes its vLLM from: the base of the repository's llm-tpu image
    (workloads/Dockerfile.llm-tpu), Ray's pin in rayproject/ray-llm, or the image itself."""
    repository = image.split("@", 1)[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if repository.endswith(LLM_TPU_REPOSITORY):
        try:
            base = re.search(r"^FROM\s+(\S+)", (folder / LLM_TPU_DOCKERFILE).read_text(), re.M)
        except OSError:
            base = None
        return f"{base.group(1)} (workloads/{LLM_TPU_DOCKERFILE})" if base else image
    if repository in RAY_LLM_IMAGES:
        return "the vLLM Ray pins in rayproject/ray-llm"
    return image


def versions(plan: Plan, config: StackConfig, inventory=None) -> dict:
    """The version set; `inventory` (plan/inventory.py) for a program that configures the library in its own way,
    whose Ray objects are read back from what it registered and whose cluster may not be its own."""
    need = config.gke_version_need
    c = config.cluster
    objects: dict[str, dict] = {}
    names = [o.name for o in config.ray_objects]
    clusters = {(o.namespace, o.name): o for o in config.ray_clusters}
    for obj in config.ray_objects:
        key = obj.name if names.count(obj.name) == 1 else f"{obj.namespace}/{obj.name}"
        kind = type(obj).__name__.removesuffix("Config")
        if inventory is not None:
            kind = inventory.kinds.get((obj.namespace, obj.name), kind)
        # A RayJob on an existing RayCluster (clusterSelector) runs in that cluster's Ray and image.
        runs_in = clusters.get((obj.namespace, getattr(obj, "cluster", None) or ""), obj)
        entry = {
            "kind": kind,
            "namespace": obj.namespace,
            "rayVersion": runs_in.ray_version,
            "image": runs_in.image,
            "imageRayVersion": image_ray_version(runs_in.image),
            "workloadsImage": is_workloads_image(runs_in.image),
        }
        if runs_in is not obj:
            entry["cluster"] = runs_in.name
        if getattr(obj, "llm", None) is not None:
            entry["llm"] = {"modelId": obj.llm.model_id, "engine": "vLLM", "vllm": vllm_of(obj.image)}
        objects[key] = entry
    out = {
        "gke": {
            "releaseChannel": c.release_channel,
            "pin": c.min_master_version,
            "minimum": {"version": need.version, "reason": need.reason},
        },
        "rayOperatorAddon": {
            "enabled": True,
            "version": "the cluster's GKE version",
            "provides": "KubeRay CRDs (ray.io/v1), the KubeRay operator, the TPU webhook",
        },
        "kuberay": {
            "apiVersion": "ray.io/v1",
            "minimum": {"version": KUBERAY_MINIMUM[0], "reason": KUBERAY_MINIMUM[1]},
            "fields": kuberay_fields(plan),
        },
        "rayObjects": objects,
    }
    if inventory is not None and not inventory.has_cluster:  # its channel and pin are the existing cluster's
        out["gke"].update(releaseChannel="the existing cluster's", pin=None)
    images = {variant: pins for variant in DOCKERFILES if (pins := dockerfile_pins(variant)) is not None}
    if images:
        out["workloadsImages"] = images
    return out


SECTIONS = (("rayClusters", "ray_clusters"), ("rayServices", "ray_services"), ("rayJobs", "ray_jobs"))


def warnings(config: StackConfig, inventory=None) -> list[str]:
    """A TPU worker group on an image without JAX (Ray's own) cannot run a JAX program on its chips: one warning per
    Ray object, naming the repository's image of its Ray version in the stack's Artifact Registry (docs/workloads.md:
    <region>-docker.pkg.dev/<project>/ray-tpu-gke/workloads-tpu:<ray version>). The same for a program of its own
    (`inventory`, plan/inventory.py), each object named by its kind, namespace and name."""
    registry = f"{config.region}-docker.pkg.dev/{config.project}"
    out = []
    for key, attribute in SECTIONS:
        for index, obj in enumerate(getattr(config, attribute)):
            groups = [g.name for g in obj.worker_groups if g.slice]
            where = f"ray-tpu-gke:{key}[{index}].image"
            if inventory is not None:
                kind = inventory.kinds.get((obj.namespace, obj.name), "RayCluster")
                where = f"{kind} {obj.namespace}/{obj.name}: image"
            if groups and lacks_jax(obj.image):
                out.append(
                    f"{where}: {obj.image} has no JAX, which the TPU worker groups "
                    f"{', '.join(groups)} need; use the repository's image "
                    f"{registry}/ray-tpu-gke/workloads-tpu:{obj.ray_version} (docs/workloads.md)"
                )
    return out


def attach(plan: Plan, config: StackConfig, inventory=None) -> dict:
    """The plan JSON with its top-level `versions` (plan/__main__.py prints it)."""
    data = plan.to_json()
    data["versions"] = versions(plan, config, inventory)
    return data


def table(v: dict) -> Table:
    """The version set as one table: element, value, why."""
    t = Table(title="Version set (what must stay together)", title_justify="left")
    for column in ("element", "version", "notes"):
        t.add_column(column)
    gke = v["gke"]
    t.add_row("GKE release channel", gke["releaseChannel"], "GKE upgrades within it (cluster.maintenance)")
    t.add_row("GKE pin", gke["pin"] or "none", "minMasterVersion" if gke["pin"] else "the channel's default")
    t.add_row("GKE minimum needed", gke["minimum"]["version"], gke["minimum"]["reason"])
    addon = v["rayOperatorAddon"]
    t.add_row("Ray Operator add-on", addon["version"], addon["provides"])
    minimum = v["kuberay"].get("minimum")
    if minimum:
        t.add_row("KubeRay minimum", minimum["version"], minimum["reason"])
    fields = v["kuberay"]["fields"]
    t.add_row(
        "KubeRay API",
        v["kuberay"]["apiVersion"],
        "; ".join(f"{kind}: {len(paths)} fields" for kind, paths in fields.items()) or "no Ray objects",
    )
    for name, obj in v["rayObjects"].items():
        note = (
            f"{obj['kind']} {obj['namespace']}/{name}"
            + (f" on RayCluster {obj['cluster']}" if "cluster" in obj else "")
            + f"; image {obj['image']}"
        )
        if obj["imageRayVersion"] and obj["imageRayVersion"] != obj["rayVersion"]:
            note += f" (tag says Ray {obj['imageRayVersion']})"
        if "llm" in obj:
            note += f"; serves {obj['llm']['modelId']} on vLLM: {obj['llm']['vllm']}"
        t.add_row(f"Ray of {name}", obj["rayVersion"], note)
    for variant, image in v.get("workloadsImages", {}).items():
        pins = ", ".join(f"{k} {value}" for k, value in image.items() if k not in ("dockerfile", "base"))
        t.add_row(f"workloads-{variant} image", image["base"], f"{pins} ({image['dockerfile']})")
    return t


def flat(v: dict) -> dict[str, Any]:
    """Each element of the set as one `path: value` (what the diff compares, one line per changed element)."""
    out: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict) and not (path.startswith("kuberay.fields.") and path.count(".") == 2):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else key)
        else:
            out[path] = value

    walk(v, "")
    return out


RISKY = ("gke.", "rayObjects.")  # a GKE or Ray version change stops running slices (docs/operations.md)


def risky(path: str) -> bool:
    return path.startswith(RISKY) and path.rsplit(".", 1)[-1] in ("releaseChannel", "pin", "rayVersion", "image")
