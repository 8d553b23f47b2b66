"""The whole platform (network, identity, bucket, GKE cluster, one node pool per TPU slice, KubeRay objects) from the
team's own config file, environments.toml, rather than from a stack file: the stack's name picks the table.

RayTpuPlatform takes typed arguments (RayTpuPlatformArgs), validates them before registering anything and names a bad
value by its argument path, e.g. `RayTpuPlatform(platform).args.tpu_slices[1].topology`; `translate` below keeps
the team's vocabulary in one place.
"""

import tomllib
from pathlib import Path

import pulumi

from ray_tpu_gke import (ClusterSpecArgs, GpuPoolArgs, RayJobSpecArgs, RayObjectArgs, RayTpuPlatform,
                         RayTpuPlatformArgs, TpuSliceArgs, WorkerGroupArgs)

CONFIG_FILE = Path(__file__).with_name("environments.toml")


def translate(defaults: dict, env: dict) -> RayTpuPlatformArgs:
    """One environment of environments.toml as RayTpuPlatformArgs."""
    slices = []
    for accelerator in env.get("accelerators", []):
        tpu = TpuSliceArgs(name=accelerator["id"], generation=accelerator["tpu"], topology=accelerator["shape"],
                           count=accelerator.get("pools", 1), capacity=accelerator.get("capacity", "onDemand"),
                           zone=env["zone"])
        if accelerator.get("autoscale"):
            tpu["autoscaling"] = {"enabled": True, "min_nodes": 0}
        if "reservation" in accelerator:
            tpu["reservation"] = accelerator["reservation"]
        slices.append(tpu)
    gpu_pools = [GpuPoolArgs(name=gpu["id"], accelerator=gpu["gpu"], machine_type=gpu["machine"],
                             count=gpu.get("nodes", 1), zone=env["zone"], autoscaling={"enabled": gpu["autoscale"]})
                 for gpu in env.get("gpus", [])]
    tpu_ids = {tpu["name"] for tpu in slices}
    # A job's worker group runs on one accelerator id: a TPU slice entry or a GPU pool.
    ray_jobs = [
        RayJobSpecArgs(
            name=job["name"], namespace=job["namespace"], image=job["image"], entrypoint=job["command"],
            worker_groups=[WorkerGroupArgs(name="tpu", slice=job["on"]) if job["on"] in tpu_ids
                           else WorkerGroupArgs(name="gpu", gpu_pool=job["on"])],
            # A template: created suspended, so `pulumi up` starts no Ray cluster; `ray-tpu-gke compare` runs
            # copies of it, and the copy's Ray cluster (and node) goes a minute after its job ends.
            suspend=True, ttl_seconds_after_finished=60, active_deadline_seconds=job["deadline_s"])
        for job in env.get("jobs", [])
    ]
    ray_clusters = [
        RayObjectArgs(
            name=ray["name"],
            namespace=ray.get("namespace", "ray"),
            # Ray's autoscaler owns an autoscaled RayCluster's count and starts each group at min_replicas.
            worker_groups=[WorkerGroupArgs(name=slice_id, slice=slice_id, replicas=start, min_replicas=start,
                                           max_replicas=most)
                           for slice_id, (start, most) in ray["workers"].items()],
            autoscaling={"enabled": any(most > start for start, most in ray["workers"].values())},
        )
        for ray in env.get("ray", [])
    ]
    return RayTpuPlatformArgs(
        project=env["gcp_project"],
        region=env["region"],
        environment=pulumi.get_stack(),
        team=defaults["team"],
        cost_center=defaults["cost_center"],
        cluster=ClusterSpecArgs(
            name=env["gke_cluster"],
            location=env["zone"],
            release_channel=defaults["release_channel"],
            deletion_protection=env["protect"],
            master_authorized_networks=[{"cidr_block": defaults["office_cidr"], "display_name": "office"}],
        ),
        storage={"force_destroy": not env["protect"]},
        tpu_slices=slices,
        gpu_pools=gpu_pools,
        ray_clusters=ray_clusters,
        ray_jobs=ray_jobs,
    )


teams_config = tomllib.loads(CONFIG_FILE.read_text())
stack = pulumi.get_stack()
if stack not in teams_config["environments"]:
    raise ValueError(f"{CONFIG_FILE.name} has no [environments.{stack}] table "
                     f"(it has: {', '.join(sorted(teams_config['environments']))})")

platform = RayTpuPlatform("platform", translate(teams_config["defaults"], teams_config["environments"][stack]))

pulumi.export("clusterName", platform.cluster_name)
pulumi.export("bucket", platform.bucket)
pulumi.export("poolNames", platform.pool_names)
pulumi.export("kubeconfig", platform.kubeconfig)
