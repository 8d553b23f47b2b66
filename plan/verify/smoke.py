"""The TPU smoke test: a RayJob per TPU worker group running `python -m workloads.tpu_smoke` on that cluster, and the
verdict of its JSON result."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Callable

from ray_tpu_gke import admission
from ray_tpu_gke.workload import smoke_args
from ray_tpu_gke.workload.slice_checks import (
    CLUSTER_LABEL,
    DEPLOYMENT_FAILED,
    FAIL,
    PASS,
    SKIP,
    Check,
    listing,
    name_of,
)

from .expected import GroupPlan
from .kubectl import Kubectl, KubectlError

MAX_RAYJOB_NAME = 47  # KubeRay ray-operator/controllers/ray/utils/constant.go MaxRayJobNameLength (53 - 6)
# KubeRay's deployment status once the submitter has ended (ray-operator/apis/ray/v1/rayjob_types.go).
DEPLOYMENT_DONE = DEPLOYMENT_FAILED | {"Complete"}


# --- the smoke test ------------------------------------------------------------------------------------------------


def smoke_job_name(group: str) -> str:
    name = f"smoke-{group}"[: MAX_RAYJOB_NAME - 7].rstrip("-") + "-" + secrets.token_hex(3)
    admission.check_dns_label(name, MAX_RAYJOB_NAME)
    return name


def smoke_job(namespace: str, cluster: str, group: GroupPlan, timeout: int, labels_only: bool = False) -> dict:
    """A RayJob that runs the smoke test of one worker group on its existing Ray cluster (KubeRay clusterSelector),
    submitted from a Kubernetes Job (K8sJobMode) whose log carries the result."""
    slices = max(1, group.min_replicas if group.autoscaling else group.replicas)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": smoke_job_name(group.group),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "ray-tpu-gke", "app.kubernetes.io/component": "post-deploy-check"},
        },
        "spec": {
            "entrypoint": smoke_args.command(
                group.spec, group.group, slices=slices, timeout=timeout, labels_only=labels_only
            ),
            "clusterSelector": {CLUSTER_LABEL: cluster},
            "submissionMode": "K8sJobMode",
            "shutdownAfterJobFinishes": False,  # never for a job on an existing cluster
            "activeDeadlineSeconds": timeout + 300,  # the submitter's start and Ray's job start on top
        },
    }


def smoke_verdict(subject: str, group: GroupPlan, job: dict, log: str) -> Check:
    """The smoke check from the RayJob's final status and the result line in its log."""
    status = job.get("status") or {}
    result = smoke_args.parse_result(log)
    state = f"jobStatus {status.get('jobStatus') or 'unset'}"
    if result is None:
        tail = " | ".join(line for line in log.strip().splitlines()[-3:])
        return Check(subject, "smoke", FAIL, f"{state}; no smoke result in the job's log{': ' + tail if tail else ''}")
    want = {**group.spec.to_json(), "group": group.group}
    differs = [
        f"{k} {result.get('expected', {}).get(k)!r} (asked {v!r})"
        for k, v in want.items()
        if result.get("expected", {}).get(k) != v
    ]
    if differs:
        return Check(subject, "smoke", FAIL, f"the result is for another slice: {', '.join(differs)}")
    failed = [
        f"{c['name']}{' ' + c['slice'] if c.get('slice') else ''}: {c['detail']}"
        for c in result.get("checks", [])
        if c.get("status") == FAIL
    ]
    if result.get("ok") and not failed and status.get("jobStatus") == "SUCCEEDED":
        timings = result.get("timings", {})
        passed, skipped = (sum(c.get("status") == s for c in result.get("checks", [])) for s in (PASS, SKIP))
        times = ", ".join(
            f"{what} {timings[key]}s" for what, key in (("compile", "compile_s"), ("psum", "psum_s")) if key in timings
        )
        return Check(
            subject,
            "smoke",
            PASS,
            f"{passed} checks passed, {skipped} skipped on "
            f"{', '.join(result.get('slices', {}))}" + (f"; {times}" if times else ""),
        )
    return Check(subject, "smoke", FAIL, f"{state}; " + (listing(failed) if failed else "the job did not succeed"))


def _finished(status: dict) -> bool:
    """KubeRay copies `jobStatus` from Ray as soon as Ray's job ends, before the submitter Job has printed the job's
    last lines (the smoke result among them); `jobDeploymentStatus` turns Complete only once the submitter has ended
    (rayjob_controller.go, kuberay PR #1919). So the deployment status ends the wait; `jobStatus` is the outcome."""
    return status.get("jobDeploymentStatus") in DEPLOYMENT_DONE


@dataclass(frozen=True)
class SmokeTarget:
    subject: str  # the Ray object's
    namespace: str
    cluster: str  # the live Ray cluster the group belongs to
    group: GroupPlan
    labels_only: bool = False  # a RayService's slices serve: the smoke test leaves their chips alone


def run_smoke(
    kubectl: Kubectl,
    targets: list[SmokeTarget],
    timeout: int,
    poll: float,
    keep: bool,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Check]:
    """Submit one smoke RayJob per target, all at once; wait for each; read its result from the log of its submitter
    Job (named as the RayJob in K8sJobMode); delete it unless `keep`."""
    checks, runs = [], []
    wait = timeout + 360  # the RayJob's activeDeadlineSeconds and a minute more
    for target in targets:
        group, namespace = target.group, target.namespace
        subject = f"{target.subject} group {group.group}"
        manifest = smoke_job(namespace, target.cluster, group, timeout, labels_only=target.labels_only)
        try:
            created = kubectl.json("create", "-f", "-", stdin=json.dumps(manifest))
        except KubectlError as error:
            checks.append(Check(subject, "smoke", FAIL, f"could not create the smoke RayJob: {error}"))
            continue
        runs.append((subject, group, namespace, name_of(created), clock() + wait))
    for subject, group, namespace, name, deadline in runs:
        try:
            while True:
                job = kubectl.get("RayJob", name, namespace) or {}
                if _finished(job.get("status") or {}) or clock() >= deadline:
                    break
                sleep(poll)
            status = job.get("status") or {}
            if not _finished(status):
                states = (
                    f"jobDeploymentStatus {status.get('jobDeploymentStatus') or 'unset'}, "
                    f"jobStatus {status.get('jobStatus') or 'unset'}"
                )
                checks.append(
                    Check(subject, "smoke", FAIL, f"RayJob {namespace}/{name} not done within {wait}s ({states})")
                )
                continue
            logs = kubectl.run("logs", f"job/{name}", "-n", namespace)
            checks.append(smoke_verdict(subject, group, job, logs.stdout if logs.returncode == 0 else ""))
        finally:
            if not keep:
                kubectl.run("delete", "rayjob", name, "-n", namespace, "--ignore-not-found", "--wait=false")
    return checks
