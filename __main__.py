"""The Pulumi program: read and validate the stack config, build the platform, export what users need."""

import pulumi

from ray_tpu_gke import RayTpuPlatform, load_stack_config

config = load_stack_config()
for warning in config.warnings:
    pulumi.log.warn(warning)

platform = RayTpuPlatform("platform", config)

pulumi.export("clusterName", platform.cluster_name)
pulumi.export("bucket", platform.bucket)
pulumi.export("getCredentials", pulumi.Output.concat(
    "gcloud container clusters get-credentials ", platform.cluster_name,
    f" --location {config.cluster.location} --project {config.project}"))
