"""The in-cluster load Job of a live LLM run: the same generator as locally (drive.traffic), run as a Kubernetes Job on
the CPU pool the side's Ray head runs on, aimed at the RayService's Serve Service, so that the offered rate is not
capped by a port-forward. Its code travels in a ConfigMap (a zip of the generator's modules, put on PYTHONPATH:
Python's zipimport), its orders too (spec.json: the URL, the shapes' sends, the prompts); it prints what it saw as
gzip+base64 lines after a marker, which the collector reads with `kubectl logs`. The image is any with Python 3.10+
and httpx (default the side's own: vLLM and Ray Serve LLM images carry httpx, a dependency of the `openai` client).

`manifests` is pure: what it returns is what a live run creates, shown by --dry-run and tested."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from ..serving.services import ServiceSide
from ..sides import RUN_LABEL, SIDE_LABEL, label_value

PACKAGE = Path(__file__).resolve().parent.parent.parent  # plan/
# The generator and what it imports: nothing of Pulumi or the library.
MODULES = (
    "__init__.py",
    "compare/__init__.py",
    "compare/serving/__init__.py",
    "compare/serving/patterns.py",
    "compare/serving/load.py",
    "compare/llm/__init__.py",
    "compare/llm/prompts.py",
    "compare/llm/shapes.py",
    "compare/llm/stream.py",
    "compare/llm/drive.py",
    "compare/llm/job_main.py",
)
from .job_main import MARKER  # noqa: E402

SERVE_PORT = 8000  # KubeRay's Serve Service port (serve: 8000, ray-operator/controllers/ray/utils/constant.go)
COMPONENT = "compare-llm"


def archive() -> bytes:
    """The generator's modules as a zip, paths under plan/ (read from this checkout or the installed package)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for module in MODULES:
            zipped.writestr(f"plan/{module}", (PACKAGE / module).read_text())
    return buffer.getvalue()


def serve_url(service: str, namespace: str) -> str:
    """The RayService's Serve Service inside the cluster: KubeRay names it `<rayservice>-serve-svc`
    (ray-operator/controllers/ray/utils/util.go GenerateServeServiceName)."""
    return f"http://{service}-serve-svc.{namespace}.svc.cluster.local:{SERVE_PORT}"


def spec(url: str, name: str, model: str, shapes: list, load, timeout_s: float, cold_timeout_s: float) -> dict:
    return {
        "url": url,
        "name": name,
        "model": model,
        "api": load.api,
        "timeoutS": timeout_s,
        "coldTimeoutS": cold_timeout_s,
        "agreeCount": load.agree_count,
        "agreeTokens": load.agree_tokens,
        "prompts": [[p.index, p.text, p.words, p.max_tokens] for p in load.prompts],
        "shapes": [
            {
                "name": s.name,
                "phases": [[p.label, p.rps, p.seconds] for p in s.phases],
                "sends": [list(x) for x in s.sends],
                "gapS": s.gap_s,
                "params": s.params,
            }
            for s in shapes
        ],
    }


def manifests(
    side: ServiceSide, service: str, run: str, order: dict, code: bytes, image: str | None, deadline_s: int
) -> list[dict]:
    """The ConfigMap (code and orders) and the Job that runs the load against `service`, on the head's CPU pool."""
    name = f"{service}-load"
    labels = {RUN_LABEL: label_value(run), SIDE_LABEL: label_value(side.name), "app.kubernetes.io/component": COMPONENT}
    meta = {"name": name, "namespace": side.namespace, "labels": labels}
    head = side.manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    image = image or head["containers"][0]["image"]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "load",
                "image": image,
                "command": ["python", "-m", "plan.compare.llm.job_main", "/load/spec.json"],
                "env": [{"name": "PYTHONPATH", "value": "/load/generator.zip"}],
                "resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
                "volumeMounts": [{"name": "load", "mountPath": "/load", "readOnly": True}],
            }
        ],
        "volumes": [{"name": "load", "configMap": {"name": name}}],
    }
    if head.get("nodeSelector"):  # the pool the Ray head runs on: CPUs, never a TPU host or a GPU node
        pod["nodeSelector"] = dict(head["nodeSelector"])
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"spec.json": json.dumps(order)},
            "binaryData": {"generator.zip": base64.b64encode(code).decode()},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "backoffLimit": 0,  # a failed load is reported, not retried (it would send the shapes twice)
                "activeDeadlineSeconds": deadline_s,
                "ttlSecondsAfterFinished": 3600,  # kept an hour for `kubectl logs`, then Kubernetes removes it
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
    ]


def read_seen(logs: str) -> dict:
    """What the Job printed after its marker (gzip+base64 lines) as the seen document."""
    import gzip

    lines = logs.splitlines()
    if MARKER not in lines:
        raise ValueError(f"the load Job printed no {MARKER} line; its last lines: {lines[-5:]}")
    encoded = "".join(lines[lines.index(MARKER) + 1 :]).strip()
    return json.loads(gzip.decompress(base64.b64decode(encoded)))
