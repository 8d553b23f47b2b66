"""The JAX port of torch_job.py for the comparison's TPU side: Ray Train's `JaxTrainer` on the stack's TPU slice (one
worker per host, one JAX program over every chip), the same two-layer MLP on the same seeded data, reporting through
`ray_tpu_gke.bench` only.

    python examples/bench-jobs/jax_job.py --chips 8 --topology 2x4 --steps 300     # a single-host v6e 2x4

Model FLOPs per step come from XLA's cost analysis of the compiled step (`jax.jit(step).lower(...).compile()
.cost_analysis()`: the partitioned program of one device, so times the devices).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ray_tpu_gke import bench

FEATURES, HIDDEN, EVAL_ROWS = 16, 64, 8


def batch(step: int, size: int, seed: int):
    """The global batch of a step (NumPy, seeded): the same data as torch_job.py's."""
    import numpy as np

    rng = np.random.default_rng([seed, 1_000_003 + step])
    x = rng.standard_normal((size, FEATURES)).astype(np.float32)
    return x, np.sin(x @ np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32)).astype(np.float32)


def train_loop(config: dict) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import ray.train
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    rank = ray.train.get_context().get_world_rank()
    rng = np.random.default_rng(config["seed"])
    params = {"w1": (rng.standard_normal((FEATURES, HIDDEN)) / np.sqrt(FEATURES)).astype(np.float32),
              "b1": np.zeros(HIDDEN, np.float32),
              "w2": (rng.standard_normal((HIDDEN, 1)) / np.sqrt(HIDDEN)).astype(np.float32),
              "b2": np.zeros(1, np.float32)}
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))
    rows = NamedSharding(mesh, PartitionSpec("data"))
    params = jax.device_put(params, NamedSharding(mesh, PartitionSpec()))
    rate, size, steps = config["learning_rate"], config["batch_size"], config["steps"]

    def forward(p, x):
        return (jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])[:, 0]

    @jax.jit
    def step(p, x, y):
        loss, grads = jax.value_and_grad(lambda p: ((forward(p, x) - y) ** 2).mean())(p)
        return jax.tree.map(lambda a, g: a - rate * g, p, grads), loss

    run = None
    if rank == 0:
        device = jax.devices()[0]
        run = bench.start(run=config["run"], side=config["side"], kind="tpu", platform=device.platform,
                          simulated=config["simulate"], devices=jax.device_count(), device_kind=device.device_kind,
                          processes=jax.process_count(), steps=steps, batch_size=size, seed=config["seed"],
                          framework="jax", framework_version=jax.__version__, result_dir=config["result_dir"])
    share = size // jax.process_count()
    mine = slice(jax.process_index() * share, (jax.process_index() + 1) * share)
    compiled = flops = None
    for current in range(1, steps + 1):
        x_all, y_all = batch(current - 1, size, config["seed"])
        began = time.perf_counter()
        x = jax.make_array_from_process_local_data(rows, x_all[mine])
        y = jax.make_array_from_process_local_data(rows, y_all[mine])
        if compiled is None:
            compiled = step.lower(params, x, y).compile()
            analysis = compiled.cost_analysis()
            analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis  # older JAX: a list
            flops = (analysis or {}).get("flops", 0.0) * jax.device_count() or None
        params, loss = compiled(params, x, y)
        jax.block_until_ready(loss)
        if run is not None:
            run.step(current, loss=float(np.asarray(loss.addressable_data(0))), examples=size,
                     step_s=time.perf_counter() - began)
        if current % config["report_every"] == 0 or current == steps:
            ray.train.report({"step": current})
    if run is not None:
        host = jax.tree.map(lambda a: np.asarray(a.addressable_data(0)), params)
        x = np.random.default_rng([config["seed"], 7]).standard_normal((EVAL_ROWS, FEATURES)).astype(np.float32)
        y = np.sin(x @ np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32))
        predictions = (np.tanh(x @ host["w1"] + host["b1"]) @ host["w2"] + host["b2"])[:, 0]
        run.finish(metric=float(((predictions - y) ** 2).mean()), metric_name="evalLoss", flops_per_step=flops,
                   flops_source="XLA cost analysis of the compiled step, per device x devices",
                   fingerprint=bench.fingerprint(predictions.tolist(), seed=config["seed"],
                                                 inputs="bench-jobs MLP evaluation batch"))


def main(argv=None) -> int:
    parser = bench.add_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--chips", type=int, default=8, help="TPU chips per host")
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--topology", default="2x4")
    parser.add_argument("--accelerator-type", default="TPU-V6E")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    args = parser.parse_args(argv)
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.v2.jax import JaxTrainer

    run = args.run or f"jax-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
    side = args.side or "bench-tpu"
    ray.init()
    trainer = JaxTrainer(
        train_loop, train_loop_config={"run": run, "side": side, "seed": args.seed, "steps": args.steps,
                                       "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                                       "report_every": args.report_every, "simulate": args.simulate,
                                       "result_dir": args.result_dir},
        scaling_config=ScalingConfig(num_workers=args.hosts, use_tpu=True, topology=args.topology,
                                     accelerator_type=args.accelerator_type,
                                     resources_per_worker={"TPU": args.chips}),
        run_config=RunConfig(name=run, storage_path="/gcs/ray-train",
                             worker_runtime_env={"env_vars": {"JAX_PLATFORMS": "cpu"}} if args.simulate else None))
    trainer.fit()
    ray.shutdown()
    written = Path(args.result_dir or ".") / run / f"{side}.json"
    if args.result_dir and written.exists():  # the worker's document, once more as the driver's last line
        bench.print_result(json.loads(written.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
