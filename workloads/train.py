"""Ray Train `JaxTrainer` on one TPU worker group: the small MLP of workloads.model, data-parallel over every chip of
the slice, checkpointed to the stack's bucket.

    python -m workloads.train --generation v6e --topology 4x4 --hosts 4 --chips-per-host 4 --steps 500
    python -m workloads.train --gpus 8 --steps 500      # the same program on one 8-GPU node (stacks/compare)

One Ray Train worker per host (`ScalingConfig(use_tpu=True, topology=..., accelerator_type=...)`), which Ray 2.55
places on a whole slice with its slice placement group and joins into one JAX program (`jax.distributed.initialize`
in ray/train/v2/jax/config.py). Checkpoints go under --storage-path, by default `/gcs/ray-train`: the bucket the
stack mounts at /gcs in every Ray pod (components/manifests.py GCS_MOUNT), so every host and a later run see the same
files. A run with the same --name resumes from its latest checkpoint. Prints one JSON line
(`"kind": "ray-tpu-gke/train"`) with the final metrics and the checkpoint's path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from workloads.slice import SliceSpec, add_arguments, from_args

RESULT_KIND = "ray-tpu-gke/train"
GCS_MOUNT = "/gcs"  # components/manifests.py GCS_MOUNT: the stack's bucket in every Ray pod (GCS FUSE CSI driver)
DEFAULT_STORAGE = f"{GCS_MOUNT}/ray-train"


def train_loop(config: dict) -> None:
    """Each Ray Train worker (one per TPU host) runs this; together they are one JAX program over the slice."""
    import jax
    import numpy as np
    import ray.train
    from jax.sharding import NamedSharding, PartitionSpec

    from workloads import model

    steps, size, rate = config["steps"], config["batch_size"], config["learning_rate"]
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    replicated = NamedSharding(mesh, PartitionSpec())
    rows = NamedSharding(mesh, PartitionSpec("data"))

    params, start = model.init_params(seed=0), 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            params, start = model.load(Path(directory))
    params = jax.device_put(params, replicated)

    @jax.jit
    def step(params, x, y):
        # x and y are sharded by rows over every device of the slice; XLA sums the gradients across hosts.
        value, grads = jax.value_and_grad(model.loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - rate * g, params, grads), value

    def local(array):
        return np.asarray(array.addressable_data(0))

    # This process's rows of each global batch: an equal share per process, as the data sharding expects.
    share = size // jax.process_count()
    mine = slice(jax.process_index() * share, (jax.process_index() + 1) * share)
    first = None
    compile_s = None
    for current in range(start, steps):
        x, y = model.batch(current, size)
        x = jax.make_array_from_process_local_data(rows, x[mine])
        y = jax.make_array_from_process_local_data(rows, y[mine])
        began = time.perf_counter()
        params, value = step(params, x, y)
        value = float(local(value))
        if compile_s is None:
            compile_s = time.perf_counter() - began  # the first call compiles
        first = value if first is None else first
        done = current + 1
        if done % config["report_every"] == 0 or done == steps:
            metrics = {"step": done, "start": start, "loss": value, "first_loss": first, "compile_s": compile_s,
                       "platform": jax.devices()[0].platform, "devices": jax.device_count(),
                       "processes": jax.process_count()}
            if ray.train.get_context().get_world_rank() == 0:
                with tempfile.TemporaryDirectory() as directory:
                    model.save(Path(directory), jax.tree.map(local, params), done)
                    ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))
            else:
                ray.train.report(metrics)


def make_trainer(spec: Optional[SliceSpec], *, steps: int, batch_size: int = 256, learning_rate: float = 0.05,
                 storage_path: str = DEFAULT_STORAGE, name: str = "tiny-mlp", slices: int = 1,
                 report_every: int = 50, keep: int = 2, gpus: Optional[int] = None, max_failures: int = 2):
    """A JaxTrainer on a TPU slice (`spec`), or with `gpus`, on one GPU node: one worker holding all its GPUs, the
    same training loop, so the two runs of stacks/Pulumi.compare.yaml measure the same program."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.v2.jax import JaxTrainer

    scaling = ScalingConfig(num_workers=1, use_gpu=True, resources_per_worker={"GPU": gpus}) if gpus else ScalingConfig(
        num_workers=spec.hosts * slices,  # one worker per TPU host
        use_tpu=True,
        topology=spec.topology,
        accelerator_type=spec.accelerator_type,  # e.g. TPU-V6E (ray.util.accelerators)
        # Explicit: Ray 2.55 takes 8 chips per v5e/v6e host otherwise (ray/_private/accelerators/tpu.py
        # get_chips_per_host), while GKE's multi-host v5e/v6e slices have 4-chip hosts.
        resources_per_worker={"TPU": spec.chips_per_host},
    )
    return JaxTrainer(
        train_loop,
        train_loop_config={"steps": steps, "batch_size": batch_size, "learning_rate": learning_rate,
                           "report_every": report_every},
        scaling_config=scaling,
        # A lost worker (a preempted host, a deleted pod) restarts the workers from the latest checkpoint.
        run_config=RunConfig(name=name, storage_path=storage_path,
                             checkpoint_config=CheckpointConfig(num_to_keep=keep),
                             failure_config=FailureConfig(max_failures=max_failures)),
    )


def parse_args(argv: Optional[list[str]] = None) -> tuple[SliceSpec, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m workloads.train", description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--steps", type=int, default=500, help="training steps in all (default 500)")
    parser.add_argument("--batch-size", type=int, default=256, help="global batch size (default 256)")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--report-every", type=int, default=50, help="steps between checkpoints (default 50)")
    parser.add_argument("--slices", type=int, default=1, help="slices to train on (default 1)")
    parser.add_argument("--storage-path", default=DEFAULT_STORAGE,
                        help=f"where Ray Train keeps checkpoints (default {DEFAULT_STORAGE}, the stack's bucket)")
    parser.add_argument("--name", default="tiny-mlp", help="run name; the same name resumes (default tiny-mlp)")
    parser.add_argument("--gpus", type=int, help="train on one GPU node with this many GPUs instead of a TPU slice")
    args = parser.parse_args(argv)
    spec = None if args.gpus else from_args(parser, args)
    if min(args.steps, args.batch_size, args.report_every, args.slices, args.gpus or 1) < 1:
        parser.error("--steps, --batch-size, --report-every, --slices and --gpus must be at least 1")
    workers = 1 if spec is None else spec.hosts * args.slices
    if args.batch_size % workers:
        parser.error(f"--batch-size must be a multiple of the {workers} hosts")
    return spec, args


def main(argv: Optional[list[str]] = None) -> int:
    spec, args = parse_args(argv)
    import ray

    ray.init(address=os.environ.get("RAY_ADDRESS", "auto"))
    result = make_trainer(spec, steps=args.steps, batch_size=args.batch_size, learning_rate=args.learning_rate,
                          storage_path=args.storage_path, name=args.name, slices=args.slices,
                          report_every=args.report_every, gpus=args.gpus).fit()
    print(json.dumps({"kind": RESULT_KIND, "metrics": result.metrics,
                      "checkpoint": result.checkpoint.path if result.checkpoint else None}, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
