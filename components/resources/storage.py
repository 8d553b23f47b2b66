"""The bucket for checkpoints, datasets and the XLA compilation cache; only the Ray service account may use it."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..spec.models import StorageConfig


class Storage(pulumi.ComponentResource):
    bucket: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        project: str,
        region: str,
        bucket_name: str,
        storage: StorageConfig,
        ray_email: pulumi.Input[str],
        labels: dict[str, str],
        protect: bool,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ray-tpu-gke:index:Storage", name, None, opts)
        bucket = gcp.storage.Bucket(
            name,
            name=bucket_name,
            project=project,
            location=(storage.location or region).upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning=gcp.storage.BucketVersioningArgs(enabled=storage.versioning),
            logging=gcp.storage.BucketLoggingArgs(log_bucket=storage.access_log_bucket)
            if storage.access_log_bucket
            else None,
            force_destroy=storage.force_destroy,
            labels=labels,
            opts=pulumi.ResourceOptions(parent=self, protect=protect),
        )
        gcp.storage.BucketIAMMember(
            f"{name}-ray",
            bucket=bucket.name,
            role="roles/storage.objectUser",
            member=pulumi.Output.from_input(ray_email).apply(lambda email: f"serviceAccount:{email}"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.bucket = bucket.name
        self.register_outputs({"bucket": bucket.name})
