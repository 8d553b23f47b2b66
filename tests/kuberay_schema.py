"""Strict JSON Schema validators for KubeRay objects, from the CRDs vendored in tests/data/kuberay/ (see SOURCE.md).

The API server validates a custom resource against the CRD's OpenAPI v3 schema but silently prunes fields the schema
does not list, so a misspelt key (`numOfHost`) is dropped rather than rejected. These validators are stricter than the
API server on purpose: every object schema that lists `properties` and has no `additionalProperties` forbids any other
key. Kubernetes extensions are translated into plain JSON Schema:

- `x-kubernetes-int-or-string: true`  -> `type: [integer, string]` (the CRD's other keywords, e.g. `pattern`, stay);
- `x-kubernetes-preserve-unknown-fields: true` -> the node stays open (any fields allowed there);
- `nullable: true` -> `null` is allowed as well.

`x-kubernetes-validations` (CEL rules) are not evaluated; the few in these CRDs concern fields this project never sets
(managedBy, deletionPolicy, deletionStrategy, gcsFaultToleranceOptions).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

DATA = Path(__file__).resolve().parent / "data" / "kuberay"
RELEASES = ("v1.3.2", "v1.7.0")
FILES = {"RayCluster": "ray.io_rayclusters.yaml", "RayService": "ray.io_rayservices.yaml",
         "RayJob": "ray.io_rayjobs.yaml"}
KINDS = tuple(FILES)
API_VERSION = "v1"

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crd_path(release: str, kind: str) -> Path:
    if release not in RELEASES:
        raise KeyError(f"unknown KubeRay release {release!r}; vendored: {', '.join(RELEASES)}")
    if kind not in FILES:
        raise KeyError(f"not a KubeRay kind: {kind!r}; allowed: {', '.join(KINDS)}")
    return DATA / release / FILES[kind]


def openapi_schema(release: str, kind: str) -> dict:
    """`spec.versions[name == "v1"].schema.openAPIV3Schema` of the CRD, as written (untranslated)."""
    with crd_path(release, kind).open("rb") as handle:
        crd = yaml.load(handle, Loader=_Loader)
    if crd.get("kind") != "CustomResourceDefinition" or crd["spec"]["names"]["kind"] != kind:
        raise ValueError(f"{crd_path(release, kind)} is not the CRD of {kind}")
    version = next((v for v in crd["spec"]["versions"] if v["name"] == API_VERSION), None)
    if version is None:
        raise ValueError(f"{crd_path(release, kind)} has no {API_VERSION} version")
    return version["schema"]["openAPIV3Schema"]


def strict(node: Any) -> Any:
    """A JSON Schema equivalent of an OpenAPI v3 (structural) schema node, with unknown fields forbidden."""
    if isinstance(node, list):
        return [strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()
           if not k.startswith("x-kubernetes-") and k not in ("description", "nullable")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("anyOf", None)
        out["type"] = ["integer", "string"]
    if node.get("nullable") and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    open_here = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in node and "additionalProperties" not in node and not open_here:
        out["additionalProperties"] = False
    return out


@functools.lru_cache(maxsize=None)
def validator(release: str, kind: str) -> jsonschema.protocols.Validator:
    """The strict validator of one kind in one KubeRay release (loaded once per process)."""
    return jsonschema.Draft7Validator(strict(openapi_schema(release, kind)))


def json_path(path) -> str:
    """`$.spec.workerGroupSpecs[0].replicas` for a jsonschema error path."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def errors(manifest: dict, release: str) -> list[str]:
    """Every violation of the manifest against its kind's CRD in `release`, one line each with its JSON path."""
    kind = manifest.get("kind")
    if kind not in FILES:
        return [f"$.kind: {kind!r} is not a KubeRay kind ({', '.join(KINDS)})"]
    found = sorted(_iter_errors(validator(release, kind), manifest), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{json_path(e.absolute_path)}: {e.message}" for e in found]


def _iter_errors(v: jsonschema.protocols.Validator, instance: Any) -> Iterator[jsonschema.ValidationError]:
    for error in v.iter_errors(instance):
        # Unknown keys: name each one in the path, so the report points at the field itself.
        if error.validator == "additionalProperties" and error.validator_value is False:
            allowed = set(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - allowed):
                yield jsonschema.ValidationError(
                    f"unknown field {key!r}; allowed: {', '.join(sorted(allowed))}",
                    path=[*error.absolute_path, key], validator="additionalProperties",
                )
        else:
            yield error
