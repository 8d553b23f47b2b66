"""ray-tpu-gke: Ray on Google Cloud TPUs in GKE.

Pure layers: `catalog` (TPU shapes), `config` (typed stack config), `manifests` (KubeRay and GKE manifests).
Pulumi components: `network`, `identity`, `storage`, `cluster`, `slice_pool`, `ray`, and `platform` over them all.
"""
