"""The live serving collector against a stand-in cluster: a fake kubectl that answers with the Kubernetes objects a
RayService run produces (the RayService and its RayCluster's name, head and worker pods, a node that is created, gets
Ready and goes), and a stand-in head that serves Serve's REST API (/api/serve/applications/, replicas going from
STARTING to RUNNING as a scripted autoscaler adds them) and the application's answers. Each measure of the report is
checked against the script."""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time

import pytest
from compare_runs import iso

from plan.compare import __main__ as compare_cli
from plan.compare.serving import cli, live, patterns, report, services
from plan.compare.sides import RUN_LABEL

HEAD_AFTER, APP_AFTER = 0.3, 0.2  # head pod Ready after creation; Serve's application RUNNING after that
NODE_READY, POD_READY, REPLICA_READY = 0.3, 0.5, 0.9  # after the first request: node Ready, pod Ready, replica ready


class Cluster:
    """The scripted cluster: one RayService run at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.created = self.first_request = self.upscaled = self.deleted = None
        self.manifest, self.calls, self.arrivals = None, [], []

    def replicas(self, now: float) -> list[dict]:
        out = []
        if self.first_request is not None:
            start = self.first_request + POD_READY
            out.append({"replica_id": "a", "start_time_s": start,
                        "state": "RUNNING" if now >= self.first_request + REPLICA_READY else "STARTING"})
        if self.upscaled is not None:
            out.append({"replica_id": "b", "start_time_s": self.upscaled,
                        "state": "RUNNING" if now >= self.upscaled + 0.4 else "STARTING"})
        return out

    def serve_document(self, now: float) -> dict:
        if self.created is None or now < self.created + HEAD_AFTER + APP_AFTER:
            return {"applications": {}}
        target = 0 if self.first_request is None else 2 if self.upscaled is not None else 1
        return {"applications": {"scorer": {"status": "RUNNING", "deployments": {"Scorer": {
            "status": "HEALTHY", "target_num_replicas": target, "replicas": self.replicas(now)}}}}}

    def request(self, now: float) -> dict:
        with self.lock:
            self.arrivals.append(now)
            if self.first_request is None:
                self.first_request = now
            recent = [t for t in self.arrivals if t > now - 0.5]
            if self.upscaled is None and len(recent) > 8:  # the stand-in autoscaler: more than 16 requests/s
                self.upscaled = now
        wait = self.first_request + REPLICA_READY - now
        if wait > 0:
            time.sleep(wait)
        return {"scores": [0.0], "replica": {"startedAt": self.first_request + POD_READY + 0.1, "loadS": 0.2,
                                             "compileS": 0.1, "platform": "tpu"}}

    # --- kubectl --------------------------------------------------------------------------------------------------
    def pod(self, name, kind, ready, node=None):
        status = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": iso(ready)}]} \
            if ready is not None and time.time() >= ready else {"conditions": []}
        return {"metadata": {"name": name, "labels": {"ray.io/node-type": kind}}, "spec": {"nodeName": node},
                "status": status}


class FakeKubectl:
    base = ["kubectl", "--context", "stand-in"]

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def json(self, *args, stdin=None, missing_ok=False):
        self.cluster.calls.append(list(args))
        assert args[:3] == ("create", "-f", "-")
        manifest = json.loads(stdin)
        self.cluster.manifest, self.cluster.created = manifest, time.time()
        return {**manifest, "metadata": {**manifest["metadata"], "creationTimestamp": iso(self.cluster.created)}}

    def get(self, kind, name, namespace):
        self.cluster.calls.append(["get", kind, name])
        return {"metadata": {"name": name}, "status": {"pendingServiceStatus": {"rayClusterName": f"{name}-rc"}}}

    def items(self, *args):
        self.cluster.calls.append(list(args))
        c, now = self.cluster, time.time()
        if args[0] == "nodes":
            if c.first_request is None or (c.deleted is not None):
                return []
            created = c.first_request + 0.05
            return [{"metadata": {"name": "gke-tpu-node", "creationTimestamp": iso(created)},
                     "status": {"conditions": [{"type": "Ready", "status": "True",
                                                "lastTransitionTime": iso(c.first_request + NODE_READY)}]}}]
        selector = args[args.index("-l") + 1]
        if "node-type=head" in selector:
            return [c.pod("head-0", "head", c.created + HEAD_AFTER)]
        if c.first_request is None or now < c.first_request + NODE_READY:
            return []
        return [c.pod("worker-0", "worker", c.first_request + POD_READY, node="gke-tpu-node")]

    def run(self, *args, stdin=None):
        self.cluster.calls.append(list(args))
        if args[0] == "delete":
            self.cluster.deleted = time.time()


@pytest.fixture
def stand_in():
    cluster = Cluster()

    class Head(http.server.BaseHTTPRequestHandler):
        def _send(self, body: dict):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            assert self.path == "/api/serve/applications/"
            self._send(cluster.serve_document(time.time()))

        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            self._send(cluster.request(time.time()))

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Head)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    forwards = []

    class Forward:
        def terminate(self):
            forwards.append("terminated")

    def forward(kubectl, namespace, target, port):
        forwards.append((namespace, target, port))
        return f"http://127.0.0.1:{server.server_address[1]}", Forward()

    yield cluster, forward, forwards
    server.shutdown()


@functools.lru_cache(maxsize=None)
def tpu_side():
    plan, values = compare_cli.load_plan("compare")
    return next(s for s in services.services(plan, values) if s.kind == "tpu")


PATTERNS = [patterns.steady(10, 1), patterns.burst(2, 20, 0.5, 1.5, 0.5), patterns.sparse(1, 0.5)]


def test_the_live_collector_measures_a_rayservice_run_from_kubernetes_and_serves_state(stand_in):
    cluster, forward, forwards = stand_in
    side = tpu_side()
    seen = live.run_side(FakeKubectl(cluster), side, "compare-20261201190000", PATTERNS, cli.request_body(8),
                         timeout_s=5, forward=forward, poll_s=0.1, sleep=lambda s: time.sleep(min(s, 0.05)),
                         say=lambda m: None)
    # The per-run RayService: named and labelled for the run, deleted after; the head pod port-forwarded.
    assert cluster.manifest["metadata"]["name"] == "serve-tpu-20261201190000"
    assert cluster.manifest["metadata"]["labels"][RUN_LABEL] == "compare-20261201190000"
    assert ["delete", "rayservice", "serve-tpu-20261201190000", "-n", "compare", "--wait=false"] in cluster.calls
    assert [f for f in forwards if f != "terminated"] == [("compare", "pod/head-0", 8265), ("compare", "pod/head-0",
                                                                                             8000)]
    assert forwards.count("terminated") == 2
    document = report.build("compare", "live", "compare-20261201190000", [side], [seen], PATTERNS, slo_ms=5000,
                            context="stand-in")
    entry = document["serving"][0]
    assert document["problems"] == [] and document["complete"] is True
    cold = entry["coldStartS"]
    sent = seen["cold"]["startedAt"] + seen["cold"]["outcomes"][0]["sent"]
    assert cold["rayStartS"] == pytest.approx(sent - cluster.created, abs=0.01)
    assert cold["rayStartS"] >= HEAD_AFTER + APP_AFTER
    arrived = cluster.first_request  # the stand-in's own times of the node, the pod and the replica
    assert cold["capacityAndNodeS"] == pytest.approx(arrived + NODE_READY - sent, abs=0.01)
    assert cold["podAndImageS"] == pytest.approx(POD_READY - NODE_READY, abs=0.01)
    assert cold["replicaStartS"] == pytest.approx(0.1 + 0.2 + 0.1, abs=0.01)  # the replica's own figures
    assert cold["firstResponseS"] >= REPLICA_READY - POD_READY - 0.4 - 0.01
    assert cold["totalS"] == pytest.approx(sum(cold[k] for k in ("rayStartS", "capacityAndNodeS", "podAndImageS",
                                                                  "replicaStartS", "firstResponseS")), abs=0.02)
    for name, pattern in zip(("steady", "burst", "sparse"), PATTERNS):
        summary = entry["patterns"][name]
        assert (summary["requests"], summary["errors"]) == (pattern.requests, 0)
        assert summary["costPerMillionUsd"] > 0 and summary["billedNodeS"] > 0
    # The scripted autoscaler added replica b during the burst's high step; Serve's state shows it RUNNING 0.4 s on.
    assert entry["autoscale"]["replica"] == "b" and entry["autoscale"]["toReplicas"] == 2
    assert entry["autoscaleReactionS"] == pytest.approx(cluster.upscaled + 0.4 - entry["autoscale"]["stepAt"],
                                                        abs=0.6)
    node = entry["nodes"][0]
    assert node["name"] == "gke-tpu-node" and node["removedAt"] is not None  # gone once the service was deleted
    assert entry["idleCostPerHourUsd"] == 0


def test_a_live_run_states_its_cost_ceiling_and_what_it_creates(capsys):
    side = tpu_side()
    ceiling = cli.cost_ceiling([side], PATTERNS)
    hours = (900 + 600 + sum(p.duration_s for p in PATTERNS) + side.idle_timeout_s) / 3600  # drive's timeouts
    assert ceiling["usd"] == pytest.approx(side.max_nodes * side.node_hourly * hours, abs=0.01)
    assert cli.dry_run([side], "compare-20261201190000", ceiling) == 0
    printed = capsys.readouterr().out
    assert "name: serve-tpu-20261201190000" in printed and f"# cost ceiling: ${ceiling['usd']:,.2f}" in printed


@pytest.mark.parametrize("flags, message", [
    (["--burst-rps", "5"], "error: --burst-rps: '5' is not allowed; allowed: 2 numbers joined by commas"),
    (["--patterns", "steady,steady"], "error: --patterns: 'steady,steady' is not allowed"),
    (["--sparse-gap-s", "30"], "error: --sparse-gap-s: 30 s is not longer than the Serve downscale delay (60 s)"),
    (["--tokens", "-1"], "error: --tokens: -1 is not allowed; allowed: a whole number of at least 0"),
])
def test_bad_serving_flags_exit_2_naming_the_flag(flags, message, capsys):
    assert compare_cli.main(["compare", "--serve", "--context", "stand-in", *flags]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_every_request_is_one_that_any_preset_of_the_model_takes():
    from workloads import lm  # its sizes only: the module imports no JAX until a model is built

    body = cli.request_body(cli.DEFAULT_TOKENS)
    vocab, context = min(c.vocab for c in lm.PRESETS.values()), min(c.seq_len for c in lm.PRESETS.values())
    assert len(body["sequences"]) == cli.PROMPTS and body["generate"] == cli.DEFAULT_TOKENS
    assert all(len(ids) == cli.PROMPT_LENGTH <= context for ids in body["sequences"])
    assert all(0 <= i < vocab for ids in body["sequences"] for i in ids)
    assert len({tuple(ids) for ids in body["sequences"]}) == cli.PROMPTS  # distinct prompts
    assert cli.request_body(0)["generate"] == 0 and cli.request_body(0)["sequences"] == body["sequences"]
