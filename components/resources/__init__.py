"""The Pulumi ComponentResources, which register what `render` builds: `cluster`, `network`, `identity`, `storage`,
`slice_pool` (TPU slices), `worker_pool` (GPU and CPU pools), `ray` (RayCluster, RayService, RayJob), `monitoring`,
`preflight` (deploy-time checks), `platform` (the whole environment) and `outputs` (their outputs of values already
known, built without `Output.from_input`'s unwrapping).
"""
