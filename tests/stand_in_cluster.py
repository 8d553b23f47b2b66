"""A cluster as a stack's plan says it should be, as the stand-in kubectl (tests/data/verify/kubectl) shows it to
`python -m plan.verify`: the nodes GKE would make for every TPU pool in use, the KubeRay worker pods of every worker
group with the TPU webhook's environment, the Ray objects with a ready status, and the log a smoke RayJob's submitter
would print, its result built by the smoke test's own checks (templates in tests/data/verify/, see its README).
plan/test_verify.py breaks it one thing at a time; plan/test_versions.py, workloads/test_health_check.py and
project/test_package.py read it too."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import kuberay_schema
import yaml
from helpers import ROOT, InProcessKubectl
from plans import program_plan
from ray_tpu_gke import catalog
from ray_tpu_gke.render import manifests
from ray_tpu_gke.workload import ray_labels, slice_checks
from workloads import tpu_smoke

from plan import stackfile
from plan.verify import expected, kubectl

DATA = ROOT / "tests" / "data" / "verify"
CONTEXT = "gke_acme-ml-staging_us-east5-b_ray-tpu-staging"


def template(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@functools.lru_cache(maxsize=None)
def _planned(stack: str) -> expected.StackPlan:
    values, secrets, config = stackfile.load_checked(stack)
    return expected.stack_plan(program_plan(stack, values, secrets), config)


def planned(stack: str) -> expected.StackPlan:
    return copy.deepcopy(_planned(stack))


# --- a cluster as the plan says it should be -----------------------------------------------------------------------

def make_node(name: str, labels: dict, chips: int) -> dict:
    node = template("node.json")
    node["metadata"]["name"] = name
    node["metadata"]["labels"].update({"kubernetes.io/hostname": name, **labels})
    for section in ("allocatable", "capacity"):
        node["status"][section][catalog.TPU_RESOURCE] = str(chips)
    return node


def make_pod(namespace: str, cluster: str, group: expected.GroupPlan, replica: int, worker: int, node: str,
             image: str = "") -> dict:
    pod = template("pod.json")
    if image:
        pod["spec"]["containers"][0]["image"] = image
    spec, name = group.spec, group.group
    pod["metadata"].update(name=f"{cluster}-{name}-worker-{replica}{worker}", namespace=namespace)
    pod["metadata"]["labels"].update({"ray.io/cluster": cluster, "ray.io/group": name,
                                      "ray.io/identifier": f"{cluster}-worker", "replicaIndex": f"{name}-{replica}"})
    pod["metadata"]["ownerReferences"][0]["name"] = cluster
    pod["spec"].update(hostname=f"{name}-{replica}-{worker}", subdomain=f"{cluster}-headless-worker-svc",
                       nodeName=node)
    container = pod["spec"]["containers"][0]
    hostnames = ",".join(f"{name}-{replica}-{w}.{cluster}-headless-worker-svc" for w in range(spec.hosts))
    webhook = {"TPU_WORKER_HOSTNAMES": hostnames, "TPU_WORKER_ID": str(worker), "TPU_NAME": f"{name}-{replica}"}
    container["env"] = [{**e, "value": webhook[e["name"]]} if e["name"] in webhook else e for e in container["env"]
                        if spec.hosts > 1 or e["name"] != "TPU_WORKER_HOSTNAMES"]  # single host: no hostnames
    for section in ("limits", "requests"):
        container["resources"][section][catalog.TPU_RESOURCE] = str(spec.chips_per_host)
    return pod


def smoke_log(spec, group: str, slices: int, hosts_per_slice=None, labels_only: bool = False) -> str:
    """A submitter's log around the smoke test's result for ray.nodes() as a healthy (or `hosts_per_slice`) group
    would show them: the smoke test's own label and psum verdicts."""
    ray_nodes = []
    for replica in range(slices):
        for worker in range(spec.hosts if hosts_per_slice is None else hosts_per_slice):
            ray_nodes.append({"NodeID": f"{replica:04d}{worker:04d}" * 7, "Alive": True,
                              "NodeManagerAddress": f"10.16.{replica}.{worker}",
                              "Resources": {"TPU": float(spec.chips_per_host)},
                              "Labels": {ray_labels.SLICE_NAME: f"{group}-{replica}", ray_labels.WORKER_ID: str(worker),
                                         ray_labels.TOPOLOGY: spec.topology, ray_labels.POD_TYPE: spec.pod_type,
                                         ray_labels.ACCELERATOR_TYPE: spec.accelerator_type}})
    observed = ray_labels.observe(ray_nodes, group)
    checks, whole = ray_labels.label_checks(observed, spec, slices)
    if labels_only:
        checks += [ray_labels.Check("reservation", "skip", "not run: --labels-only"),
                   ray_labels.Check("psum", "skip", "not run: --labels-only")]
    elif all(c.status == "pass" for c in checks):
        checks.append(ray_labels.Check("reservation", "pass", f"{len(whole)} slices"))
        for name in whole:
            results = [{"worker_id": w, "process_index": w, "process_count": spec.hosts,
                        "device_count": spec.chips, "local_device_count": spec.chips_per_host, "platform": "tpu",
                        "value": float(spec.chips_per_host * spec.hosts * (spec.hosts + 1) // 2), "init_s": 2.1,
                        "compile_s": 3.4, "run_s": 0.002} for w in range(spec.hosts)]
            checks.append(tpu_smoke.psum_check(name, results, spec, "tpu"))
    else:
        checks += [ray_labels.Check("reservation", "skip", "not run"), ray_labels.Check("psum", "skip", "not run")]
    result = tpu_smoke.document(spec, group, slices, "tpu", observed, checks,
                                {"wait_s": 0.1, "reservation_s": 0.4, "compile_s": 3.4, "psum_s": 0.002})
    return ((DATA / "smoke.log").read_text().replace("RESULT", json.dumps(result, sort_keys=True))
            .replace("OUTCOME", "succeeded" if result["ok"] else "failed").replace("JOB", "raysubmit_Xq3v9"))


def _generation(accelerator: str) -> str:
    return next(g.name for g in catalog.GENERATIONS.values() if g.accelerator == accelerator)


@functools.lru_cache(maxsize=None)
def crd_files() -> dict:
    """The KubeRay v1.7.0 CRDs (tests/data/kuberay) as JSON files, named as the stand-in kubectl reads them."""
    folder = Path(tempfile.mkdtemp(prefix="verify-crds-"))
    out = {}
    for kind in kuberay_schema.KINDS:
        crd = yaml.load(kuberay_schema.crd_path("v1.7.0", kind).read_text(), Loader=kuberay_schema._Loader)
        path = folder / f"{crd['metadata']['name']}.json"
        path.write_text(json.dumps(crd))
        out[crd["metadata"]["name"]] = str(path)
    return out


# A MutatingWebhookConfiguration as the TPU webhook's own deployment writes it (ai-on-gke kuberay-tpu-webhook
# deployments/: pods CREATE, objectSelector app.kubernetes.io/name=kuberay); the add-on's object names are its own.
WEBHOOK = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
           "metadata": {"name": "kuberay-tpu-mutating-webhook-cfg"},
           "webhooks": [{"name": "kuberay-tpu-webhook.ray-system.svc", "sideEffects": "NoneOnDryRun",
                         "clientConfig": {"service": {"name": "kuberay-tpu-webhook", "namespace": "ray-system",
                                                      "path": "/mutate"}},
                         "objectSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay"}},
                         "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                    "resources": ["pods"]}]}]}


# Groups the stand-ins show scaled up by Ray's autoscaler, (namespace, object, group) -> slices: KubeRay starts an
# autoscaled RayCluster's groups at minReplicas (0 for staging's train), and the checks are exercised on a slice at work.
AT_WORK = {"staging": {("ray", "train", "v6e-16"): 1}}


def healthy(stack: str) -> dict:
    _, _, config = stackfile.load_checked(stack)
    plan = planned(stack)
    scaled = AT_WORK.get(stack, {})
    for obj in plan.objects:
        obj.groups = [dataclasses.replace(g, replicas=scaled.get((obj.namespace, obj.name, g.group), g.replicas))
                      for g in obj.groups]
    return cluster_as_planned(plan, {(o.namespace, o.name): o.image for o in config.ray_objects})


def cluster_as_planned(plan: expected.StackPlan, images: dict) -> dict:
    """The stand-in kubectl's state of a cluster built as `plan` says, its Ray pods on `images` ((ns, name) ->)."""
    pools = defaultdict(list)
    for pool in plan.pools:
        pools[pool.slice].append(pool)
    taken = defaultdict(int)  # slice -> pools handed to worker group replicas so far
    used, nodes, pods, objects, logs = set(), [], [], {}, {}
    for obj in plan.objects:
        key = f"{obj.kind.lower()}/{obj.namespace}/{obj.name}"
        cluster = obj.name
        if obj.kind == "RayCluster":
            # KubeRay v1.7 raycluster_types.go: the readiness conditions beside the deprecated state
            status = {"state": "ready", "readyWorkerReplicas": sum(g.replicas for g in obj.groups), "conditions": [
                {"type": "RayClusterProvisioned", "status": "True", "reason": "AllPodRunningAndReadyFirstTime"},
                {"type": "HeadPodReady", "status": "True", "reason": "HeadPodRunningAndReady"}]}
        elif obj.kind == "RayService":
            cluster = f"{obj.name}-raycluster-x7k2p"
            status = {"serviceStatus": "Running", "activeServiceStatus": {"rayClusterName": cluster}}
        else:
            cluster = obj.cluster_selector or f"{obj.name}-x7k2p"
            status = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": cluster}
        objects[key] = {"apiVersion": "ray.io/v1", "kind": obj.kind,
                        "metadata": {"name": obj.name, "namespace": obj.namespace}, "status": status}
        for group in obj.groups:
            spec, slice_name = group.spec, group.selector.get(manifests.SLICE_LABEL)
            for replica in range(group.replicas):
                if slice_name:  # Standard mode: the slice's next node pool
                    pool = pools[slice_name][taken[slice_name]]
                    taken[slice_name] += 1
                    used.add(pool.name)
                    hosts = [f"gke-{pool.name}-{w}" for w in range(spec.hosts)]
                else:  # Autopilot: GKE makes nodes for what the pods select
                    shape = catalog.resolve(spec.generation, spec.topology)
                    hosts = [f"gk3-{group.group}-{replica}-{w}" for w in range(spec.hosts)]
                    for name in hosts:
                        nodes.append(make_node(name, {**group.selector, slice_checks.NODE_POOL_LABEL: f"nap-{hosts[0]}",
                                                      slice_checks.INSTANCE_TYPE_LABEL: shape.machine_type.name},
                                               spec.chips_per_host))
                pods += [make_pod(obj.namespace, cluster, group, replica, w, hosts[w], images[obj.namespace, obj.name])
                         for w in range(spec.hosts)]
            slices = max(1, group.min_replicas if group.autoscaling else group.replicas)
            logs[group.group] = smoke_log(spec, group.group, slices, labels_only=obj.kind == "RayService")
    for pool in plan.pools:
        if pool.name in used or not pool.autoscaled_from_zero:
            shape = catalog.resolve(_generation(pool.accelerator), pool.topology, pool.machine_type)
            for w in range(pool.hosts):
                nodes.append(make_node(f"gke-{pool.name}-{w}", {
                    slice_checks.NODE_POOL_LABEL: pool.name, catalog.ACCELERATOR_LABEL: pool.accelerator,
                    catalog.TOPOLOGY_LABEL: pool.topology, manifests.SLICE_LABEL: pool.slice,
                    slice_checks.INSTANCE_TYPE_LABEL: pool.machine_type}, shape.chips_per_host))
    return {"context": CONTEXT, "nodes": nodes, "pods": pods, "objects": objects, "crds": crd_files(),
            "webhooks": [WEBHOOK],
            "smoke": {"status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "logs": logs}}


def kubectl_on_path(folder: Path) -> str:
    """tests/data/verify/kubectl as the executable FOLDER/bin/kubectl, run by this interpreter without site-packages
    (it needs only the standard library): $PATH with that folder first."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    source = (DATA / "kubectl").read_text()
    fake.write_text(f"#!{sys.executable} -S\n" + source.split("\n", 1)[1])
    fake.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def fake_kubectl(tmp_path, monkeypatch, on_path: bool = False):
    """tests/data/verify/kubectl, answering every kubectl call; returns its state file. In-process by default
    (helpers.InProcessKubectl); `on_path`: first on PATH as the executable `kubectl`, run by this interpreter without
    site-packages (it needs only the standard library, and starts in milliseconds, not through a version manager's
    shim)."""
    if on_path:
        monkeypatch.setenv("PATH", kubectl_on_path(tmp_path))
    else:
        monkeypatch.setattr(kubectl, "subprocess", InProcessKubectl(DATA / "kubectl"))
    path = tmp_path / "cluster.json"
    monkeypatch.setenv("FAKE_KUBECTL_STATE", str(path))
    return path


def failures(checks: dict) -> dict:
    return {key: c["detail"] for key, c in checks.items() if c["status"] == "fail"}


TRAIN = "RayCluster ray/train"
GROUP = f"{TRAIN} group v6e-16"
POOL = "node pool v6e-16-0"
