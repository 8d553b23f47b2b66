"""What the Ray programs on the slices (the repository's workloads/, run as `workloads` in the images) and the
toolchain that plans, verifies and compares them agree on: standard library only, importable without Pulumi, Ray or
JAX, so that the images carry it beside `ray_tpu_gke.bench` (workloads/Dockerfile) and the planner's virtualenv
imports the same code.

- `slice`: one TPU slice as a stack declares it, in Ray's terms (`SliceSpec`), and the pods' `$SLICE_*` environment;
- `slice_checks`: the checks of a live cluster's TPU node pools, Ray objects and worker pods, shared by
  `ray-tpu-gke verify` and the in-cluster health CronJob (`workloads.slice_health`);
- `ray_labels`: the checks of the `ray.io/tpu-*` labels Ray gives a worker group's hosts (the smoke test's and
  verify's view of Ray);
- `smoke_args`: the smoke test's command line (`python -m workloads.tpu_smoke`), its entrypoint and its result line;
- `lm_config`: the training workload's language-model sizes and presets;
- `train_args`: the training workload's command line (`python -m workloads.train`), which the planner checks a
  RayJob's entrypoint with.

Each module imports only the standard library, `ray_tpu_gke.bench` and its siblings (tests/project/test_layout.py).
"""
