"""A comparison job in plain Python: no Ray, no framework, only `ray_tpu_gke.bench` for reporting. It fits a linear
model to seeded data by minibatch gradient descent, reports every step, "checkpoints" its weights to a file, and ends
with its evaluation loss, an output fingerprint and the FLOPs it declares per step. It is the smallest program the
comparison accepts as a side (tests/compare/test_compare_local.py runs it beside workloads.train).

Its command line is its own: an argument parser that knows only the job's flags and refuses any other, as a team's
script does. What the comparison tells it (run id, side, result folder, seed, simulated, checkpoint cadence) comes
through the environment, which `bench.start()` and `bench.settings()` read:

    RAY_TPU_GKE_RUN=r1 RAY_TPU_GKE_SIDE=bench-gpu RAY_TPU_GKE_RESULT_DIR=/tmp/results RAY_TPU_GKE_SIMULATE=1 \
        python examples/bench-jobs/plain_job.py --steps 20
    python -m plan.compare compare --local --entrypoint bench-a100='python examples/bench-jobs/plain_job.py'
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

from ray_tpu_gke import bench

FEATURES = 16


def rows(rng: random.Random, count: int) -> list[tuple[list[float], float]]:
    """Inputs and targets of a smooth function of the inputs, drawn from `rng`."""
    out = []
    for _ in range(count):
        x = [rng.gauss(0.0, 1.0) for _ in range(FEATURES)]
        out.append((x, math.sin(sum(v * (i / FEATURES - 0.5) for i, v in enumerate(x)))))
    return out


def predict(weights: list[float], x: list[float]) -> float:
    return sum(w * v for w, v in zip(weights, x))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])  # the job's own flags, and no other
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    args = parser.parse_args(argv)
    told = bench.settings()  # what the comparison says through the environment ($RAY_TPU_GKE_*)
    seed, every = told.get("seed", 0), told.get("report_every", 10)
    # No accelerator here: the job runs on the CPU, and says so only when told it stands in ($RAY_TPU_GKE_SIMULATE);
    # otherwise the comparison refuses its numbers as a TPU or GPU measurement.
    run = bench.start(kind=None, platform="cpu", devices=1, device_kind="python", steps=args.steps,
                      batch_size=args.batch_size, framework="python",
                      framework_version=".".join(map(str, sys.version_info[:3])))
    weights = [0.0] * FEATURES
    held_out = rows(random.Random(f"{seed}-eval"), 8)
    with tempfile.TemporaryDirectory() as directory:
        for step in range(1, args.steps + 1):
            batch = rows(random.Random(f"{seed}-{step}"), args.batch_size)  # data, outside the step's time
            began = time.perf_counter()
            grads, loss = [0.0] * FEATURES, 0.0
            for x, y in batch:
                error = predict(weights, x) - y
                loss += error * error / len(batch)
                for i, v in enumerate(x):
                    grads[i] += 2 * error * v / len(batch)
            weights = [w - args.learning_rate * g for w, g in zip(weights, grads)]
            run.step(step, loss=loss, examples=len(batch), step_s=time.perf_counter() - began, compiled=False)
            if step % every == 0 or step == args.steps:
                began = time.perf_counter()
                Path(directory, "weights.json").write_text(json.dumps({"step": step, "weights": weights}))
                run.checkpoint(step, time.perf_counter() - began)
    predictions = [predict(weights, x) for x, _ in held_out]
    eval_loss = sum((p - y) ** 2 for p, (_, y) in zip(predictions, held_out)) / len(held_out)
    # A multiply and an add per weight and row forward, twice that backward, and the update: the job's own count.
    flops = 6 * FEATURES * args.batch_size + 2 * FEATURES
    run.finish(metric=eval_loss, metric_name="evalLoss", flops_per_step=flops,
               fingerprint=bench.fingerprint(predictions, seed=seed, inputs="plain_job held-out rows"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
