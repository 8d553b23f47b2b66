"""The in-cluster check of every TPU slice, run by the stack's slice-health CronJob in the workloads image:

    python -m workloads.slice_health --config /etc/slice-health/config.json

It reads the cluster's nodes, the Ray objects and their TPU worker pods through the Kubernetes API with the pod's own
service account (read-only RBAC), and each Ray head's view of its nodes from the Ray dashboard's state API. The checks
are the ones `ray-tpu-gke verify` runs (ray_tpu_gke.workload.slice_checks). It then writes, through Workload
Identity, one point to Cloud Monitoring per slice (`custom.googleapis.com/ray_tpu_gke/slice_healthy`: true when the
slice's hosts are present, Ready and labelled, its pods carry the TPU webhook's environment and Ray sees it whole)
and per Ray object (`custom.googleapis.com/ray_tpu_gke/ray_object_ready`). Every problem is also printed, one line
each, to the pod's log.

Only the standard library and ray_tpu_gke.workload (pure Python, in the image): the image has Ray and JAX, which this
needs neither of. Exit status: 0 when the series
were written (whatever they say), 1 when the cluster could not be read or the series not written, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ray_tpu_gke.workload import slice_checks as sc

# Metric types the check writes (custom metrics: "custom.googleapis.com/" followed by a path, Cloud Monitoring
# "Create user-defined metrics with the API"); the same strings as ray_tpu_gke.catalog.metrics SLICE_HEALTHY and
# RAY_OBJECT_READY, which data/metrics.yaml lists with that source.
SLICE_HEALTHY = "custom.googleapis.com/ray_tpu_gke/slice_healthy"
RAY_OBJECT_READY = "custom.googleapis.com/ray_tpu_gke/ray_object_ready"
# The monitored resource of both: generic_task (project_id, location, namespace, job, task_id; Cloud Monitoring
# "Monitored resource types"), one stable series per slice across CronJob runs (a k8s_container series would end
# with every run's pod). namespace = the cluster's name, job = JOB, task_id = the slice or the Ray object.
RESOURCE_TYPE, JOB = "generic_task", "slice-health"
# Monitoring API v3 projects.timeSeries.create: at most 200 TimeSeries per request, one point each.
MAX_SERIES_PER_REQUEST = 200
MONITORING_URL = "https://monitoring.googleapis.com/v3"
# The GKE metadata server hands the Kubernetes service account's Google token to the pod (GKE "Authenticate to
# Google Cloud APIs from GKE workloads", Workload Identity Federation for GKE).
METADATA_TOKEN_URL = "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
# In-cluster API access: the service account token, CA and the API server's address (Kubernetes "Accessing the
# Kubernetes API from a Pod").
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Ray's dashboard listens on 8265 (KubeRay's head service port "dashboard"); KubeRay names a Ray cluster's head
# service <cluster>-head-svc (ray-operator/controllers/ray/utils/util.go GenerateHeadServiceName).
RAY_URL = "http://{cluster}-head-svc.{namespace}.svc:8265"
# GET /api/v0/nodes of the state API, alive nodes only (Ray 2.55 ray/dashboard/state_api_utils.py options_from_req:
# limit at most RAY_MAX_LIMIT_FROM_API_SERVER, 10000 by default in ray/util/state/common.py; timeout in seconds).
RAY_NODES_PATH = "/api/v0/nodes?limit=10000&timeout=20&filter_keys=state&filter_predicates=%3D&filter_values=ALIVE"
PLURAL = {"RayCluster": "rayclusters", "RayService": "rayservices", "RayJob": "rayjobs"}  # KubeRay CRD plural names

# What is wrong with a slice, most basic first: the first one found is the series' `problem` label.
PROBLEMS = ("missing-host", "host-not-ready", "host-labels", "webhook-env", "worker-ids", "ray-head", "ray-view")


class ReadError(RuntimeError):
    pass


@dataclass
class Http:
    """GET and POST JSON (with a bearer token where one is given), each request bounded by `timeout` seconds;
    `context` verifies the server (the cluster's CA for the Kubernetes API, the system's roots elsewhere)."""

    timeout: float = 20.0
    context: Optional[ssl.SSLContext] = None

    def request(self, url: str, token: str = "", body: Any = None, headers: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
        for key, value in {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}.items():
            request.add_header(key, value)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as error:
            raise ReadError(f"{url}: HTTP {error.code} {error.read().decode(errors='replace')[:300]}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ReadError(f"{url}: {getattr(error, 'reason', error)}") from None
        return json.loads(text) if text.strip() else {}


class KubernetesApi:
    """The few reads the check makes, as the pod's service account."""

    def __init__(self, base: str, token: str, http: Http):
        self.base, self.token, self.http = base.rstrip("/"), token, http

    def get(self, path: str, missing_ok: bool = False) -> Optional[dict]:
        try:
            return self.http.request(self.base + path, self.token)
        except ReadError as error:
            if missing_ok and "HTTP 404" in str(error):
                return None
            raise

    def nodes(self) -> list[dict]:
        return (self.get("/api/v1/nodes") or {}).get("items", [])

    def worker_pods(self, namespace: str, cluster: str) -> list[dict]:
        selector = urllib.parse.quote(f"{sc.CLUSTER_LABEL}={cluster},{sc.NODE_TYPE_LABEL}=worker")
        return (self.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}") or {}).get("items", [])

    def ray_object(self, kind: str, namespace: str, name: str) -> Optional[dict]:
        return self.get(f"/apis/ray.io/v1/namespaces/{namespace}/{PLURAL[kind]}/{name}", missing_ok=True)


# --- what was found ------------------------------------------------------------------------------------------------


@dataclass
class SliceState:
    entry: str  # the tpuSlices entry
    slice: str  # its node pool, or the Ray slice name (TPU_NAME) while its pods have no nodes
    problems: list[str]  # codes of PROBLEMS, in order
    details: list[str]

    @property
    def problem(self) -> str:
        return next((p for p in PROBLEMS if p in self.problems), "none")


@dataclass
class ObjectState:
    kind: str
    namespace: str
    name: str
    ready: bool
    state: str  # what the object's status says (ready, Running, Failed, not-found, ...)
    detail: str


POOL_PROBLEM = {"nodes": "missing-host", "ready": "host-not-ready", "labels": "host-labels"}


def check_cluster(
    config: dict, api: KubernetesApi, ray_nodes: Callable[[str, str], Any]
) -> tuple[list[sc.Check], list[SliceState], list[ObjectState]]:
    """Every check of the stack's slices and Ray objects; `ray_nodes(namespace, cluster)` answers a head's
    /api/v0/nodes (raising ReadError when the head does not answer)."""
    checks: list[sc.Check] = []
    node_list = api.nodes()
    nodes = {sc.name_of(n): n for n in node_list}
    slices: dict[str, SliceState] = {}

    def state(entry: str, key: str) -> SliceState:
        return slices.setdefault(key, SliceState(entry, key, [], []))

    for raw in config.get("pools", []):
        pool = sc.PoolPlan.from_json(raw)
        own = sc.pool_checks(pool, node_list)
        checks += own
        s = state(pool.slice, pool.name)
        for c in own:
            if c.status == sc.FAIL:
                s.problems.append(POOL_PROBLEM[c.name])
                s.details.append(f"{c.name}: {c.detail}")

    objects: list[ObjectState] = []
    for obj in config.get("objects", []):
        kind, namespace, name = obj["kind"], obj["namespace"], obj["name"]
        subject = f"{kind} {namespace}/{name}"
        live = api.ray_object(kind, namespace, name)
        own, cluster = sc.object_checks(subject, kind, name, live, obj.get("clusterSelector"))
        checks += own
        objects.append(_object_state(kind, namespace, name, live, own))
        groups = [sc.GroupPlan.from_json(g) for g in obj.get("groups", [])]
        if not groups or live is None or cluster is None:
            continue
        if kind == "RayJob" and sc.job_finished(live.get("status") or {}):
            continue  # its Ray cluster lives only as long as the job
        pods = api.worker_pods(namespace, cluster)
        answer, error = None, ""
        try:
            answer = sc.ray_nodes_of_state_api(ray_nodes(namespace, cluster))
            if answer is None:
                error = "the state API answered without nodes"
        except ReadError as failure:
            error = str(failure)
        for group in groups:
            mine = [p for p in pods if sc.labels_of(p).get(sc.GROUP_LABEL) == group.group]
            checks += sc.group_checks(subject, group, mine, nodes)
            slices_with_pods = len(mine) // group.spec.hosts
            ray_checks, ray_problems = sc.ray_view_checks(subject, group, answer, slices_with_pods, error)
            checks += ray_checks
            _attribute(group, mine, nodes, ray_problems, answer is None, error, ray_checks, state)
    return checks, list(slices.values()), objects


def _attribute(
    group: sc.GroupPlan,
    pods: list[dict],
    nodes: dict,
    ray_problems: dict[str, list[str]],
    head_down: bool,
    error: str,
    ray_checks: list[sc.Check],
    state,
) -> None:
    """Each problem of a group's pods and of Ray's view, on the slice (node pool) it belongs to."""
    by_name: dict[str, list[dict]] = {}
    for pod, name in sc.slice_of_pods(pods).items():
        by_name.setdefault(name, []).append(next(p for p in pods if sc.name_of(p) == pod))
    pod_problems = sc.slice_problems(group, pods, nodes)
    lacking = [p for p in pods if sc.name_of(p) not in sc.slice_of_pods(pods)]
    for pod in lacking:  # no TPU_NAME: the webhook did not run for this pod
        key = next(iter(sc.pools_of([pod], nodes)), sc.name_of(pod))
        s = state(group.slice, key)
        s.problems.append("webhook-env")
        s.details.append(f"{sc.name_of(pod)} lacks the TPU webhook's {sc.NAME_ENV}")
    for name, members in sorted(by_name.items()):
        key = ",".join(sorted(sc.pools_of(members, nodes))) or name
        s = state(group.slice, key)
        # The hosts as the slice's own pods see them (all Autopilot has: its pools are GKE's, not the stack's).
        if len(members) < group.spec.hosts:
            s.problems.append("missing-host")
            s.details.append(f"{name}: {len(members)} worker pods of {group.spec.hosts} hosts")
        down = [sc.name_of(p) for p in members if p.get("status", {}).get("phase") != "Running" or not sc.is_ready(p)]
        if down:
            s.problems.append("host-not-ready")
            s.details.append(f"{name}: not running and Ready: {', '.join(down)}")
        unlabelled = sorted(
            {
                p["spec"]["nodeName"]
                for p in members
                if p.get("spec", {}).get("nodeName") in nodes
                and any(sc.labels_of(nodes[p["spec"]["nodeName"]]).get(k) != v for k, v in group.selector.items())
            }
        )
        if unlabelled:
            s.problems.append("host-labels")
            s.details.append(f"{name}: nodes without the group's node labels: {', '.join(unlabelled)}")
        if pod_problems.get(name):
            s.problems.append("worker-ids")
            s.details += pod_problems[name]
        if head_down:
            s.problems.append("ray-head")
            s.details.append(f"the Ray head did not answer: {error}")
        elif ray_problems.get(name) or name not in ray_problems:
            s.problems.append("ray-view")
            s.details.append(
                f"Ray's view of {name}: "
                + (", ".join(ray_problems.get(name) or []) or "no Ray node carries this slice name")
            )


def _object_state(kind: str, namespace: str, name: str, live: Optional[dict], checks: list[sc.Check]) -> ObjectState:
    if live is None:
        return ObjectState(kind, namespace, name, False, "not-found", "not found")
    ready = next(c for c in checks if c.name == "ready")
    status = live.get("status") or {}
    if kind == "RayJob":
        said = status.get("jobDeploymentStatus") or "unset"
    else:
        said = sc.ready_state(kind, live)[1]
    return ObjectState(kind, namespace, name, ready.status == sc.PASS, said, ready.detail)


# --- Cloud Monitoring ----------------------------------------------------------------------------------------------


def time_series(config: dict, slices: list[SliceState], objects: list[ObjectState], now: datetime.datetime) -> list:
    """One TimeSeries per slice and per Ray object, each with one BOOL point at `now` (GAUGE: endTime only)."""
    end = now.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def series(metric: str, labels: dict, task: str, value: bool) -> dict:
        return {
            "metric": {"type": metric, "labels": labels},
            "metricKind": "GAUGE",
            "valueType": "BOOL",
            "resource": {
                "type": RESOURCE_TYPE,
                "labels": {
                    "project_id": config["project"],
                    "location": config["location"],
                    "namespace": config["cluster"],
                    "job": JOB,
                    "task_id": task,
                },
            },
            "points": [{"interval": {"endTime": end}, "value": {"boolValue": value}}],
        }

    out = [
        series(SLICE_HEALTHY, {"entry": s.entry, "slice": s.slice, "problem": s.problem}, s.slice, s.problem == "none")
        for s in slices
    ]
    out += [
        series(
            RAY_OBJECT_READY,
            {"kind": o.kind, "namespace": o.namespace, "name": o.name, "state": o.state},
            f"{o.kind}/{o.namespace}/{o.name}",
            o.ready,
        )
        for o in objects
    ]
    return out


def write(series: list[dict], project: str, token: str, http: Http, url: str = MONITORING_URL) -> None:
    for start in range(0, len(series), MAX_SERIES_PER_REQUEST):
        http.request(
            f"{url}/projects/{project}/timeSeries",
            token,
            {"timeSeries": series[start : start + MAX_SERIES_PER_REQUEST]},
        )


def google_token(http: Http, url: str = METADATA_TOKEN_URL) -> str:
    answer = http.request(url, headers={"Metadata-Flavor": "Google"})
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not token:
        raise ReadError(f"{url}: no access_token in the metadata server's answer")
    return token


# --- the program ---------------------------------------------------------------------------------------------------


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workloads.slice_health", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", required=True, help="the stack's slices and Ray objects (JSON, from the CronJob's ConfigMap)"
    )
    parser.add_argument(
        "--api-server",
        help="Kubernetes API URL (default: the in-cluster one, $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)",
    )
    parser.add_argument("--service-account-dir", default=SERVICE_ACCOUNT_DIR)
    parser.add_argument(
        "--ray-url",
        default=RAY_URL,
        help="Ray dashboard URL of a head, with {cluster} and {namespace} (default %(default)s)",
    )
    parser.add_argument("--monitoring-url", default=MONITORING_URL)
    parser.add_argument("--metadata-url", default=METADATA_TOKEN_URL)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds each request may take")
    parser.add_argument("--dry-run", action="store_true", help="print the series instead of writing them")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None, now: Optional[datetime.datetime] = None) -> int:
    args = parse_args(argv)
    try:
        with open(args.config) as f:
            config = json.load(f)
        missing = [k for k in ("project", "cluster", "location") if not config.get(k)]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
    except (OSError, ValueError) as error:
        print(f"error: {args.config}: {error}", file=sys.stderr)
        return 2
    sa = args.service_account_dir
    try:
        with open(os.path.join(sa, "token")) as f:
            token = f.read().strip()
    except OSError as error:
        print(f"error: no service account token: {error}", file=sys.stderr)
        return 1
    ca = os.path.join(sa, "ca.crt")
    http = Http(args.timeout, ssl.create_default_context(cafile=ca) if os.path.exists(ca) else None)
    base = args.api_server or (
        f"https://{os.environ.get('KUBERNETES_SERVICE_HOST', 'kubernetes.default.svc')}:"
        f"{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
    )
    api = KubernetesApi(base, token, http)
    plain = Http(args.timeout)

    def ray_nodes(namespace: str, cluster: str) -> Any:
        return plain.request(args.ray_url.format(cluster=cluster, namespace=namespace).rstrip("/") + RAY_NODES_PATH)

    try:
        checks, slices, objects = check_cluster(config, api, ray_nodes)
    except ReadError as error:
        print(f"error: cannot read the cluster: {error}", file=sys.stderr)
        return 1
    for c in checks:
        print(f"{c.status.upper():4}  {c.subject}: {c.name}  {c.detail}")
    for s in slices:
        if s.problems:
            print(f"slice {s.slice} ({s.entry}): {s.problem}: {'; '.join(s.details)}")
    series = time_series(config, slices, objects, now or datetime.datetime.now(datetime.timezone.utc))
    if args.dry_run:
        print(json.dumps({"timeSeries": series}, sort_keys=True))
        return 0
    try:
        write(series, config["project"], google_token(plain, args.metadata_url), plain, args.monitoring_url)
    except ReadError as error:
        print(f"error: cannot write the series: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(series)} series to project {config['project']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
