"""A library program on Autopilot with a multi-host Ironwood slice (issue #22 item 4): its Ray pods, the workload
policy and the monitoring all use the name `<cluster>-<slice>`, and a RayCluster that is not told the cluster's name
is refused before anything is registered."""

import textwrap

import pytest
from helpers import RAY_CLUSTER
from examples_run import run_example, steps

from ray_tpu_gke.render import manifests

PROGRAM = textwrap.dedent('''
    import pulumi
    import pulumi_kubernetes as k8s

    from ray_tpu_gke import RayCluster, RayClusterArgs, RayObjectArgs, TpuSliceArgs, WorkerGroupArgs
    from ray_tpu_gke import ironwood_workload_policy

    config = pulumi.Config()
    ironwood = TpuSliceArgs(name="iw-64", generation="tpu7x", topology="4x4x4")
    policy = ironwood_workload_policy("shared", ironwood, project="acme-ml", region="us-central1")
    spec = RayObjectArgs(name="train",
                         worker_groups=[WorkerGroupArgs(name="tpu", slice="iw-64", replicas=1)])
    args = RayClusterArgs(kubernetes_provider=k8s.Provider("shared", kubeconfig="{}"), spec=spec, tpu_slices=[ironwood],
                          mode="autopilot", service_account="ray")
    if config.get("clusterName"):
        args["cluster_name"] = config.get("clusterName")
    RayCluster("train", args, opts=pulumi.ResourceOptions(depends_on=[policy]))
''')


@pytest.fixture
def program(tmp_path):
    folder = tmp_path / "ironwood"
    folder.mkdir()
    (folder / "__main__.py").write_text(PROGRAM)
    (folder / "Pulumi.yaml").write_text("name: ironwood\nruntime: python\n")
    return folder


def test_the_pods_select_the_policy_the_helper_creates(monkeypatch, program):
    plan = run_example(monkeypatch, program, "dev", {"gcp:project": "acme-ml", "clusterName": "shared"})
    (policy,) = steps(plan, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["name"] == "shared-iw-64"
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"}
    (ray,) = steps(plan, RAY_CLUSTER)
    (group,) = ray.inputs["spec"]["workerGroupSpecs"]
    selector = group["template"]["spec"]["nodeSelector"]
    assert selector[manifests.PLACEMENT_POLICY_LABEL] == "shared-iw-64"
    assert manifests.label_problems(ray.inputs) == []


def test_a_ray_cluster_without_the_cluster_name_is_refused(monkeypatch, program):
    with pytest.raises(Exception) as error:
        run_example(monkeypatch, program, "dev", {"gcp:project": "acme-ml"})
    assert "RayCluster(train).args.cluster_name: required in Autopilot mode" in str(error.value)
