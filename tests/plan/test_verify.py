"""`python -m plan.verify` against a cluster that kubectl reads from recorded-shape responses.

No cluster exists under the mocks, so each cluster is generated from the stack's own plan: the nodes GKE would make for
every TPU pool in use, the KubeRay worker pods of every worker group with the TPU webhook's environment, the Ray
objects with a ready status, and the log a smoke RayJob's submitter would print, its result built by the smoke test's
own checks (templates in tests/data/verify/, see its README). That cluster must pass; then one thing at a time is
broken (a missing host, a wrong topology label, missing webhook environment, a failing smoke test) and the report
must name it and exit 1. The stand-in kubectl (tests/data/verify/kubectl) records every call.
"""

from __future__ import annotations

import json
import subprocess

import kuberay_schema
import pytest
from helpers import ROOT
from stand_in_cluster import CONTEXT, GROUP, POOL, TRAIN, failures, fake_kubectl, healthy, planned, smoke_log
from ray_tpu_gke import catalog
from ray_tpu_gke.workload import smoke_args

from plan import stackfile
from plan.verify import cli, expected, kubectl, smoke


# --- healthy clusters ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", stackfile.stacks())
def test_a_cluster_built_as_planned_passes(run, stack):
    code, checks, _, state = run(stack, healthy(stack))
    assert failures(checks) == {}
    assert code == 0
    assert all(call["flags"] == {"context": CONTEXT} for call in state["calls"])
    assert state.get("created", {}) == {}  # every smoke RayJob deleted again
    submitted = [c for c in state["calls"] if c["args"][:1] == ["create"]]
    smoked = [key for key, c in checks.items() if key[1] == "smoke" and c["status"] == "pass"]
    assert len(submitted) == len(smoked) == len(state.get("deleted", []))


def test_staging_report_covers_pool_objects_groups_and_smoke(run_on_path):
    """The stand-in as a real `kubectl` on PATH here; in-process elsewhere (the same answers, fewer interpreters)."""
    code, checks, _, state = run_on_path("staging", healthy("staging"))
    assert code == 0
    assert [name for subject, name in checks if subject == POOL] == ["nodes", "labels", "ready"]
    assert checks[(POOL, "nodes")]["detail"] == "4 nodes"
    assert [name for subject, name in checks if subject == GROUP] == [
        "pods", "running", "tpu request", "webhook env", "slices", "nodes", "smoke"]
    assert checks[(GROUP, "pods")]["detail"] == "4 worker pods: 1 slices of 4 (0 to 1 planned)"
    assert checks[(GROUP, "webhook env")]["detail"] == ("TPU_WORKER_ID, TPU_NAME, TPU_WORKER_HOSTNAMES on every TPU "
                                                        "container")
    assert checks[(GROUP, "smoke")]["detail"].startswith("10 checks passed, 0 skipped on v6e-16-0; compile 3.4s")
    assert checks[("RayJob ray/smoke", "ready")]["status"] == "pass"


def test_the_smoke_rayjob_is_a_valid_kuberay_object_running_the_smoke_test_on_the_cluster(run):
    _, _, _, state = run("staging", healthy("staging"))
    (call,) = [c for c in state["calls"] if c["args"][:1] == ["create"]]
    job = json.loads(call["stdin"])
    for release in kuberay_schema.RELEASES:
        assert kuberay_schema.errors(job, release) == [], release
    assert job["metadata"]["namespace"] == "ray"
    assert job["metadata"]["name"].startswith("smoke-v6e-16-")
    assert len(job["metadata"]["name"]) <= smoke.MAX_RAYJOB_NAME
    assert job["spec"]["clusterSelector"] == {"ray.io/cluster": "train"}
    words = job["spec"]["entrypoint"].split()
    assert words[:3] == ["python", "-m", "workloads.tpu_smoke"]
    spec, args = smoke_args.parse_args(words[3:], environ={})
    assert (spec.generation, spec.topology, spec.hosts, spec.chips_per_host) == ("v6e", "4x4", 4, 4)
    assert (args.group, args.slices, args.platform) == ("v6e-16", 1, "tpu")
    assert state["deleted"] == [job["metadata"]["name"]]
    logs = [c for c in state["calls"] if c["args"][:1] == ["logs"]]
    assert logs[0]["args"] == ["logs", f"job/{job['metadata']['name']}", "-n", "ray"]


def test_kubeconfig_is_passed_to_every_call(run, tmp_path):
    config = tmp_path / "kubeconfig"
    _, _, _, state = run("staging", healthy("staging"), "--kubeconfig", str(config), "--skip-smoke")
    assert {json.dumps(c["flags"], sort_keys=True) for c in state["calls"]} == {
        json.dumps({"context": CONTEXT, "kubeconfig": str(config)}, sort_keys=True)}


def test_skip_smoke_submits_nothing_and_says_so(run):
    code, checks, _, state = run("staging", healthy("staging"), "--skip-smoke")
    assert code == 0
    assert checks[(GROUP, "smoke")] == {"subject": GROUP, "name": "smoke", "status": "skip", "detail": "--skip-smoke"}
    assert not [c for c in state["calls"] if c["args"][0] in ("create", "logs", "delete")]


def test_a_pool_scaled_to_zero_is_skipped_not_failed(run):
    code, checks, _, _ = run("dev", healthy("dev"))
    assert code == 0
    assert checks[("node pool v6e-4-0", "nodes")]["status"] == "skip"
    group = "RayCluster ray/dev group tpu"
    assert checks[(group, "pods")]["detail"] == "0 worker pods: 0 slices of 1 (0 to 1 planned)"
    assert checks[(group, "running")]["status"] == "skip"
    assert checks[(group, "smoke")]["status"] == "pass"  # the smoke test scales the group up itself


def test_prod_checks_the_rayservice_active_cluster_and_every_pool(run):
    code, checks, _, state = run("prod", healthy("prod"))
    assert code == 0
    service = "RayService serving/llm group v6e-8"
    assert checks[(service, "pods")]["detail"] == "2 worker pods: 2 slices of 1 (2 planned)"
    pod_queries = [c["args"] for c in state["calls"] if c["args"][:2] == ["get", "pods"]]
    assert ["get", "pods", "-n", "serving", "-l", "ray.io/cluster=llm-raycluster-x7k2p,ray.io/node-type=worker",
            "-o", "json"] in pod_queries
    statuses = {name: checks[(f"node pool {name}", "nodes")]["status"] for name in
                ("v6e-64-0", "v6e-64-1", "ironwood-64-0", "v6e-8-serve-0", "v6e-8-serve-1", "v6e-8-serve-2",
                 "v6e-8-serve-3")}
    assert statuses == {"v6e-64-0": "pass", "v6e-64-1": "pass", "ironwood-64-0": "pass", "v6e-8-serve-0": "pass",
                        "v6e-8-serve-1": "pass", "v6e-8-serve-2": "skip", "v6e-8-serve-3": "skip"}
    assert checks[("RayCluster training/train-ironwood group ironwood", "smoke")]["status"] == "pass"
    assert checks[(service, "smoke")]["detail"].startswith("14 checks passed, 2 skipped on v6e-8-0, v6e-8-1")
    jobs = {json.loads(c["stdin"])["metadata"]["namespace"]: json.loads(c["stdin"])["spec"]["entrypoint"]
            for c in state["calls"] if c["args"][:1] == ["create"]}
    assert jobs["serving"].endswith("--group v6e-8 --labels-only")  # the Serve replicas hold those chips
    assert not jobs["training"].endswith("--labels-only")


def test_text_report(run):
    code, _, out, _ = run("staging", healthy("staging"), text=True)
    lines = out.splitlines()
    assert code == 0
    assert any(line.startswith("PASS  node pool v6e-16-0: nodes") and line.endswith("4 nodes") for line in lines)
    assert lines[-1].endswith("0 failed, 0 skipped")


# --- broken clusters -----------------------------------------------------------------------------------------------

def test_a_missing_host_fails_the_pool_the_group_and_the_smoke_test(run):
    state = healthy("staging")
    lost = "gke-v6e-16-0-3"
    state["nodes"] = [n for n in state["nodes"] if n["metadata"]["name"] != lost]
    state["pods"] = [p for p in state["pods"] if p["spec"]["nodeName"] != lost]
    spec = planned("staging").objects[0].groups[0].spec
    state["smoke"]["logs"]["v6e-16"] = smoke_log(spec, "v6e-16", 1, hosts_per_slice=3)
    state["smoke"]["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}
    code, checks, _, _ = run("staging", state)
    assert code == 1
    failed = failures(checks)
    assert failed[(POOL, "nodes")] == "3 nodes, expected 0 or 4 (hosts of v6e-16)"
    assert failed[(GROUP, "pods")] == "3 worker pods: 0 slices of 4 and 3 over; expected 0 to 1 slices"
    assert failed[(GROUP, "slices")] == "v6e-16-0: TPU_WORKER_ID 0, 1, 2, expected 0, 1, 2, 3"
    assert failed[(GROUP, "smoke")].startswith("jobStatus FAILED; slices: 0 whole slices")
    assert "hosts v6e-16-0: 3 hosts, expected 4" in failed[(GROUP, "smoke")]


def test_a_wrong_topology_label_fails_the_pool_and_the_group_nodes(run):
    state = healthy("staging")
    node = next(n for n in state["nodes"] if n["metadata"]["name"] == "gke-v6e-16-0-2")
    node["metadata"]["labels"][catalog.TOPOLOGY_LABEL] = "2x8"
    code, checks, _, _ = run("staging", state, "--skip-smoke")
    assert code == 1
    assert failures(checks) == {
        (POOL, "labels"): "gke-v6e-16-0-2 cloud.google.com/gke-tpu-topology='2x8'",
        (GROUP, "nodes"): "gke-v6e-16-0-2 cloud.google.com/gke-tpu-topology='2x8', expected '4x4'",
    }


def test_missing_webhook_environment_fails_and_names_the_pod(run):
    state = healthy("staging")
    pod = state["pods"][1]
    container = pod["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "TPU_WORKER_HOSTNAMES"]
    code, checks, _, _ = run("staging", state, "--skip-smoke")
    assert code == 1
    assert failures(checks) == {(GROUP, "webhook env"): f"{pod['metadata']['name']} lacks TPU_WORKER_HOSTNAMES",
                                ("TPU webhook", "serving"): f"worker pods without its environment: {GROUP}"}
    assert checks[(GROUP, "slices")]["status"] == "skip"


def test_no_webhook_at_all_fails_every_pod(run):
    state = healthy("staging")
    for pod in state["pods"]:
        container = pod["spec"]["containers"][0]
        container["env"] = [e for e in container["env"] if not e["name"].startswith("TPU_")]
    _, checks, _, _ = run("staging", state, "--skip-smoke")
    detail = failures(checks)[(GROUP, "webhook env")]
    assert detail.count("lacks TPU_WORKER_ID, TPU_NAME, TPU_WORKER_HOSTNAMES") == 4


def test_duplicate_worker_ids_and_split_pools_fail_the_slice(run):
    state = healthy("prod")
    group = "RayCluster training/train group v6e-64"
    pods = [p for p in state["pods"] if p["metadata"]["labels"]["ray.io/group"] == "v6e-64"
            and p["metadata"]["labels"]["replicaIndex"] == "v6e-64-0"]
    env = {e["name"]: e for e in pods[5]["spec"]["containers"][0]["env"]}
    env["TPU_WORKER_ID"]["value"] = "4"
    pods[6]["spec"]["nodeName"] = "gke-v6e-64-1-6"  # a host of the other slice's pool
    _, checks, _, _ = run("prod", state, "--skip-smoke")
    detail = failures(checks)[(group, "slices")]
    assert "v6e-64-0: TPU_WORKER_ID 0, 1, 10, 11, 12, 13, 14, 15, 2, 3, 4, 4, 6, 7, 8, 9" in detail
    assert "v6e-64-0: hosts on node pools v6e-64-0, v6e-64-1; a slice is one pool" in detail


def test_pods_that_do_not_run_or_ask_for_other_chips_fail(run):
    state = healthy("staging")
    state["pods"][0]["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}
    del state["pods"][0]["spec"]["nodeName"]
    state["pods"][1]["spec"]["containers"][0]["resources"]["limits"][catalog.TPU_RESOURCE] = "8"
    _, checks, _, _ = run("staging", state, "--skip-smoke")
    failed = failures(checks)
    first, second = (p["metadata"]["name"] for p in state["pods"][:2])
    assert failed[(GROUP, "running")] == f"{first} Pending, not Ready"
    assert failed[(GROUP, "tpu request")] == f"{second} requests/limits google.com/tpu 4/8"
    assert failed[(GROUP, "nodes")] == f"{first} is not scheduled"


def test_missing_and_unready_objects_fail(run):
    state = healthy("staging")
    del state["objects"]["raycluster/ray/train"]
    state["objects"]["rayjob/ray/smoke"]["status"] = {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED",
                                                      "message": "entrypoint exited with 1"}
    code, checks, _, state_after = run("staging", state)
    assert code == 1
    failed = failures(checks)
    assert failed[(TRAIN, "exists")] == "not found"
    assert failed[("RayJob ray/smoke", "ready")] == ("jobDeploymentStatus Failed, jobStatus FAILED: entrypoint exited "
                                                     "with 1")
    assert checks[(GROUP, "pods")] == {"subject": GROUP, "name": "pods", "status": "skip",
                                       "detail": "the object was not found"}
    assert not [c for c in state_after["calls"] if c["args"][0] == "create"]

    state = healthy("prod")
    state["objects"]["rayservice/serving/llm"]["status"] = {"serviceStatus": ""}
    _, checks, _, _ = run("prod", state, "--skip-smoke")
    assert failures(checks) == {("RayService serving/llm", "ready"): "status.serviceStatus '', expected 'Running'"}
    assert checks[("RayService serving/llm group v6e-8", "pods")]["detail"] == ("its Ray cluster is not named in its "
                                                                               "status yet")


def test_a_failing_smoke_test_names_its_failing_checks(run):
    state = healthy("staging")
    result = smoke_args.parse_result(state["smoke"]["logs"]["v6e-16"])
    psum = next(c for c in result["checks"] if c["name"] == "psum")
    psum.update(status="fail", detail="JAX platform cpu, expected tpu")
    result["ok"] = False
    state["smoke"]["logs"]["v6e-16"] = f"Job 'raysubmit_1' starting\n{json.dumps(result)}\nJob 'raysubmit_1' failed\n"
    state["smoke"]["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}
    code, checks, _, _ = run("staging", state)
    assert code == 1
    assert failures(checks) == {(GROUP, "smoke"): "jobStatus FAILED; psum v6e-16-0: JAX platform cpu, expected tpu"}


def test_a_smoke_job_without_a_result_fails_with_its_last_lines(run):
    state = healthy("staging")
    state["smoke"]["logs"]["v6e-16"] = "Traceback (most recent call last):\nModuleNotFoundError: No module named " \
                                       "'workloads'\nJob 'raysubmit_1' failed\n"
    state["smoke"]["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}
    _, checks, _, _ = run("staging", state)
    assert failures(checks)[(GROUP, "smoke")] == (
        "jobStatus FAILED; no smoke result in the job's log: Traceback (most recent call last): | "
        "ModuleNotFoundError: No module named 'workloads' | Job 'raysubmit_1' failed")


def test_a_result_for_another_slice_does_not_count():
    group = planned("staging").objects[0].groups[0]
    other = smoke_args.parse_result(smoke_log(expected.SliceSpec("v6e", "2x4", 2, 4), "v6e-16", 1))
    check = smoke.smoke_verdict("g", group, {"status": {"jobStatus": "SUCCEEDED"}}, json.dumps(other))
    assert check.status == "fail"
    assert check.detail.startswith("the result is for another slice: topology '2x4' (asked '4x4')")


def test_a_smoke_job_that_never_finishes_fails_at_the_deadline(tmp_path, monkeypatch):
    state = healthy("staging")
    state["smoke"]["status"] = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}
    path = fake_kubectl(tmp_path, monkeypatch)
    path.write_text(json.dumps(state))
    now = [0.0]

    def sleep(seconds):
        now[0] += 100

    group = planned("staging").objects[0].groups[0]
    (check,) = smoke.run_smoke(kubectl.Kubectl(CONTEXT), [smoke.SmokeTarget(TRAIN, "ray", "train", group)],
                                timeout=60, poll=1, keep=False, clock=lambda: now[0], sleep=sleep)
    assert check.status == "fail" and "not done within 420s (jobDeploymentStatus Running, jobStatus RUNNING)" \
        in check.detail
    after = json.loads(path.read_text())
    assert len([c for c in after["calls"] if c["args"][:2] == ["get", "rayjob"]]) == 6  # 0, 100, ... 500 > 420
    assert after["created"] == {}  # deleted all the same


class RayJobInStages(kubectl.Kubectl):
    """A smoke RayJob whose status goes through `stages` (one per read), its submitter's log empty until KubeRay
    says Complete: Ray's job status arrives before the submitter has printed the result."""

    def __init__(self, stages: list[dict], log: str):
        super().__init__(CONTEXT)
        self.stages, self.log, self.reads, self.read_logs_at = list(stages), log, 0, []

    def json(self, *args, stdin=None, missing_ok=False):
        assert args[:3] == ("create", "-f", "-")
        return json.loads(stdin)

    def get(self, kind, name, namespace):
        status = self.stages[min(self.reads, len(self.stages) - 1)]
        self.reads += 1
        return {"metadata": {"name": name, "namespace": namespace}, "status": status}

    def run(self, *args, stdin=None):
        if args[0] == "logs":
            status = self.stages[min(self.reads, len(self.stages)) - 1]
            self.read_logs_at.append(status)
            log = self.log if status["jobDeploymentStatus"] == "Complete" else ""
            return subprocess.CompletedProcess(args, 0, log, "")
        return subprocess.CompletedProcess(args, 0, "", "")


def test_a_smoke_job_is_read_when_kuberay_says_complete_not_when_ray_says_succeeded():
    group = planned("staging").objects[0].groups[0]
    stages = [{"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"},
              {"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED"},  # Ray's job done, the submitter not
              {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}]
    fake = RayJobInStages(stages, smoke_log(group.spec, group.group, 1))
    (check,) = smoke.run_smoke(fake, [smoke.SmokeTarget(TRAIN, "ray", "train", group)], timeout=60, poll=0,
                               keep=False, sleep=lambda seconds: None)
    assert check.status == "pass", check.detail
    assert fake.reads == 3 and fake.read_logs_at == [stages[-1]]


def test_a_smoke_job_kubectl_refuses_to_create_fails_that_group_only(run, monkeypatch):
    state = healthy("staging")
    original = kubectl.Kubectl.json

    def refuse(self, *args, **kwargs):
        if args[:1] == ("create",):
            raise kubectl.KubectlError('kubectl create -f -: rayjobs.ray.io is forbidden: User "ci" cannot create')
        return original(self, *args, **kwargs)

    monkeypatch.setattr(kubectl.Kubectl, "json", refuse)
    code, checks, _, _ = run("staging", state)
    assert code == 1
    assert failures(checks) == {(GROUP, "smoke"): 'could not create the smoke RayJob: kubectl create -f -: '
                                                  'rayjobs.ray.io is forbidden: User "ci" cannot create'}


# --- errors --------------------------------------------------------------------------------------------------------

def test_an_unknown_context_exits_1_with_kubectls_message(run):
    state = healthy("staging")
    state["context"] = "another-cluster"
    code, _, out, _ = run("staging", state, text=True)
    assert code == 1 and out == ""
    assert run.err == ("error: cannot read the cluster: kubectl get nodes: error: context was not found "
                                       f"for specified context: {CONTEXT}\n")


def test_no_kubectl_on_path_exits_1(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert cli.main(["staging", "--context", CONTEXT]) == 1
    assert capsys.readouterr().err == "error: kubectl is not on PATH\n"


def test_an_invalid_stack_exits_2_before_reading_the_cluster(tmp_path, capsys):
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text((ROOT / "stacks" / "Pulumi.staging.yaml").read_text().replace("topology: 4x4", "topology: 4x3"))
    assert cli.main(["staging", "--context", CONTEXT, "--config-file", str(broken)]) == 2
    assert "ray-tpu-gke:tpuSlices[0].topology" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["staging"])
    assert exit_.value.code == 2
    assert "--context" in capsys.readouterr().err
