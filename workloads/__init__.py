"""Ray programs the stacks run on their TPU slices, and the image they run in (workloads/Dockerfile).

- `workloads.tpu_smoke`: the post-deploy smoke test of one worker group (`python -m workloads.tpu_smoke ...`).
- `workloads.train`: a tiny Ray Train `JaxTrainer` run that checkpoints to the stack's bucket (`/gcs`).
- `workloads.serve:app`: a Ray Serve application serving a small JAX model, for a RayService's serveConfig.

The modules import Ray and JAX only where they run them, so `plan.verify` (in the project's own virtualenv, which has
neither) can build a smoke test's arguments and read its result from the same code. docs/workloads.md has the image.
"""
