"""ray-tpu-gke used as a library: the example programs (examples/) under Pulumi mocks, and the package installed into
a fresh virtual environment outside the repository, used by a program of its own."""

import json
import os
import re
import shutil
import subprocess
import sysconfig
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

import ray_tpu_gke
from helpers import NODE_POOL, RAY_CLUSTER, fresh_venv, pip_into
from examples_run import EXAMPLES, EXISTING_VALUES, only_stack_registered, run_example, steps
from provider_plugin import serve

ROOT = Path(__file__).resolve().parents[2]
TPU = "google.com/tpu"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_examples_are_pulumi_projects():
    for example in ("existing-cluster", "own-config"):
        project = yaml.safe_load((EXAMPLES / example / "Pulumi.yaml").read_text())
        assert project["runtime"]["name"] == "python"
        assert (EXAMPLES / example / "__main__.py").is_file()
        requirements = (EXAMPLES / example / "requirements.txt").read_text().split()
        assert "../.." in requirements and (EXAMPLES / example / "../..").resolve() == ROOT


# --- (a) an existing cluster: TpuSlicePools and RayCluster ----------------------------------------------------------

EXISTING = EXAMPLES / "existing-cluster"


def test_existing_cluster_example(monkeypatch):
    plan = run_example(monkeypatch, EXISTING, "dev", EXISTING_VALUES)
    shape = ray_tpu_gke.slice_shape("v6e", "4x4")

    pools = {s.name: s for s in steps(plan, NODE_POOL)}
    assert set(pools) == {"v6e-16-0", "system"}
    tpu_pool = pools["v6e-16-0"].inputs
    assert tpu_pool["cluster"] == "ml-shared" and tpu_pool["location"] == "us-east5-b"
    assert tpu_pool["nodeConfig"]["machineType"] == shape.machine_type.name == "ct6e-standard-4t"
    assert tpu_pool["nodeCount"] == shape.hosts == 4
    assert tpu_pool["nodeConfig"]["spot"] is True
    assert tpu_pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
    assert pools["v6e-16-0"].protect is True  # the library's default: a replaced pool loses its slice
    assert pools["system"].inputs["name"] == "system"

    # The Ray cluster runs through a Kubernetes provider for the existing cluster, after the pools and namespace.
    (provider,) = steps(plan, "pulumi:providers:kubernetes")
    (ray,) = steps(plan, RAY_CLUSTER)
    assert ray.provider == provider.urn
    (component,) = steps(plan, "ray-tpu-gke:index:RayCluster")
    assert pools["v6e-16-0"].urn in component.dependencies
    assert {s.urn for s in steps(plan, "kubernetes:core/v1:Namespace")} <= set(component.dependencies)
    assert ray.inputs["metadata"]["namespace"] == "ray"
    (group,) = ray.inputs["spec"]["workerGroupSpecs"]
    assert group["numOfHosts"] == shape.hosts
    worker = group["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"][TPU] == str(shape.chips_per_host)
    assert group["template"]["spec"]["nodeSelector"] == plan.outputs["nodeSelector"]

    assert plan.outputs["poolNames"] == ["v6e-16-0"]
    assert plan.outputs["headService"] == "ray/train-head-svc"
    assert plan.outputs["slice"] == {"machineType": "ct6e-standard-4t", "hosts": 4, "chips": 16}
    assert plan.warnings == []


def test_existing_cluster_example_without_system_pool_or_namespace(monkeypatch):
    plan = run_example(monkeypatch, EXISTING, "dev", {**EXISTING_VALUES, "createSystemPool": "false",
                                                      "createNamespace": "false", "namespace": "ml"})
    assert [s.name for s in steps(plan, NODE_POOL)] == ["v6e-16-0"]
    assert steps(plan, "kubernetes:core/v1:Namespace") == []
    assert steps(plan, RAY_CLUSTER)[0].inputs["metadata"]["namespace"] == "ml"


def test_existing_cluster_example_other_shape(monkeypatch):
    plan = run_example(monkeypatch, EXISTING, "dev", {**EXISTING_VALUES, "generation": "v5p", "topology": "2x2x4",
                                                      "sliceName": "v5p-16", "sliceCount": "2"})
    shape = ray_tpu_gke.slice_shape("v5p", "2x2x4")
    tpu_pools = [s for s in steps(plan, NODE_POOL) if s.name != "system"]
    assert [s.name for s in tpu_pools] == ["v5p-16-0", "v5p-16-1"]
    assert {s.inputs["nodeCount"] for s in tpu_pools} == {shape.hosts}
    (group,) = steps(plan, RAY_CLUSTER)[0].inputs["spec"]["workerGroupSpecs"]
    assert group["numOfHosts"] == shape.hosts
    assert group["template"]["spec"]["containers"][0]["resources"]["limits"][TPU] == str(shape.chips_per_host)


def test_existing_cluster_example_bad_topology_fails_before_any_resource(monkeypatch):
    with pytest.raises(ray_tpu_gke.ConfigError) as raised:
        run_example(monkeypatch, EXISTING, "dev", {**EXISTING_VALUES, "topology": "3x3"})
    assert str(raised.value).splitlines()[1].strip() == (
        'TpuSlicePools(v6e-16).args.slice.topology: "3x3" is not a v6e topology; allowed: '
        + ", ".join(ray_tpu_gke.catalog.topologies("v6e")))
    assert only_stack_registered()


# --- (b) the whole platform from the team's own config file ----------------------------------------------------------

OWN = EXAMPLES / "own-config"


def test_own_config_example_dev(monkeypatch):
    plan = run_example(monkeypatch, OWN, "dev", {})
    (platform,) = steps(plan, "ray-tpu-gke:index:RayTpuPlatform")
    (cluster,) = steps(plan, "gcp:container/cluster:Cluster")
    assert cluster.inputs["name"] == "ray-tpu-dev" and cluster.inputs["location"] == "us-east5-b"
    assert cluster.inputs["project"] == "acme-ml-dev"
    assert cluster.inputs["resourceLabels"]["team"] == "ml-platform"
    assert cluster.inputs["deletionProtection"] is False

    tpu_pools = {s.name: s.inputs for s in steps(plan, NODE_POOL) if s.name.startswith("v6e")}
    assert sorted(tpu_pools) == ["v6e-16-0", "v6e-16-1", "v6e-8-0", "v6e-8-1"]
    for name, inputs in tpu_pools.items():
        shape = ray_tpu_gke.slice_shape("v6e", "4x4" if name.startswith("v6e-16") else "2x4")
        assert inputs["nodeConfig"]["machineType"] == shape.machine_type.name
        assert inputs["autoscaling"]["minNodeCount"] == 0
        assert inputs["autoscaling"]["maxNodeCount"] == shape.hosts
        assert inputs["nodeConfig"]["spot"] is True

    (ray,) = steps(plan, RAY_CLUSTER)
    assert ray.inputs["metadata"] == {**ray.inputs["metadata"], "name": "research", "namespace": "research"}
    groups = {g["groupName"]: g for g in ray.inputs["spec"]["workerGroupSpecs"]}
    # Autoscaled: the groups start at minReplicas and the autoscaler owns their count (no replicas declared).
    assert {name: (g["minReplicas"], g["maxReplicas"]) for name, g in groups.items()} == {"v6e-8": (1, 2),
                                                                                          "v6e-16": (0, 2)}
    assert not [g for g in groups.values() if "replicas" in g]
    for name, group in groups.items():
        shape = ray_tpu_gke.slice_shape("v6e", "4x4" if name == "v6e-16" else "2x4")
        assert group["numOfHosts"] == shape.hosts
        assert group["template"]["spec"]["containers"][0]["resources"]["limits"][TPU] == str(shape.chips_per_host)
    assert ray.inputs["spec"]["enableInTreeAutoscaling"] is True

    assert plan.outputs["clusterName"] == "ray-tpu-dev"
    assert plan.outputs["poolNames"] == ["v6e-8-0", "v6e-8-1", "v6e-16-0", "v6e-16-1"]
    assert plan.outputs["kubeconfig"] == "[secret]"
    # No warning on the default Ray (2.60): 2.55's advice on its autoscaled multi-host slice (a slice reservation that
    # waits at most 100 s) ended with 2.56, whose reservation waits the worker group's start timeout and retries.
    assert list(plan.warnings) == []


def test_own_config_example_prod(monkeypatch):
    plan = run_example(monkeypatch, OWN, "prod", {})
    (pool,) = [s for s in steps(plan, NODE_POOL) if s.name.startswith("v6e")]
    assert pool.name == "v6e-32-0"
    assert pool.protect is True
    assert pool.inputs["nodeCount"] == ray_tpu_gke.slice_shape("v6e", "4x8").hosts
    assert pool.inputs["nodeConfig"]["reservationAffinity"]["values"] == ["v6e-prod"]
    assert steps(plan, RAY_CLUSTER)[0].inputs["metadata"]["namespace"] == "serving"


def test_own_config_example_bench_has_a_suspended_rayjob_on_the_slice_and_on_the_gpu_pool(monkeypatch):
    """The comparison as a program of its own (`ray-tpu-gke compare bench`, docs/compare.md)."""
    plan = run_example(monkeypatch, OWN, "bench", {})
    pools = {s.name: s.inputs for s in steps(plan, NODE_POOL)}
    gpu = pools["h100-8"]
    assert gpu["nodeConfig"]["machineType"] == "a3-highgpu-8g"
    assert gpu["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-h100-80gb"
    assert gpu["autoscaling"]["minNodeCount"] == 0 and pools["v6e-8-0"]["autoscaling"]["minNodeCount"] == 0
    jobs = {s.inputs["metadata"]["name"]: s.inputs["spec"] for s in steps(plan, "kubernetes:ray.io/v1:RayJob")}
    assert sorted(jobs) == ["bench-h100", "bench-tpu"]
    limits = {name: job["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]
              ["limits"] for name, job in jobs.items()}
    assert limits["bench-tpu"][TPU] == "8" and limits["bench-h100"]["nvidia.com/gpu"] == "8"
    assert all(job["suspend"] is True and job["ttlSecondsAfterFinished"] == 60 for job in jobs.values())


def test_own_config_example_unknown_stack(monkeypatch):
    with pytest.raises(ValueError, match=r"environments.toml has no \[environments.qa\] table \(it has: bench, dev, prod\)"):
        run_example(monkeypatch, OWN, "qa", {})


def test_own_config_example_bad_shape_fails_before_any_resource(monkeypatch, tmp_path):
    copy = tmp_path / "own-config"
    shutil.copytree(OWN, copy)
    config = copy / "environments.toml"
    config.write_text(config.read_text().replace('shape = "4x4"', 'shape = "3x3"', 1))
    with pytest.raises(ray_tpu_gke.ConfigError) as raised:
        run_example(monkeypatch, copy, "dev", {})
    problems = [p.path for p in raised.value.problems]
    assert "RayTpuPlatform(platform).args.tpu_slices[1].topology" in problems
    assert 'RayTpuPlatform(platform).args.tpu_slices[1].topology: "3x3" is not a v6e topology' in str(raised.value)
    assert only_stack_registered()


# --- the package, installed outside the repository -------------------------------------------------------------------

# A program of another repository: its own minimal mocks, the components alone (a cluster it does not own) and
# together (the whole platform), and a bad argument; it prints what it registered.
CONSUMER = textwrap.dedent('''
    import importlib.util
    import json
    import sys

    import pulumi
    import pulumi_kubernetes as k8s

    import ray_tpu_gke
    from ray_tpu_gke import (ConfigError, RayCluster, RayClusterArgs, RayObjectArgs, RayTpuPlatform,
                             RayTpuPlatformArgs, TpuSliceArgs, TpuSlicePools, TpuSlicePoolsArgs, WorkerGroupArgs,
                             slice_shape)

    registered = []
    outputs = {}


    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            state = dict(args.inputs)
            if args.typ == "gcp:container/cluster:Cluster":
                state.update(endpoint="192.0.2.10", masterAuth={"clusterCaCertificate": "bW9jaw=="})
            if args.typ == "gcp:serviceaccount/account:Account":
                state["email"] = f"{args.inputs['accountId']}@consumer.iam.gserviceaccount.com"
            registered.append({"type": args.typ, "name": args.name, "inputs": args.inputs})
            return f"{args.name}-id", state

        def call(self, args):
            return {}


    pulumi.runtime.set_mocks(Mocks(), project="consumer", stack="dev", preview=False)


    def alone():
        tpu = TpuSliceArgs(name="v5p-16", generation="v5p", topology="2x2x4", capacity="spot")
        pools = TpuSlicePools("v5p-16", TpuSlicePoolsArgs(
            project="consumer", cluster="shared", location="us-east5-a", slice=tpu, deletion_protection=False))
        ray = RayCluster("train", RayClusterArgs(
            kubernetes_provider=k8s.Provider("shared", kubeconfig="{}"), tpu_slices=[tpu],
            spec=RayObjectArgs(name="train", worker_groups=[WorkerGroupArgs(name="tpu", slice="v5p-16", replicas=1)]),
        ), opts=pulumi.ResourceOptions(depends_on=[pools]))
        return pulumi.Output.all(pools.pool_names, pools.node_selector, ray.head_service).apply(
            lambda v: outputs.update(pools=v[0], node_selector=v[1], head_service=v[2]))


    def together():
        platform = RayTpuPlatform("platform", RayTpuPlatformArgs(
            project="consumer", region="us-east5",
            cluster={"name": "ray-tpu", "location": "us-east5-b", "deletion_protection": False},
            tpu_slices=[TpuSliceArgs(name="v6e-8", generation="v6e", topology="2x4")],
            ray_clusters=[RayObjectArgs(name="research", worker_groups=[
                WorkerGroupArgs(name="tpu", slice="v6e-8", replicas=1)])],
        ))
        return pulumi.Output.all(platform.cluster_name, platform.pool_names).apply(
            lambda v: outputs.update(cluster_name=v[0], platform_pools=v[1]))


    pulumi.runtime.test(alone)()
    pulumi.runtime.test(together)()
    try:
        TpuSlicePools("bad", TpuSlicePoolsArgs(project="p", cluster="c", location="us-east5-a",
                                               slice=TpuSliceArgs(name="bad", generation="v5p", topology="3x3")))
        error = None
    except ConfigError as raised:
        error = str(raised)

    shape = slice_shape("v5p", "2x2x4")
    print(json.dumps({
        "library": ray_tpu_gke.__file__,
        "version": ray_tpu_gke.__version__,
        "sys_path": sys.path,
        "importable": {name: importlib.util.find_spec(name) is not None for name in ("plan", "components")},
        "shape": {"hosts": shape.hosts, "chips_per_host": shape.chips_per_host, "machine_type": shape.machine_type.name},
        "registered": registered,
        "outputs": outputs,
        "error": error,
    }))
''')


def test_installed_in_a_fresh_venv_outside_the_repository(tmp_path):
    """pip installs the package (non-editable, built from a copy of the sources) into a new venv in a temporary
    folder, the way the Pulumi language host prepares the provider's venv: `pip install -r requirements.txt` in
    provider/, whose `..` is the copy's root. The dependencies (pulumi, pulumi-gcp, ...) come from this repository's
    .venv through a .pth file naming only its site-packages, whose own .pth files (the editable install of this
    checkout) are then not processed. A consumer program runs against it, and so does the provider plugin.
    Takes ~15 s: a venv, a wheel build and two programs."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("components", "plan", "policy", "workloads", "provider"):  # what pyproject.toml ships
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "venv"))

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    python = Path(fresh_venv(tmp_path / "venv", env))
    install = pip_into(str(python), "--no-deps", "-r", "requirements.txt", cwd=source / "provider", env=env)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    assert f"Successfully installed ray-tpu-gke-{VERSION}" in install.stdout

    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        check=True, capture_output=True, text=True, env=env).stdout.strip())
    dependencies = Path(sysconfig.get_paths()["purelib"])  # this interpreter's: the repository's .venv
    assert (dependencies / "pulumi_gcp").is_dir()
    (site_packages / "ray-tpu-gke-dependencies.pth").write_text(f"{dependencies}\n")

    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "__main__.py").write_text(CONSUMER)
    run = subprocess.run([str(python), str(consumer)], cwd=consumer, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-5000:]
    result = json.loads(run.stdout)

    # The installed copy, not this checkout: nothing of the repository on sys.path but the dependencies' folder.
    assert Path(result["library"]).is_relative_to(site_packages)
    assert (site_packages / "ray_tpu_gke" / "py.typed").is_file()
    assert result["version"] == VERSION
    assert result["importable"] == {"plan": False, "components": False}
    assert str(dependencies) in result["sys_path"]
    assert [p for p in result["sys_path"] if Path(p).is_relative_to(ROOT) and p != str(dependencies)] == []

    registered = {(r["type"], r["name"]): r["inputs"] for r in result["registered"]}
    # Alone: the slice's pools in a cluster the program does not own, and a RayCluster on them.
    pool = registered[("gcp:container/nodePool:NodePool", "v5p-16-0")]
    assert pool["cluster"] == "shared"
    assert pool["nodeConfig"]["machineType"] == result["shape"]["machine_type"] == "ct5p-hightpu-4t"
    assert pool["nodeCount"] == result["shape"]["hosts"] == 4
    (group,) = registered[(RAY_CLUSTER, "train")]["spec"]["workerGroupSpecs"]
    assert group["numOfHosts"] == 4
    assert group["template"]["spec"]["containers"][0]["resources"]["limits"][TPU] == "4"
    assert result["outputs"]["pools"] == ["v5p-16-0"]
    assert result["outputs"]["head_service"] == "ray/train-head-svc"
    # Together: the whole platform.
    types = {t for t, _ in registered}
    assert {"ray-tpu-gke:index:RayTpuPlatform", "ray-tpu-gke:index:GkeCluster", "gcp:container/cluster:Cluster",
            "gcp:compute/network:Network", "gcp:storage/bucket:Bucket"} <= types
    assert registered[("gcp:container/nodePool:NodePool", "v6e-8-0")]["nodeConfig"]["machineType"] == \
        "ct6e-standard-8t"
    assert (RAY_CLUSTER, "ray-research") in registered
    assert result["outputs"]["cluster_name"] == "ray-tpu"
    assert result["outputs"]["platform_pools"] == ["v6e-8-0"]
    # A bad argument: the component's own error, naming the argument.
    assert 'TpuSlicePools(bad).args.slice.topology: "3x3" is not a v5p topology' in result["error"]
    assert not any(name == "bad" for _, name in registered)

    # The provider plugin, run by the venv's python as the language host would, serves from the installed library.
    served, version = serve(str(python), source / "provider", env)
    assert version == VERSION
    assert set(served["resources"]) == {"ray-tpu-gke:index:RayTpuPlatform", "ray-tpu-gke:index:TpuSlicePools"}


def test_library_doc_links_resolve():
    for doc in (ROOT / "docs" / "library.md", ROOT / "CHANGELOG.md"):
        for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"


def test_changelog_has_the_package_version():
    assert f"\n## {VERSION}\n" in (ROOT / "CHANGELOG.md").read_text()


# --- secure by default on the library path ---------------------------------------------------------------------------

SECURE = textwrap.dedent('''
    import pulumi
    import pulumi_kubernetes as k8s

    from ray_tpu_gke import (CpuPoolArgs, RayCluster, RayClusterArgs, RayObjectArgs, TpuSliceArgs, TpuSlicePools,
                             TpuSlicePoolsArgs, WorkerGroupArgs, WorkerPool, WorkerPoolArgs)

    config = pulumi.Config()
    tpu = TpuSliceArgs(name="v6e-8", generation="v6e", topology="2x4")
    pools = TpuSlicePools("v6e-8", TpuSlicePoolsArgs(project="acme-ml", cluster="projects/acme-ml/locations/"
                                                     "us-east5-b/clusters/shared", location="us-east5-b", slice=tpu))
    cpu = CpuPoolArgs(name="prep", machine_type="n2-standard-16", count=2)
    WorkerPool("prep", WorkerPoolArgs(project="acme-ml", cluster="shared", location="us-east5-b", cpu=cpu))
    spec = RayObjectArgs(name="train", worker_groups=[WorkerGroupArgs(name="tpu", slice="v6e-8", replicas=1)])
    args = RayClusterArgs(kubernetes_provider=k8s.Provider("shared", kubeconfig="{}"), spec=spec, tpu_slices=[tpu])
    if config.get("rayServiceAccount"):
        args["service_account"] = config.get("rayServiceAccount")
    RayCluster("train", args, opts=pulumi.ResourceOptions(depends_on=[pools]))
''')


def test_library_pools_get_a_least_privilege_node_account_and_the_same_protection(monkeypatch, tmp_path):
    from ray_tpu_gke.resources.identity import NODE_ROLES

    program = tmp_path / "secure"
    program.mkdir()
    (program / "__main__.py").write_text(SECURE)
    (program / "Pulumi.yaml").write_text("name: secure\nruntime: python\n")
    plan = run_example(monkeypatch, program, "dev", {"gcp:project": "acme-ml"})
    accounts = {s.name: s for s in steps(plan, "gcp:serviceaccount/account:Account")}
    assert set(accounts) == {"v6e-8-nodes", "prep-nodes"}
    # IDs from the cluster's name (not its id) and the component's, valid and distinct across clusters.
    assert accounts["v6e-8-nodes"].inputs["accountId"] == ray_tpu_gke.admission.service_account_id(
        "shared-v6e-8", "nodes")
    members = steps(plan, "gcp:projects/iAMMember:IAMMember")
    for name in accounts:
        assert sorted(m.inputs["role"] for m in members if m.name.startswith(f"{name}-")) == sorted(NODE_ROLES)
    pools = {s.name: s for s in steps(plan, NODE_POOL)}
    for pool, account in (("v6e-8-0", "shared-v6e-8-nodes"), ("prep", "shared-prep-nodes")):
        assert pools[pool].inputs["nodeConfig"]["serviceAccount"] == f"{account}@acme-ml.iam.gserviceaccount.com"
    assert pools["v6e-8-0"].protect is True and pools["prep"].protect is True  # one default for every pool kind
    # A RayCluster without a Kubernetes service account says plainly that it has no Workload Identity.
    (warning,) = [w for w in plan.warnings if w.startswith("RayCluster(train)")]
    assert "`default` of namespace ray, with no Workload Identity" in warning
    assert steps(plan, RAY_CLUSTER)[0].inputs["spec"]["workerGroupSpecs"][0]["template"]["spec"].get(
        "serviceAccountName", "default") == "default"

    secure = run_example(monkeypatch, program, "dev", {"gcp:project": "acme-ml", "rayServiceAccount": "ray"})
    assert not [w for w in secure.warnings if w.startswith("RayCluster(train)")]
    (ray,) = steps(secure, RAY_CLUSTER)
    assert ray.inputs["spec"]["workerGroupSpecs"][0]["template"]["spec"]["serviceAccountName"] == "ray"


def test_existing_cluster_example_is_least_privilege(monkeypatch):
    plan = run_example(monkeypatch, EXISTING, "dev", EXISTING_VALUES)
    (ksa,) = steps(plan, "kubernetes:core/v1:ServiceAccount")
    (gsa,) = [s for s in steps(plan, "gcp:serviceaccount/account:Account") if s.name == "ray"]
    email = f"{gsa.inputs['accountId']}@acme-ml.iam.gserviceaccount.com"
    assert ksa.inputs["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": email}
    (binding,) = steps(plan, "gcp:serviceaccount/iAMMember:IAMMember")
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert binding.inputs["member"] == "serviceAccount:acme-ml.svc.id.goog[ray/ray]"
    (ray,) = steps(plan, RAY_CLUSTER)
    assert ray.inputs["spec"]["workerGroupSpecs"][0]["template"]["spec"]["serviceAccountName"] == "ray"
    pools = {s.name: s.inputs["nodeConfig"]["serviceAccount"] for s in steps(plan, NODE_POOL)}
    assert pools["v6e-16-0"] == pools["system"] == "ml-shared-v6e-16-nodes@acme-ml.iam.gserviceaccount.com"
