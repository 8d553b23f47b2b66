"""The Pulumi ComponentResources, which register what `render` builds: `cluster`, `network`, `identity`, `storage`,
`slice_pool` (TPU slices), `worker_pool` (GPU and CPU pools), `ray` (RayCluster, RayService, RayJob), `monitoring`,
`preflight` (deploy-time checks) and `platform` (the whole environment).
"""
