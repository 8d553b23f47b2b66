"""Ray programs the stacks run on their TPU slices and GPU nodes, and the images they run in (workloads/Dockerfile for
TPU, workloads/Dockerfile.gpu for GPU; docs/workloads.md).

- `workloads.tpu_smoke`: the post-deploy smoke test of one worker group (`python -m workloads.tpu_smoke ...`).
- `workloads.train`: a Ray Train `JaxTrainer` run on TPU slices (multislice too) or one GPU node, checkpointed to the
  stack's bucket (`/gcs`), every step measured, with a result document (workloads.result) for the comparison.
- `workloads.serve:app`: a Ray Serve application serving a small JAX model, for a RayService's serveConfig.
- `workloads.local_cluster`: a local Ray cluster that looks like GKE's TPU slices and GPU nodes (tests, `make compare`).

The modules import Ray and JAX only where they run them, so `plan.verify` and the planner (in the project's own
virtualenv, which has neither) can build a smoke test's arguments, parse a training entrypoint and read their results
from the same code.
"""
