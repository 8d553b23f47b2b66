"""The live LLM comparison (`python -m plan.compare STACK --llm --context CTX`): per side, the serving comparison's live
run (serving/live.py: a fresh RayService from the stack's spec, its head found, Serve's state polled through a
port-forward of the dashboard, pods and nodes watched, the RayService deleted after) with the load sent from inside
the cluster: a Job on the head's CPU pool (job.py) aimed at the RayService's Serve Service, its findings read from
its logs. Then the accelerators' utilisation and memory over the load's window (accelerators.py)."""

from __future__ import annotations

import json
import time
from typing import Callable, Optional

from ..serving import drive as serving_drive
from ..serving import live as serving_live
from ..serving.services import ServiceSide, run_manifest
from . import job
from .accelerators import Monitoring
from .sides import model_id, server_deployment

LiveError = serving_live.LiveError
JOB_POLL_S = 10.0


def _deadline(shapes: list, timeout_s: float, cold_timeout_s: float) -> int:
    return int(sum(s.duration_s for s in shapes) + cold_timeout_s * (2 + len(shapes)) + timeout_s + 600)


def job_traffic(
    kubectl,
    side: ServiceSide,
    run_id: str,
    image: Optional[str],
    *,
    url_for: Callable[[str, str], str] = job.serve_url,
    poll_s: float = JOB_POLL_S,
    sleep=time.sleep,
    clock=time.time,
):
    """drive.traffic's stand-in for a live run: the same load, sent by a Job in the cluster."""

    def traffic(seen, url, shapes, load, *, timeout_s, cold_timeout_s, say=print):
        service = seen["service"]
        order = job.spec(
            url_for(service, side.namespace), side.name, model_id(side), shapes, load, timeout_s, cold_timeout_s
        )
        deadline = _deadline(shapes, timeout_s, cold_timeout_s)
        made = job.manifests(side, service, run_id, order, job.archive(), image, deadline)
        name = made[1]["metadata"]["name"]
        for manifest in made:
            kubectl.json("create", "-f", "-", stdin=json.dumps(manifest))
        say(f"{side.name}: load Job {side.namespace}/{name} created, aimed at {order['url']}")
        try:
            until = clock() + deadline + 120
            while clock() < until:
                status = (kubectl.get("job", name, side.namespace) or {}).get("status") or {}
                if status.get("succeeded") or status.get("failed"):
                    break
                sleep(poll_s)
            else:
                raise LiveError(f"load Job {name} not finished within {deadline + 120} s")
            logs = kubectl.run("logs", f"job/{name}", "-n", side.namespace).stdout
            try:
                got = job.read_seen(logs)
            except ValueError as error:
                raise LiveError(f"load Job {name}: {error}") from None
        finally:
            kubectl.run("delete", "configmap", name, "-n", side.namespace, "--wait=false")
        for key in ("model", "cold", "patterns", "agreement"):
            if key in got:
                seen[key] = got[key]
        seen["problems"] += got.get("problems", [])
        seen["loadJob"] = name

    return traffic


def _window(seen: dict) -> Optional[tuple[float, float]]:
    spans = [(d["run"]["startedAt"], d["endedAt"]) for d in seen.get("patterns", {}).values()]
    return (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None


def collect(
    args,
    found: list[ServiceSide],
    run_id: str,
    shapes: list,
    load,
    *,
    timeout_s: float,
    say=print,
    kubectl=None,
    monitoring: Optional[Monitoring] = None,
    **options,
) -> list[dict]:
    """Both sides, one after the other (they may share the stack's pools)."""
    if kubectl is None:
        from ...verify.kubectl import Kubectl

        kubectl = Kubectl(args.context, args.kubeconfig)
    job_options = {k: v for k, v in (("url_for", options.pop("url_for", None)), ("poll_s", options.get("poll_s"))) if v}
    out = []
    for side in found:
        traffic = job_traffic(
            kubectl,
            side,
            run_id,
            getattr(args, "load_image", None),
            sleep=options.get("sleep", time.sleep),
            clock=options.get("clock", time.time),
            **job_options,
        )
        seen = serving_live.run_side(
            kubectl,
            side,
            run_id,
            shapes,
            load,
            timeout_s=timeout_s,
            say=say,
            traffic=traffic,
            deployment=server_deployment(side),
            **options,
        )
        window = _window(seen)
        if monitoring is not None and window and seen.get("rayCluster"):
            try:
                seen["accelerators"] = monitoring.usage(side.kind, side.namespace, seen["rayCluster"], *window)
            except Exception as error:  # no permission, no metrics API: said, the rest of the report stands
                seen["problems"].append(f"{side.name}: accelerators: {type(error).__name__}: {str(error)[:200]}")
        out.append(seen)
    return out


def cost_ceiling(found: list[ServiceSide], shapes: list) -> dict:
    """The most a live run can cost in accelerators: every side's nodes at the groups' maximum for the whole run (the
    head's start and the first request at their timeouts, every shape, the agreement and the nodes' idle timeout)."""
    hours = (
        serving_drive.APP_TIMEOUT_S
        + serving_drive.COLD_TIMEOUT_S * 2
        + sum(s.duration_s for s in shapes)
        + max(((s.idle_timeout_s or 60.0) for s in found), default=60.0)
    ) / 3600
    usd = sum(s.max_nodes * (s.node_hourly or 0.0) * hours for s in found)
    basis = "; ".join(f"{s.name}: {s.max_nodes} node(s) x ${s.node_hourly or 0:,.2f}/hour" for s in found)
    return {"usd": round(usd, 2), "hoursPerSide": round(hours, 3), "basis": f"{basis}, {hours:.2f} h each at most"}


def dry_run(
    found, run_id: str, ceiling: dict, shapes: list, load, timeout_s: float, image: Optional[str] = None
) -> int:
    """What a live run creates, per side: the RayService, and the load Job with its ConfigMap (the code zip shown by
    its size), and the cost ceiling."""
    import yaml

    from ..serving.services import service_name

    code = job.archive()
    for side in found:
        service = service_name(side, run_id)
        cold = serving_drive.COLD_TIMEOUT_S
        order = job.spec(
            job.serve_url(service, side.namespace), side.name, model_id(side), shapes, load, timeout_s, cold
        )
        made = job.manifests(side, service, run_id, order, code, image, _deadline(shapes, timeout_s, cold))
        made[0]["binaryData"] = {"generator.zip": f"<{len(code)} bytes: {', '.join(job.MODULES)}>"}
        made[0]["data"] = {
            "spec.json": f"<{len(made[0]['data']['spec.json'])} characters: the shapes and prompts, aimed at "
            f"{order['url']}>"
        }
        for manifest in (run_manifest(side, run_id), *made):
            print(yaml.safe_dump(manifest, sort_keys=False), end="---\n")
    print(f"# cost ceiling: ${ceiling['usd']:,.2f} ({ceiling['basis']})")
    return 0
