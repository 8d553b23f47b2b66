"""The live LLM collector against a stand-in cluster: a fake kubectl that answers with what a RayService run produces
(its RayCluster's head and worker pods, a node created and Ready after the first request) and runs the load Job it is
given (job_main on the Job's own orders, aimed at a stand-in OpenAI streaming server, tests/compare/openai_standin.py),
a stand-in head serving Serve's REST API (the Ray Serve LLM server deployment's replicas, a second one added by a
scripted autoscaler in the burst), and a stand-in Cloud Monitoring API. Each measure of the llm section is checked
against the script. Also: the Job's manifest (a pure function), its code zip run on its own, --dry-run and the flags'
errors."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import zipfile

import pytest
from compare_runs import iso
from helpers import ROOT
from openai_standin import StandIn

from plan.compare import __main__ as compare_cli
from plan.compare.llm import accelerators, job, job_main, live, prompts, report, shapes, sides
from plan.compare.llm.drive import LlmLoad
from plan.compare.sides import RUN_LABEL

CONFIG = ROOT / "tests" / "data" / "compare-llm.yaml"
NODE_READY, POD_READY, REPLICA_AT = 0.1, 0.2, 0.25  # after the first request's arrival
TTFT_S, ITL_S = 0.5, 0.01  # the stand-in engine's: the first token after the pod is Ready
ACTIVE_S = 0.8  # the scripted Serve scales to zero this long after the last arrival (a request takes 0.56 s)
RUN = "compare-20261205120000"


@functools.lru_cache(maxsize=None)
def plan_and_sides():
    plan, values = compare_cli.load_plan("compare", CONFIG)
    return plan, values, sides.llm_sides(plan, values)


class Cluster:
    def __init__(self, engine: StandIn):
        self.engine, self.calls, self.created, self.deleted, self.upscaled = engine, [], {}, None, None
        self.configmaps, self.jobs, self.logs = {}, {}, {}
        self.upscale_after = 10**9  # arrivals before the burst's high step (set by the fixture)

    @property
    def first(self):
        return self.engine.arrived_epoch[0] if self.engine.arrived_epoch else None

    def activations(self, now: float) -> list[float]:
        """When the service started from zero: the first request, and each one that came after it had gone idle
        (ACTIVE_S after the last arrival: the scripted scale to zero)."""
        out, until = [], None
        for t in (t for t in self.engine.arrived_epoch if t <= now):
            if until is None or t > until:
                out.append(t)
            until = t + ACTIVE_S
        return out

    def idle(self, now: float) -> bool:
        arrived = [t for t in self.engine.arrived_epoch if t <= now]
        return not arrived or now > arrived[-1] + ACTIVE_S

    def serve_document(self, deployment: str) -> dict:
        now = time.time()
        if "rayservice" not in self.created:
            return {"applications": {}}
        # the scripted autoscaler: a second replica at the first poll after the burst's high step began
        if self.upscaled is None and len(self.engine.arrived_epoch) > self.upscale_after:
            self.upscaled = now
        replicas, target = [], 0
        if not self.idle(now):
            start = self.activations(now)[-1]
            replicas.append(
                {
                    "replica_id": f"r{len(self.activations(now))}",
                    "start_time_s": start + REPLICA_AT,
                    "state": "RUNNING" if now >= start + REPLICA_AT else "STARTING",
                }
            )
            target = 1
            if self.upscaled is not None and self.upscaled >= start:
                replicas.append(
                    {
                        "replica_id": "b",
                        "start_time_s": self.upscaled,
                        "state": "RUNNING" if now >= self.upscaled + 0.3 else "STARTING",
                    }
                )
                target = 2
        return {
            "applications": {
                "llm": {
                    "status": "RUNNING",
                    "deployments": {
                        deployment: {"status": "HEALTHY", "target_num_replicas": target, "replicas": replicas}
                    },
                }
            }
        }


class FakeKubectl:
    base = ["kubectl", "--context", "stand-in"]

    def __init__(self, cluster: Cluster):
        self.c = cluster

    def json(self, *args, stdin=None, missing_ok=False):
        self.c.calls.append(list(args))
        manifest = json.loads(stdin)
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        self.c.created[kind.lower()] = time.time()
        if kind == "ConfigMap":
            self.c.configmaps[name] = manifest
        elif kind == "Job":  # the Job runs its program on its own orders, as the pod would
            order = json.loads(self.c.configmaps[name]["data"]["spec.json"])

            def run():
                self.c.logs[name] = "\n".join(
                    ["some output"] + job_main.encode(job_main.run(order, say=lambda m: None))
                )
                self.c.jobs[name] = True

            self.c.jobs[name] = False
            threading.Thread(target=run, daemon=True).start()
        else:
            self.c.rayservice = manifest
        return {**manifest, "metadata": {**manifest["metadata"], "creationTimestamp": iso(time.time())}}

    def get(self, kind, name, namespace):
        self.c.calls.append(["get", kind, name])
        if kind == "job":
            return {"status": {"succeeded": 1} if self.c.jobs.get(name) else {}}
        return {"metadata": {"name": name}, "status": {"pendingServiceStatus": {"rayClusterName": f"{name}-rc"}}}

    def pod(self, name, kind, ready, node=None):
        return {
            "metadata": {"name": name},
            "spec": {"nodeName": node},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": iso(ready)}]},
        }

    def items(self, *args):
        self.c.calls.append(list(args))
        starts = self.c.activations(time.time())
        if args[0] == "nodes":
            if self.c.deleted is not None:
                return []
            return [
                {
                    "metadata": {"name": f"gke-node-{i}", "creationTimestamp": iso(t)},
                    "status": {
                        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": iso(t + NODE_READY)}]
                    },
                }
                for i, t in enumerate(starts)
            ]
        selector = args[args.index("-l") + 1]
        if "node-type=head" in selector:
            return [self.pod("head-0", "head", self.c.created["rayservice"])]
        return [
            self.pod(f"worker-{i}", "worker", t + POD_READY, node=f"gke-node-{i}")
            for i, t in enumerate(starts)
            if time.time() >= t + POD_READY
        ]

    def run(self, *args, stdin=None):
        self.c.calls.append(list(args))
        if args[0] == "delete" and args[1] == "rayservice":
            self.c.deleted = time.time()
        return subprocess.CompletedProcess(args, 0, self.c.logs.get(args[1].split("/")[-1], ""), "")


@pytest.fixture(scope="module")
def live_run():
    plan, values, found = plan_and_sides()
    tpu = next(s for s in found if s.kind == "tpu")
    with StandIn(TTFT_S, ITL_S) as engine:
        cluster = Cluster(engine)
        chosen = [
            shapes.poisson(8.0, 1.0, seed=0),
            shapes.burst(2.0, 20.0, 0.5, 2.0, 0.5, seed=0),
            shapes.sparse(1, 1.5, None),
        ]
        # the cold request, the Poisson shape's and the burst's low step's: the next arrival is the high step's
        cluster.upscale_after = 1 + chosen[0].requests + sum(1 for _, label in chosen[1].sends if label == "low")

        class Head(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                data = json.dumps(cluster.serve_document(sides.server_deployment(tpu))).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        head = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Head)
        head.daemon_threads = True
        threading.Thread(target=head.serve_forever, daemon=True).start()

        class Forward:
            def terminate(self):
                pass

        def forward(kubectl, namespace, target, port):
            return f"http://127.0.0.1:{head.server_address[1]}", Forward()

        queries = []

        def fetch(url, params):
            queries.append((url, params))
            metric = params["filter"].split('"')[1]
            value = {"memory_total": 32e9, "memory_used": 20e9}.get(metric.rsplit("/", 1)[-1], 50.0)
            if "pageToken" not in params:
                return {"timeSeries": [{"points": [{"value": {"doubleValue": value}}]}], "nextPageToken": "2"}
            return {"timeSeries": [{"points": [{"value": {"int64Value": str(int(value / 2))}}]}]}

        load = LlmLoad(
            prompts.prompt_set(8, 6, 0.0, seed=0, count=4).prompts(),
            agree_count=3,
            agree_tokens=4,
            models={tpu.name: sides.model_id(tpu)},
        )
        seen = live.collect(
            None,
            [tpu],
            RUN,
            chosen,
            load,
            timeout_s=30,
            say=lambda m: None,
            kubectl=FakeKubectl(cluster),
            monitoring=accelerators.Monitoring("acme", "ray-compare", fetch),
            forward=forward,
            poll_s=0.05,
            url_for=lambda service, namespace: engine.url,
            sleep=lambda s: time.sleep(min(s, 0.05)),
        )
        head.shutdown()
    document = report.build(
        "compare",
        "live",
        RUN,
        [(tpu.name, tpu)],
        seen,
        chosen,
        slo_ms={"ttft": 5000.0},
        plan=plan,
        prompts={},
        agree_tokens=4,
        context="stand-in",
    )
    return tpu, cluster, seen[0], document, queries, chosen


def test_the_run_creates_the_rayservice_and_the_load_job_and_cleans_up(live_run):
    tpu, cluster, seen, document, *_ = live_run
    service = cluster.rayservice["metadata"]["name"]
    assert service == "llm-tpu-20261205120000" and cluster.rayservice["metadata"]["labels"][RUN_LABEL] == RUN
    assert ["delete", "rayservice", service, "-n", "compare", "--wait=false"] in cluster.calls
    assert ["delete", "configmap", f"{service}-load", "-n", "compare", "--wait=false"] in cluster.calls
    assert seen["loadJob"] == f"{service}-load" and seen["model"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert all(b["model"] == "Qwen/Qwen2.5-1.5B-Instruct" and b["stream"] for b in cluster.engine.bodies)


def test_the_llm_section_is_complete_from_the_job_and_the_cluster(live_run):
    tpu, cluster, seen, document, _, chosen = live_run
    assert document["problems"] == [] and document["complete"], document["problems"]
    entry = document["llm"][0]
    for shape in chosen:
        summary = entry["shapes"][shape.name]
        assert (summary["requests"], summary["errors"]) == (shape.requests, 0)
        assert summary["ttftMs"]["p50"] >= TTFT_S * 1000 * 0.9 and summary["itlMs"]["p50"] >= ITL_S * 1000 * 0.9
    assert entry["costs"]["perMillionTokens"]["outputUsd"] > 0 and entry["costs"]["price"]["asOf"]
    assert entry["idleCostPerHourUsd"] == 0.0  # min_replicas 0
    assert all(entry["shapes"][s.name]["costPerMillionOutputTokensUsd"] > 0 for s in chosen)
    cold, warm = entry["coldStartS"], entry["coldStartCompileCacheWarmS"]
    first = cluster.first
    sent = seen["cold"]["startedAt"] + seen["cold"]["outcomes"][0]["sent"]
    assert cold["capacityAndNodeS"] == pytest.approx(first + NODE_READY - sent, abs=0.02)
    assert cold["podAndImageS"] == pytest.approx(POD_READY - NODE_READY, abs=0.02)
    assert cold["replicaToFirstTokenS"] >= TTFT_S - POD_READY - 0.02  # vLLM reports no start-up figures
    assert len(cluster.activations(time.time())) == 2  # the sparse request found the service at zero
    assert warm["podAndImageS"] == pytest.approx(POD_READY - NODE_READY, abs=0.02) and warm["totalS"] >= TTFT_S
    assert entry["autoscale"]["reaction"]["replica"] == "b" and entry["autoscale"]["peakTarget"] == 2
    assert entry["agreement"]["problem"] == "fewer than two sides decoded the prompts"  # one side: said, no gap


def test_accelerator_usage_comes_from_gkes_metrics_over_the_load(live_run):
    _, _, seen, document, queries, _ = live_run
    usage = document["llm"][0]["accelerators"]
    assert set(usage["metrics"]) == set(accelerators.METRICS["tpu"])
    assert usage["metrics"]["dutyCyclePct"] == {
        "metric": "kubernetes.io/container/accelerator/duty_cycle",
        "mean": 37.5,
        "max": 50.0,
        "points": 2,
    }
    assert usage["memoryUsedShareMax"] == pytest.approx(20 / 32)
    url, params = queries[0]
    assert url == "https://monitoring.googleapis.com/v3/projects/acme/timeSeries"
    assert 'resource.labels.cluster_name = "ray-compare"' in params["filter"]
    assert f'monitoring.regex.full_match("{seen["rayCluster"]}-.*")' in params["filter"]


def test_the_load_job_manifest():
    plan, values, found = plan_and_sides()
    side = next(s for s in found if s.kind == "gpu")
    order = {"url": "u"}
    configmap, made = job.manifests(side, "llm-gpu-1", RUN, order, b"zip", None, 900)
    assert configmap["kind"] == "ConfigMap" and json.loads(configmap["data"]["spec.json"]) == order
    assert made["kind"] == "Job" and made["metadata"]["namespace"] == "compare"
    assert made["metadata"]["labels"][RUN_LABEL] == RUN
    pod = made["spec"]["template"]["spec"]
    head = side.manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    assert pod["nodeSelector"] == head["nodeSelector"]  # the head's CPU pool, not a GPU node
    assert pod["containers"][0]["image"] == head["containers"][0]["image"]
    assert "nvidia.com/gpu" not in json.dumps(pod)
    assert made["spec"]["backoffLimit"] == 0 and made["spec"]["activeDeadlineSeconds"] == 900
    assert (
        job.manifests(side, "x", RUN, order, b"", "python:3.12", 60)[1]["spec"]["template"]["spec"]["containers"][0][
            "image"
        ]
        == "python:3.12"
    )
    assert job.serve_url("llm-gpu-1", "compare") == "http://llm-gpu-1-serve-svc.compare.svc.cluster.local:8000"


def test_the_jobs_code_zip_runs_on_its_own(tmp_path):
    """The zip the ConfigMap carries runs the generator with nothing of the checkout on the path."""
    (tmp_path / "generator.zip").write_bytes(job.archive())
    assert set(zipfile.ZipFile(tmp_path / "generator.zip").namelist()) == {f"plan/{m}" for m in job.MODULES}
    with StandIn(0.0, 0.0) as engine:
        order = job.spec(
            engine.url,
            "side",
            "m",
            [shapes.poisson(5.0, 1.0, seed=0)],
            LlmLoad(prompts.prompt_set(4, 3, 0.0, 0, 2).prompts(), agree_count=2, agree_tokens=2),
            30,
            30,
        )
        (tmp_path / "spec.json").write_text(json.dumps(order))
        done = subprocess.run(
            [sys.executable, "-m", "plan.compare.llm.job_main", str(tmp_path / "spec.json")],
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path / "generator.zip"), "PATH": os.environ["PATH"]},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    got = job.read_seen(done.stdout)
    assert got["problems"] == [] and got["cold"]["outcomes"][0]["outputTokens"] == 3
    assert len(got["agreement"]["outcomes"]) == 2 and got["patterns"]["poisson"]["run"]["outcomes"]


def test_dry_run_prints_the_rayservices_the_load_jobs_and_the_cost_ceiling(capsys):
    code = compare_cli.main(["compare", "--llm", "--dry-run", "--config-file", str(CONFIG), "--run", RUN])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("kind: RayService") == 2 and out.count("kind: Job") == 2 and out.count("kind: ConfigMap") == 2
    assert "llm-tpu-20261205120000-serve-svc.compare.svc.cluster.local:8000" in out
    assert "# cost ceiling: $" in out


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--slo", "ttft=fast"], "--slo"),
        (["--llm-shapes", "steady"], "--llm-shapes"),
        (["--sweep-rates", "4,1"], "--sweep-rates"),
        (["--target", "nourl"], "--target"),
        (["--llm-sides", "nope"], "--llm-sides"),
        (["--target", "x=http://127.0.0.1:1"], "--target"),  # with --dry-run: nothing to show
    ],
)
def test_bad_flags_exit_2_with_the_flag_named(flags, message, capsys):
    assert compare_cli.main(["compare", "--llm", "--dry-run", "--config-file", str(CONFIG), *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_stack_without_an_llm_service_says_so(capsys):
    assert compare_cli.main(["dev", "--llm", "--dry-run"]) == 2
    assert "ray.serve.llm:build_openai_app" in capsys.readouterr().err


def test_a_target_is_measured_with_the_same_prompts(tmp_path, capsys):
    with StandIn(0.02, 0.005) as engine:
        code = compare_cli.main(
            [
                "compare",
                "--llm",
                "--config-file",
                str(CONFIG),
                "--target",
                f"mine={engine.url}",
                "--target",
                f"llm-gpu={engine.url}",
                "--llm-shapes",
                "poisson",
                "--llm-rate",
                "4",
                "--llm-seconds",
                "1",
                "--prompts",
                "3",
                "--output-len",
                "4",
                "--out",
                str(tmp_path),
            ]
        )
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["mode"] == "target" and [s["name"] for s in document["llm"]] == ["mine", "llm-gpu"]
    mine, gpu = document["llm"]
    assert mine["costs"]["formula"] is None and gpu["costs"]["perMillionTokens"]["outputUsd"] > 0
    assert mine["model"] == "stand-in-model" and mine["agreement"]["matchingPrefixShare"] == 1.0
    assert mine["agreement"]["with"] == ["llm-gpu"] and set(mine["agreement"]["firstDifference"].values()) == {None}
    # the endpoint of its own has no price: the one problem, said
    assert document["problems"] == ["mine: costs: an endpoint of its own (--target) has no price in the plan"]
    assert code == 1 and (tmp_path / "report.md").read_text().startswith("# LLM serving measured live")
