"""`python -m plan.compare compare --context CTX` against stand-in clusters played in simulated time.

No cluster exists here, so tests/data/compare/kubectl plays one from a script built below from the compare stack's
plan: the comparison RayJobs this command creates get a Ray cluster, worker pods that wait for a node the autoscaler
brings, a submitter log with the job's event lines and result document (shaped after tests/data/compare/result.json,
the interface of workloads.train), and, when a worker pod is deleted, the restart the job reports. The test's clock
and sleep are the script's time, so every number the report holds can be computed here: a healthy run, a job that
never gets its nodes, a recovery that never happens, and a GPU side that reports the CPU platform.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

import kuberay_schema
from compare_runs import DATA, RESULT, RUN, T, by_name, loaded_plan
from helpers import InProcessKubectl
from plan.compare import __main__ as compare_cli
from plan.compare import sides as sides_module
from plan.verify import kubectl as kubectl_module
from ray_tpu_gke import bench

CONTEXT = "gke_acme-ml-bench_us-central1_ray-compare"
POLL = 10
SPACING = 3  # seconds between steps: step 12 is the last step a poll sees (at 130 on the TPU side, 120 on the GPU)
STEPS = 20


def hourly(item: str) -> float:
    plan, _ = loaded_plan("compare")
    return next(i["hourly"] for i in plan["cost"]["items"] if i["name"] == item)


# --- the script of one side ----------------------------------------------------------------------------------------

def pod(name: str, group: str, phase: str, node: str | None, ready_at=None) -> dict:
    conditions = [{"type": "PodScheduled", "status": "True" if node else "False"}]
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready_at})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "compare",
                         "labels": {"ray.io/cluster": "{cluster}", "ray.io/group": group, "ray.io/node-type": "worker"}},
            "spec": {**({"nodeName": node} if node else {})},
            "status": {"phase": phase, "conditions": conditions}}


def node(name: str, created: float, ready: float | None) -> dict:
    condition = ({"type": "Ready", "status": "True", "lastTransitionTime": {"$iso": ready}} if ready is not None else
                 {"type": "Ready", "status": "False", "lastTransitionTime": {"$iso": created}})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "creationTimestamp": {"$iso": created}, "labels": {}},
            "status": {"conditions": [condition]}}


def result_document(side: str, kind: str, platform: str, recovered: bool, start: float, **changes) -> dict:
    """The job's result, per the interface: steps before the failure (12) and after it, from the checkpoint of 10."""
    result = copy.deepcopy(RESULT)
    times = [2.5] + [0.01 + 0.001 * (i % 4) for i in range(1, STEPS)]
    if recovered:
        times = times[:12] + [2.5] + times[11:STEPS]
    result.update(run=RUN, side=side, kind=kind, platform=platform, simulated=False, steps=STEPS,
                  stepTimesS=times, compiledSteps=[0, 12] if recovered else [0], startedAt={"$t": start - 7},
                  finishedAt={"$td": 21.5} if recovered else {"$t": start + 2 + SPACING * STEPS + 0.5},
                  restarts=[{"failureSeenAt": {"$td": 3}, "resumedAt": {"$td": 11}, "fromStep": 10,
                             "stepsRedone": 2}] if recovered else [],
                  checkpoints={"saveS": [0.3] * (6 if recovered else 4), "restoreS": [0.2] if recovered else []})
    result.update(changes)
    return result


def side_script(side: str, group: str, kind: str, node_name: str, offset: float, *, inject: bool = True,
                nodes_come: bool = True, recovers: bool = True, platform: str | None = None,
                submitter_lag: float = 0, declared: dict | None = None) -> tuple[dict, list]:
    """A side whose node is created at 30 - offset and Ready 20 s later, whose worker pod is Ready 30 s after that and
    whose training loop starts 10 s later; step k is reported at loop + 2 + SPACING k. With `submitter_lag` (and no
    injection), KubeRay shows jobStatus SUCCEEDED while the deployment still runs, and the submitter prints the result
    and turns the deployment Complete that many seconds later (the order kuberay PR #1919 describes)."""
    created, ready = 30 - offset, 50 - offset
    pod_ready, loop = ready + 30, ready + 40
    worker = f"{{cluster}}-{group}-worker-a"
    status = [{"at": 0, "value": {"jobDeploymentStatus": "Initializing"}},
              {"at": 1, "value": {"jobDeploymentStatus": "Initializing", "rayClusterName": "{cluster}"}}]
    events = [{"at": 2, "value": {"involvedObject": {"kind": "Pod", "name": worker}, "reason": "FailedScheduling",
                                  "message": "0/1 nodes are available: 1 Insufficient google.com/tpu.", "count": 3}},
              {"at": 3, "value": {"involvedObject": {"kind": "Pod", "name": worker}, "reason": "TriggeredScaleUp",
                                  "message": "pod triggered scale-up"}}]
    if not nodes_come:
        pods = [{"at": 1, "value": pod(worker, group, "Pending", None)}]
        return {"status": status, "pods": pods, "log": [], "events": events}, []
    pods = [{"at": 1, "until": ready, "value": pod(worker, group, "Pending", None)},
            {"at": ready, "until": pod_ready, "value": pod(worker, group, "Pending", node_name)},
            {"at": pod_ready, "value": pod(worker, group, "Running", node_name, {"$iso": pod_ready})},
            {"atd": 2, "untild": 12, "value": pod(f"{{cluster}}-{group}-worker-b", group, "Pending", node_name)},
            {"atd": 12, "value": pod(f"{{cluster}}-{group}-worker-b", group, "Running", node_name, {"$isod": 12})}]
    events.append({"at": ready + 25, "value": {
        "involvedObject": {"kind": "Pod", "name": worker}, "reason": "Pulled",
        "message": 'Successfully pulled image "us-central1-docker.pkg.dev/acme-ml-bench/ray-tpu-gke/workloads:2.55.0" '
                   "in 24.512s (24.6s including waiting). Image size: 4812331 bytes."}})
    prefix = "(RayTrainWorker pid=4242, ip=10.16.1.5) "
    log = [{"at": loop - 5, "line": "2027-01-15 08:01:20,100\tINFO cli.py:39 -- Job submission server address: "
                                    "http://{cluster}-head-svc.compare.svc.cluster.local:8265"},
           {"at": loop, "prefix": prefix, "beforeDelete": True,
            "event": {"event": "start", "time": {"$t": loop}, "attempt": 0, "fromStep": 0}}]
    for step in range(1, STEPS + 1):
        at = loop + 2 + SPACING * step
        log.append({"at": at, "prefix": prefix, "beforeDelete": True,
                    "event": {"event": "step", "time": {"$t": at}, "step": step, "stepS": 0.01, "loss": 1 / step}})
    recovered = inject and recovers
    end = loop + 2 + SPACING * STEPS + 1  # without a failure
    finish = (lambda d: {"atd": d}) if inject else (lambda d: {"at": end + submitter_lag + d})
    if submitter_lag and not inject:
        status.append({"at": end + 1, "value": {"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED",
                                                "rayClusterName": "{cluster}"}})
    if inject:
        log += [{"atd": 8, "prefix": prefix, "event": {"event": "start", "time": {"$td": 8}, "attempt": 1,
                                                         "fromStep": 10}}]
    if recovered:
        log += [{"atd": 8.2, "prefix": prefix, "event": {"event": "restore", "time": {"$td": 8.2}, "step": 10,
                                                           "restoreS": 0.2}},
                {"atd": 11, "prefix": prefix, "event": {"event": "restart", "time": {"$td": 11}, "fromStep": 10,
                                                          "failureSeenAt": {"$td": 3}, "resumedAt": {"$td": 11},
                                                          "stepsRedone": 2}}]
        log += [{"atd": 11 + i, "prefix": prefix, "event": {"event": "step", "time": {"$td": 11 + i}, "step": 11 + i,
                                                              "stepS": 0.01, "loss": 1 / (11 + i)}}
                for i in range(STEPS - 10)]
    if not inject or recovered:
        document = result_document(side, kind, platform or kind, recovered, loop, **(declared or {}))
        log += [{**finish(22 if inject else 0), "result": document},
                {**finish(22 if inject else 0), "line": "2027-01-15 08:02:40,000\tSUCC cli.py:64 -- Job "
                                                        "'raysubmit_Xq3v9' succeeded"}]
        status.append({**finish(23 if inject else 1), "value": {
            "jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "{cluster}",
            "endTime": {"$isod": 23} if inject else {"$iso": end + submitter_lag + 1}}})
    else:  # the restarted workers never get going: Ray Train gives up
        status.append({"atd": 60, "value": {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED",
                                            "rayClusterName": "{cluster}", "endTime": {"$isod": 60},
                                            "message": "Job failed: TrainingFailedError"}})
    status.insert(2, {"at": pod_ready + 2, "value": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING",
                                                     "rayClusterName": "{cluster}", "startTime": {"$iso": pod_ready}}})
    gone = {"untild": 103} if inject else {"until": end + submitter_lag + 80}
    nodes = [{"at": created, "until": ready, "value": node(node_name, created, None)},
             {"at": ready, **gone, "value": node(node_name, created, ready)}]
    return {"status": status, "pods": pods, "log": log, "events": events}, nodes


def cluster(inject: bool = True, **tpu_options) -> dict:
    gpu_platform = tpu_options.pop("gpu_platform", None)
    lag = tpu_options.get("submitter_lag", 0)
    tpu, tpu_nodes = side_script("bench-tpu", "tpu", "tpu", "gke-ray-compare-v6e-8-1a2b", 0, inject=inject,
                                 **tpu_options)
    gpu, gpu_nodes = side_script("bench-a100", "gpu", "gpu", "gke-ray-compare-a100-8-3c4d", 10, inject=inject,
                                 platform=gpu_platform, submitter_lag=lag)
    system = {"at": -86400, "value": node("gke-ray-compare-system-0", -86400, -86300)}
    return {"context": CONTEXT, "base": T, "now": 0.0, "nodes": [system],
            "scenario": {"bench-tpu": {**tpu, "nodes": tpu_nodes}, "bench-a100": {**gpu, "nodes": gpu_nodes}}}


# --- running the command against it --------------------------------------------------------------------------------

@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """`python -m plan.compare compare --context CONTEXT ARGS` in-process against a scripted cluster; returns (exit
    status, report.json, stderr lines, the stand-in's state afterwards)."""
    monkeypatch.setattr(compare_cli, "load_plan", loaded_plan)
    monkeypatch.setattr(kubectl_module, "subprocess", InProcessKubectl(DATA / "kubectl"))
    path = tmp_path / "cluster.json"
    monkeypatch.setenv("FAKE_KUBECTL_STATE", str(path))

    def state():
        return json.loads(path.read_text())

    def clock():
        return T + state()["now"]

    def sleep(seconds):
        current = state()
        current["now"] += seconds
        path.write_text(json.dumps(current))

    def go(script: dict, *args: str):
        path.write_text(json.dumps(script))
        out = tmp_path / "report"
        code = compare_cli.main(["compare", "--context", CONTEXT, "--run", RUN, "--poll", str(POLL), "--out",
                                 str(out), *args], clock=clock, sleep=sleep)
        err = capsys.readouterr().err.splitlines()
        written = out / "report.json"
        return code, json.loads(written.read_text()) if written.exists() else None, err, state()

    return go


def test_a_healthy_run_with_a_failure_injected_on_each_side(run):
    code, document, err, state = run(cluster(), "--inject-failure", "12", "--wait-for-removal", "300")
    assert document["problems"] == [] and code == 0, err
    assert len(err) == 1 and err[0].startswith("report complete: ")
    tpu, gpu = by_name(document)["bench-tpu"], by_name(document)["bench-a100"]
    # Start-up from the API's timestamps and the job's events (see side_script).
    assert tpu["startup"] == {"capacityWaitS": 50.0, "podStartS": 30.0, "rayStartS": 10.0, "firstStepS": 5.0}
    assert gpu["startup"] == {"capacityWaitS": 40.0, "podStartS": 30.0, "rayStartS": 10.0, "firstStepS": 5.0}
    assert tpu["cluster"]["imagePullS"] == 24.6 and tpu["cluster"]["eventReasons"]["FailedScheduling"] == 3
    # The failure: injected at the first poll that sees step 12 (every 10 s).
    assert state["deleted"]["sides"] == {"bench-tpu": 130.0, "bench-a100": 120.0}
    assert tpu["recovery"].pop("why").startswith("the job resumes from the last checkpoint Ray Train had registered")
    assert tpu["recovery"] == {"injectedAtStep": 12, "injectedAt": T + 130, "target":
                               f"pod bench-tpu-{RUN[-14:]}-rc-tpu-worker-a", "recoveryS": 11.0, "detectS": 3.0,
                               "stepsRedone": 2, "fromStep": 10, "resumedAt": T + 130 + 11}
    assert gpu["recovery"]["recoveryS"] == 11.0 and gpu["recovery"]["injectedAtStep"] == 12
    # Cost: each node billed from its creation to the first poll that no longer sees it, at the plan's price.
    assert tpu["billing"]["nodes"] == [{"name": "gke-ray-compare-v6e-8-1a2b", "from": T + 30, "to": T + 240,
                                        "seconds": 210.0, "until": "removed"}]
    assert tpu["hourlyUsd"] == hourly("v6e-8") and gpu["hourlyUsd"] == hourly("a100-8")
    assert tpu["costPerJobUsd"] == pytest.approx(210 / 3600 * hourly("v6e-8"))
    assert gpu["costPerJobUsd"] == pytest.approx((230 - 20) / 3600 * hourly("a100-8"))
    assert tpu["costPer1kStepsUsd"] == pytest.approx(tpu["costPerJobUsd"] / STEPS * 1000)
    assert tpu["wallS"] == pytest.approx(130 + 21.5)
    assert document["agreement"]["agree"] is True and document["mode"] == "live"
    assert document["context"] == CONTEXT


def test_fresh_valid_rayjobs_released_soon_and_a_node_still_up_billed_until_the_collection(run):
    code, document, _, state = run(cluster(inject=False, declared={"flopsPerStep": 5e12}))
    assert code == 0
    created = state["created"]
    assert sorted(created) == [f"bench-a100-{RUN[-14:]}", f"bench-tpu-{RUN[-14:]}"]
    for name, job in created.items():
        job["metadata"] = {k: v for k, v in job["metadata"].items() if k not in ("uid", "creationTimestamp")}
        for release in kuberay_schema.RELEASES:
            assert kuberay_schema.errors(job, release) == [], (name, release)
        spec = job["spec"]
        assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 60
        assert job["metadata"]["labels"][sides_module.RUN_LABEL] == RUN
        command = spec["entrypoint"]
        side = job["metadata"]["labels"][sides_module.SIDE_LABEL]
        for flag, value in (("--run", None), ("--side", None), ("--name", side), ("--steps", "300")):
            assert sides_module.flag_value(command, flag) == value, (command, flag)
        # What the run tells the job goes through the RayJob's runtime environment, not the job's command line.
        told = yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"]
        assert told == bench.environment(run=RUN, side=side, result_dir="/gcs/compare", seed=0)
        assert len(name) <= sides_module.MAX_RAYJOB_NAME
    assert sorted(state["deleted"]["rayjobs"]) == sorted(created)  # the collector cleans up after itself
    assert "pods" not in state["deleted"]  # no --inject-failure: nothing deleted
    tpu = by_name(document)["bench-tpu"]
    assert "recovery" not in tpu  # none asked
    # The job declared its FLOPs per step: MFU against 8 v6e chips at the catalogue's peak, at the steady p50.
    assert tpu["flopsPerStep"] == 5e12 and tpu["peakFlopsPerS"] == 918e12
    assert tpu["mfu"] == pytest.approx(5e12 / (tpu["stepTimeS"]["p50"] * 8 * 918e12))
    assert tpu["billing"]["stillUp"] == ["gke-ray-compare-v6e-8-1a2b"]
    assert tpu["billing"]["billedNodeS"] == pytest.approx(document["collectedAt"] - (T + 30))


def test_a_job_is_followed_until_its_deployment_is_complete_not_until_ray_says_succeeded(run):
    # jobStatus SUCCEEDED shows 25 s (more than two polls) before the submitter prints the result document and the
    # deployment turns Complete: a collector that stopped at SUCCEEDED would have no result.
    code, document, err, state = run(cluster(inject=False, submitter_lag=25))
    assert code == 0 and document["problems"] == [], err
    tpu = by_name(document)["bench-tpu"]
    assert tpu["outcome"] == "SUCCEEDED" and tpu["steps"] == STEPS and tpu["finalLoss"] is not None
    # The TPU side's loop ends at 153 (side_script): SUCCEEDED from 154, Complete from 179. The collector read the
    # RayJob in between and went on.
    succeeded_only = [c["now"] for c in state["calls"] if c["args"][:3] == ["get", "rayjob", f"bench-tpu-{RUN[-14:]}"]
                      and 154 <= c["now"] < 179]
    assert succeeded_only


def test_a_job_that_never_gets_its_nodes_times_out_with_a_partial_report(run):
    code, document, err, state = run(cluster(nodes_come=False), "--inject-failure", "12", "--timeout", "160")
    assert code == 1
    tpu, gpu = by_name(document)["bench-tpu"], by_name(document)["bench-a100"]
    assert gpu["missing"] == []  # the other side ran, and is in the report
    assert tpu["outcome"].startswith("timeout: not finished within 160 s")
    for line in ("bench-tpu: startup.capacityWaitS: no worker node became Ready",
                 "bench-tpu: costPerJobUsd: no worker node of the side was seen",
                 "bench-tpu: result: the job's log holds no result document"):
        assert line in err and line in document["problems"]
    assert any(line.startswith("bench-tpu: recovery: step 12 was never reported") for line in err)
    assert tpu["cluster"]["eventReasons"] == {"FailedScheduling": 3, "TriggeredScaleUp": 1}
    assert f"bench-tpu-{RUN[-14:]}" in state["deleted"]["rayjobs"]  # the pending job is not left behind


def test_a_recovery_that_never_happens(run):
    code, document, err, _ = run(cluster(recovers=False), "--inject-failure", "12", "--timeout", "600")
    assert code == 1
    tpu = by_name(document)["bench-tpu"]
    assert tpu["recovery"] == {"injectedAtStep": 12}
    assert ("bench-tpu: recovery: no restart was reported after the failure injected at step 12 (pod "
            f"bench-tpu-{RUN[-14:]}-rc-tpu-worker-a); the job FAILED") in err
    assert "bench-tpu: finished: the job did not finish: FAILED" in err
    assert by_name(document)["bench-a100"]["missing"] == []


def test_a_gpu_side_that_reports_the_cpu_platform_is_refused(run):
    code, document, err, _ = run(cluster(inject=False, gpu_platform="cpu"))
    assert code == 1
    gpu = by_name(document)["bench-a100"]
    assert gpu["refused"] == ("the job ran on cpu, not gpu, and is not marked simulated: its numbers are not a gpu "
                              "measurement")
    assert err[0] == f"bench-a100: result: {gpu['refused']}"
    assert "finalLoss" not in gpu and document["agreement"] is None


def test_an_unknown_context_is_an_error_not_a_report(run):
    script = cluster()
    script["context"] = "another"
    code, document, err, state = run(script)
    assert code == 1 and document is None  # nothing was created or measured
    assert err == [f"error: cannot follow the jobs on the cluster: kubectl get nodes: error: context was not found for "
                   f"specified context: {CONTEXT}"]
    assert "created" not in state
