"""The in-cluster slice check (`python -m workloads.slice_health`) against stand-in clusters: a local HTTP server
answers as the Kubernetes API (nodes, pods, KubeRay objects), each Ray head's dashboard (/api/v0/nodes), the GKE
metadata server (a token) and Cloud Monitoring (timeSeries.create, recorded). Each cluster is the one
tests/stand_in_cluster.py builds from a stack's plan, read with the check's own ConfigMap from the same plan; then one
thing is broken at a time and the series it writes must name the slice and what is wrong."""

from __future__ import annotations

import datetime
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from helpers import plan_of, steps_of_type
from ray_tpu_gke import catalog
from ray_tpu_gke.catalog import metrics
from ray_tpu_gke.render import manifests
from ray_tpu_gke.workload import ray_labels, slice_checks
from ray_tpu_gke.workload.slice import SliceSpec
from stand_in_cluster import healthy, make_node, make_pod

from workloads import slice_health

TOKEN, GOOGLE_TOKEN = "k8s-token", "google-token"
NOW = datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.timezone.utc)


def checker_config(stack: str) -> dict:
    config_map = steps_of_type(plan_of(stack), "kubernetes:core/v1:ConfigMap")
    data = next(s["newState"]["inputs"]["data"] for s in config_map
                if s["newState"]["inputs"]["metadata"]["name"] == "slice-health")
    return json.loads(data["config.json"])


def ray_nodes_of(pods: list[dict], groups: dict[str, slice_checks.GroupPlan]) -> list[dict]:
    """What a Ray head's state API lists for these worker pods: one alive node each, with the labels Ray 2.55 derives
    from the pod's environment (the webhook's TPU_NAME and TPU_WORKER_ID, GKE's topology and accelerator type)."""
    rows = [{"node_id": "head0000", "node_ip": "10.0.0.1", "is_head_node": True, "state": "ALIVE", "labels": {},
             "resources_total": {"CPU": 2.0}}]
    for i, pod in enumerate(pods):
        group = groups[pod["metadata"]["labels"]["ray.io/group"]]
        spec: SliceSpec = group.spec
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
        labels = {ray_labels.NODE_GROUP: group.group, ray_labels.TOPOLOGY: spec.topology,
                  ray_labels.POD_TYPE: spec.pod_type, ray_labels.ACCELERATOR_TYPE: spec.accelerator_type}
        if env.get("TPU_NAME"):
            labels[ray_labels.SLICE_NAME] = env["TPU_NAME"]
        if env.get("TPU_WORKER_ID") is not None:
            labels[ray_labels.WORKER_ID] = env["TPU_WORKER_ID"]
        rows.append({"node_id": f"{i:08x}", "node_ip": f"10.0.1.{i}", "is_head_node": False, "state": "ALIVE",
                     "labels": labels, "resources_total": {"CPU": 8.0, "TPU": float(spec.chips_per_host)}})
    return rows


class StandIn:
    """Answers the check's requests from `state` and records the series written."""

    def __init__(self, state: dict, config: dict):
        self.state, self.written, self.auth = state, [], []
        self.groups = {g["group"]: slice_checks.GroupPlan.from_json(g) for o in config["objects"]
                       for g in o["groups"]}
        self.down: set[str] = set()  # Ray clusters whose head does not answer
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                stand_in.answer(self)

            def do_POST(self):
                stand_in.answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for the loop's next poll: 0.5 s a test at serve_forever's default interval
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def reply(self, handler, code: int, body) -> None:
        data = json.dumps(body).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def answer(self, handler) -> None:
        url = urllib.parse.urlsplit(handler.path)
        parts = url.path.strip("/").split("/")
        self.auth.append((parts[0], handler.headers.get("Authorization", ""), handler.headers.get("Metadata-Flavor")))
        if parts[0] == "token":
            return self.reply(handler, 200, {"access_token": GOOGLE_TOKEN, "expires_in": 3599})
        if parts[0] == "v3":
            length = int(handler.headers["Content-Length"])
            self.written.append((url.path, json.loads(handler.rfile.read(length))))
            return self.reply(handler, 200, {})
        if parts[0] == "ray":
            namespace, cluster = parts[1], parts[2]
            if cluster in self.down:
                return self.reply(handler, 503, {"result": False, "msg": "unavailable"})
            pods = [p for p in self.state["pods"] if p["metadata"]["namespace"] == namespace
                    and p["metadata"]["labels"]["ray.io/cluster"] == cluster]
            rows = ray_nodes_of(pods, self.groups)
            return self.reply(handler, 200, {"result": True, "msg": "", "data": {"result": {
                "total": len(rows), "num_after_truncation": len(rows), "num_filtered": len(rows), "result": rows}}})
        # parts[0] == "k8s": the Kubernetes API
        path, query = parts[1:], urllib.parse.parse_qs(url.query)
        if path == ["api", "v1", "nodes"]:
            return self.reply(handler, 200, {"kind": "NodeList", "items": self.state["nodes"]})
        if path[:3] == ["api", "v1", "namespaces"] and path[4] == "pods":
            wanted = dict(kv.split("=") for kv in query["labelSelector"][0].split(","))
            items = [p for p in self.state["pods"] if p["metadata"]["namespace"] == path[3]
                     and all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
            return self.reply(handler, 200, {"kind": "PodList", "items": items})
        if path[:3] == ["apis", "ray.io", "v1"]:
            namespace, plural, name = path[4], path[5], path[6]
            kind = {v: k for k, v in slice_health.PLURAL.items()}[plural]
            obj = self.state["objects"].get(f"{kind.lower()}/{namespace}/{name}")
            return self.reply(handler, 200, obj) if obj else self.reply(handler, 404, {"reason": "NotFound"})
        return self.reply(handler, 404, {"reason": "NotFound"})


@pytest.fixture
def check(tmp_path, capsys):
    """Run the check in-process against a stand-in of `stack` (changed by `breaks`); returns the series written by
    slice, the Ray objects' series, the stand-in and stdout."""
    servers = []

    def go(stack: str, breaks=None, down=()):
        config = checker_config(stack)
        state = healthy(stack)
        if breaks:
            breaks(state)
        stand_in = StandIn(state, config)
        stand_in.down |= set(down)
        servers.append(stand_in)
        (tmp_path / "config.json").write_text(json.dumps(config))
        (tmp_path / "token").write_text(TOKEN)
        code = slice_health.main([
            "--config", str(tmp_path / "config.json"), "--api-server", f"{stand_in.url}/k8s",
            "--service-account-dir", str(tmp_path), "--ray-url", f"{stand_in.url}/ray/{{namespace}}/{{cluster}}",
            "--monitoring-url", f"{stand_in.url}/v3", "--metadata-url", f"{stand_in.url}/token", "--timeout", "10",
        ], now=NOW)
        out = capsys.readouterr().out
        assert code == 0, out
        series = [ts for _, body in stand_in.written for ts in body["timeSeries"]]
        slices = {ts["metric"]["labels"]["slice"]: ts for ts in series if ts["metric"]["type"] == metrics.SLICE_HEALTHY}
        objects = {ts["resource"]["labels"]["task_id"]: ts for ts in series
                   if ts["metric"]["type"] == metrics.RAY_OBJECT_READY}
        return slices, objects, stand_in, out

    yield go
    for s in servers:
        s.server.shutdown()


def verdicts(slices: dict) -> dict[str, tuple[bool, str]]:
    return {name: (ts["points"][0]["value"]["boolValue"], ts["metric"]["labels"]["problem"])
            for name, ts in slices.items()}


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_a_healthy_cluster_writes_one_healthy_series_per_slice(check, stack):
    slices, objects, stand_in, _ = check(stack)
    config = checker_config(stack)
    assert set(slices) == {p["name"] for p in config["pools"]}
    assert set(verdicts(slices).values()) == {(True, "none")}
    assert all(ts["points"][0]["value"]["boolValue"] for ts in objects.values())
    assert set(objects) == {f"{o['kind']}/{o['namespace']}/{o['name']}" for o in config["objects"]}
    one = next(iter(slices.values()))
    assert one["resource"] == {"type": "generic_task", "labels": {
        "project_id": config["project"], "location": config["location"], "namespace": config["cluster"],
        "job": "slice-health", "task_id": one["metric"]["labels"]["slice"]}}
    assert one["points"][0]["interval"] == {"endTime": "2026-12-01T10:00:00Z"}
    # The Kubernetes API with the pod's token, Monitoring with the metadata server's, the Ray heads without.
    assert {(where, auth) for where, auth, _ in stand_in.auth} >= {("k8s", f"Bearer {TOKEN}"),
                                                                  ("v3", f"Bearer {GOOGLE_TOKEN}"), ("ray", "")}
    assert ("token", "", "Google") in stand_in.auth
    assert [path for path, _ in stand_in.written] == [f"/v3/projects/{config['project']}/timeSeries"]


def _node(state: dict, name: str) -> dict:
    return next(n for n in state["nodes"] if n["metadata"]["name"] == name)


def test_a_host_without_gkes_tpu_labels_names_its_slice(check):
    def breaks(state):
        del _node(state, "gke-v6e-16-0-2")["metadata"]["labels"][catalog.TOPOLOGY_LABEL]

    slices, _, _, out = check("staging", breaks)
    assert verdicts(slices) == {"v6e-16-0": (False, "host-labels")}
    assert "gke-v6e-16-0-2 cloud.google.com/gke-tpu-topology=None" in out


def test_a_slice_missing_a_host_is_not_whole(check):
    def breaks(state):
        state["nodes"] = [n for n in state["nodes"] if n["metadata"]["name"] != "gke-v6e-16-0-3"]
        state["pods"] = [p for p in state["pods"] if p["spec"]["nodeName"] != "gke-v6e-16-0-3"]

    slices, _, _, out = check("staging", breaks)
    assert verdicts(slices) == {"v6e-16-0": (False, "missing-host")}
    assert "3 nodes, expected 0 or 4 (hosts of v6e-16)" in out
    assert "v6e-16-0: hosts: 3 hosts, expected 4" in out  # Ray's view says it too


def test_duplicate_worker_ids_name_the_slice(check):
    def breaks(state):
        pod = next(p for p in state["pods"] if p["spec"]["nodeName"] == "gke-v6e-16-0-3")
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        env["TPU_WORKER_ID"]["value"] = "0"

    slices, _, _, out = check("staging", breaks)
    assert verdicts(slices) == {"v6e-16-0": (False, "worker-ids")}
    assert "TPU_WORKER_ID 0, 0, 1, 2, expected 0, 1, 2, 3" in out
    assert "duplicate ray.io/tpu-worker-id 0" in out


def test_a_ray_head_that_does_not_answer_fails_its_slices(check):
    slices, _, _, out = check("staging", down={"train"})
    assert verdicts(slices) == {"v6e-16-0": (False, "ray-head")}
    assert "the Ray head did not answer" in out and "HTTP 503" in out


def test_a_failed_rayjob_and_an_unready_raycluster_are_written_as_such(check):
    def breaks(state):
        state["objects"]["rayjob/ray/smoke"]["status"] = {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"}
        # The head pod died after the cluster was first ready: KubeRay leaves the deprecated status.state at ready
        # and turns HeadPodReady False (v1.7 raycluster_types.go).
        status = state["objects"]["raycluster/ray/train"]["status"]
        assert status["state"] == "ready"
        head = next(c for c in status["conditions"] if c["type"] == "HeadPodReady")
        head.update(status="False", reason="HeadPodNotFound")

    _, objects, _, _ = check("staging", breaks)
    job, cluster = objects["RayJob/ray/smoke"], objects["RayCluster/ray/train"]
    assert (job["points"][0]["value"]["boolValue"], job["metric"]["labels"]["state"]) == (False, "Failed")
    assert (cluster["points"][0]["value"]["boolValue"], cluster["metric"]["labels"]["state"]) == (
        False, "HeadPodReady False (HeadPodNotFound)")


def test_a_raycluster_is_ready_by_its_conditions_not_its_deprecated_state():
    def cluster(**conditions: str) -> dict:
        return {"status": {"state": "ready", "conditions": [{"type": t, "status": v} for t, v in conditions.items()]}}

    assert slice_checks.ready_state("RayCluster", cluster(HeadPodReady="True", RayClusterProvisioned="True")) == (
        True, "ready")
    assert slice_checks.ready_state("RayCluster", cluster(HeadPodReady="False", RayClusterProvisioned="True")) == (
        False, "HeadPodReady False")
    assert slice_checks.ready_state("RayCluster", cluster(HeadPodReady="True")) == (
        False, "RayClusterProvisioned unset")
    checks, _ = slice_checks.object_checks("RayCluster ray/train", "RayCluster", "train", cluster(
        HeadPodReady="False", RayClusterProvisioned="True"))
    assert [(c.name, c.status, c.detail) for c in checks][-1] == ("ready", slice_checks.FAIL, "HeadPodReady False")


def test_the_api_server_unreachable_exits_1_without_writing(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(checker_config("staging")))
    (tmp_path / "token").write_text(TOKEN)
    code = slice_health.main(["--config", str(tmp_path / "config.json"), "--api-server", "http://127.0.0.1:9",
                              "--service-account-dir", str(tmp_path), "--timeout", "5"])
    assert code == 1
    assert "cannot read the cluster" in capsys.readouterr().err


def test_the_shared_constants_are_the_librarys():
    assert (slice_checks.ACCELERATOR_LABEL, slice_checks.TOPOLOGY_LABEL, slice_checks.TPU_RESOURCE) == (
        catalog.ACCELERATOR_LABEL, catalog.TOPOLOGY_LABEL, catalog.TPU_RESOURCE)
    assert slice_checks.SLICE_LABEL == manifests.SLICE_LABEL
    for kind, (path, value) in slice_checks.READY_FIELD.items():
        assert manifests._READY[kind] == f"jsonpath={{.{'.'.join(path)}}}={value}"
    assert (slice_health.SLICE_HEALTHY, slice_health.RAY_OBJECT_READY) == (metrics.SLICE_HEALTHY,
                                                                          metrics.RAY_OBJECT_READY)
    assert slice_health.RESOURCE_TYPE in metrics.metric_list().resources


def test_the_check_runs_in_the_workloads_interpreter_as_the_cronjob_runs_it(tmp_path):
    """The CronJob's command (`python -m workloads.slice_health --config ...`) in the workloads virtualenv (Ray 2.55,
    the image's Python), against a stand-in of staging: it writes the same healthy series."""
    import os
    import subprocess
    import sys

    from helpers import ROOT, workloads_python

    python = workloads_python()
    config = checker_config("staging")
    stand_in = StandIn(healthy("staging"), config)
    try:
        (tmp_path / "config.json").write_text(json.dumps(config))
        (tmp_path / "token").write_text(TOKEN)
        (cron,) = [s["newState"]["inputs"] for s in steps_of_type(plan_of("staging"), "kubernetes:batch/v1:CronJob")]
        command = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
        assert command[:3] == ["python", "-m", "workloads.slice_health"]
        done = subprocess.run(
            [python, *command[1:4], str(tmp_path / "config.json"), "--api-server", f"{stand_in.url}/k8s",
             "--service-account-dir", str(tmp_path), "--ray-url", f"{stand_in.url}/ray/{{namespace}}/{{cluster}}",
             "--monitoring-url", f"{stand_in.url}/v3", "--metadata-url", f"{stand_in.url}/token"],
            cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        (written,) = [body for _, body in stand_in.written]
        slices = [ts for ts in written["timeSeries"] if ts["metric"]["type"] == metrics.SLICE_HEALTHY]
        assert [ts["metric"]["labels"]["problem"] for ts in slices] == ["none"]
        assert sys.executable != python
    finally:
        stand_in.server.shutdown()


def _autopilot_slice(state: dict) -> str:
    """Scale sandbox's v6e-16-flex group (4 hosts) up to one slice, as Autopilot would: four nodes in a pool GKE
    names, four worker pods with the webhook's environment on them; returns the pool's name."""
    config = checker_config("sandbox")
    (obj,) = config["objects"]
    group = next(slice_checks.GroupPlan.from_json(g) for g in obj["groups"] if g["group"] == "v6e-16")
    pool = "nap-ct6e-standard-4t-a1b2"
    for w in range(group.spec.hosts):
        state["nodes"].append(make_node(f"gk3-v6e-16-0-{w}", {**group.selector, "cloud.google.com/gke-nodepool": pool,
                                                             "node.kubernetes.io/instance-type": "ct6e-standard-4t"},
                                        group.spec.chips_per_host))
        state["pods"].append(make_pod(obj["namespace"], obj["name"], group, 0, w, f"gk3-v6e-16-0-{w}"))
    return pool


def test_autopilot_slices_are_named_by_the_pools_gke_made_and_checked_through_their_pods(check):
    pools = []
    slices, _, _, _ = check("sandbox", lambda state: pools.append(_autopilot_slice(state)))
    assert verdicts(slices) == {pools[0]: (True, "none")}  # GKE's own pool: the stack names none in Autopilot

    def breaks(state):
        pools.append(_autopilot_slice(state))
        node = next(n for n in state["nodes"] if n["metadata"]["name"] == "gk3-v6e-16-0-1")
        del node["metadata"]["labels"][catalog.TOPOLOGY_LABEL]

    slices, _, _, out = check("sandbox", breaks)
    assert verdicts(slices) == {pools[1]: (False, "host-labels")}
    assert "nodes without the group's node labels: gk3-v6e-16-0-1" in out
