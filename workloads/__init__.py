"""Ray programs the stacks run on their TPU slices and GPU nodes, and the images they run in (workloads/Dockerfile for
TPU, workloads/Dockerfile.gpu for GPU; docs/workloads.md).

- `workloads.tpu_smoke`: the post-deploy smoke test of one worker group (`python -m workloads.tpu_smoke ...`).
- `workloads.train`: a Ray Train `JaxTrainer` run on TPU slices (multislice too) or one GPU node, checkpointed to the
  stack's bucket (`/gcs`), every step measured, with a result document (workloads.result) for the comparison.
- `workloads.serve:app`: a Ray Serve application serving a small JAX model, for a RayService's serveConfig.
- `workloads.local_cluster`: a local Ray cluster that looks like GKE's TPU slices and GPU nodes (tests, `make compare`).
- `workloads.slice_health`: the in-cluster check of every TPU slice (the stack's slice-health CronJob).

What the toolchain shares with them (slice shapes, slice checks, the command lines of `tpu_smoke` and `train`) is
the library's `ray_tpu_gke.workload`, which they import; the toolchain imports nothing of this package (only the
comparisons' Ray halves, scripts the workloads interpreter runs, do). Installed from the wheel it is
`ray_tpu_gke_tools.workloads`, files that `compare --local` copies onto the workloads interpreter's path as
`workloads`, as the images carry them.
"""
