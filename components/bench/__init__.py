"""`ray_tpu_gke.bench`: how any training program tells the comparison (`python -m plan.compare`) what it needs, and the
one parser of what it tells. Pure Python (no Ray, JAX, PyTorch or NumPy import), so that a job in any framework, and
every collector, can import it.

    from ray_tpu_gke import bench

    run = bench.start(run="r1", side="bench-gpu", kind="gpu", platform="gpu", devices=8, device_kind="H100",
                      framework="torch", batch_size=256, steps=300)
    for step in range(1, 301):
        loss = train_one_step()                     # the step's result ready (synchronised) before the call
        run.step(step, loss=loss, examples=256, tokens=256 * 1024)
    run.finish(metric=eval_loss, metric_name="evalLoss", fingerprint=bench.fingerprint(predictions, seed=0),
               flops_per_step=flops)

The job prints one event line per start, step, checkpoint, restore and restart (a JSON object with an "event" key and
an epoch `time`) while it runs, and its result document (`"schema": "ray-tpu-gke/train-result/v1"`) as its last line
at the end, also written to `<result_dir>/<run>/<side>.json`. `bench.read(log)` finds both in a job's log, whatever
Ray put around them. Field by field: docs/workloads.md "Result document"; the comparison's flags: docs/compare.md.

What the comparison tells a job (run id, side, result folder, seed, simulated, checkpoint cadence) comes through the
environment (`bench.VARIABLES`: $RAY_TPU_GKE_RUN, $RAY_TPU_GKE_SIDE, $RAY_TPU_GKE_RESULT_DIR, $RAY_TPU_GKE_SEED,
$RAY_TPU_GKE_SIMULATE, $RAY_TPU_GKE_REPORT_EVERY), which `bench.start()` reads: the job's command line is its own.
`bench.settings()` returns them typed, for a job that reads them in its driver and hands them to its workers.

The package's modules, one concern each: `contract` (the schema, the fields and `validate`), `environment` (the
settings' variables), `writing` (event lines, fingerprints, the flags and the document), `recorder` (`start` and
`Run`), `reading` (`read`), `flops` (the analytic FLOPs count a job's own is checked against). All of them are
standard-library only, and everything is imported from `ray_tpu_gke.bench` itself.
"""

from __future__ import annotations

from .contract import EVENTS, FIELDS, KINDS, PLATFORMS, REPORTER, RESTART_FIELDS, SCHEMA, WORKER_FIELDS, validate
from .environment import VARIABLES, environment, settings
from .flops import GAP_TOLERANCE, analytic, cross_check, from_model
from .reading import JobLog, objects, read
from .recorder import Run, start
from .writing import (
    add_arguments,
    document,
    event_line,
    fingerprint,
    print_result,
    process_start_time,
    steady,
    steady_indices,
    write_result,
)

__all__ = [
    "EVENTS",
    "GAP_TOLERANCE",
    "FIELDS",
    "KINDS",
    "PLATFORMS",
    "REPORTER",
    "RESTART_FIELDS",
    "SCHEMA",
    "VARIABLES",
    "WORKER_FIELDS",
    "JobLog",
    "Run",
    "add_arguments",
    "analytic",
    "cross_check",
    "document",
    "environment",
    "event_line",
    "fingerprint",
    "from_model",
    "objects",
    "print_result",
    "process_start_time",
    "read",
    "settings",
    "start",
    "steady",
    "steady_indices",
    "validate",
    "write_result",
]
