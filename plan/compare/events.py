"""What a training job says about itself, read from its log: `ray_tpu_gke.bench.read`, the one parser of what every
job writes through `ray_tpu_gke.bench` (event lines while it runs, the result document last; docs/compare.md "Bring
your own job", docs/workloads.md "Result document"). Kept as this package's name for it."""

from __future__ import annotations

from ray_tpu_gke import bench

RESULT_SCHEMA, EVENT_KINDS = bench.SCHEMA, bench.EVENTS
JobLog = bench.JobLog
parse = bench.read
