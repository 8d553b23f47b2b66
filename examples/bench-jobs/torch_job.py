"""A PyTorch job for the comparison's GPU side: Ray Train's `TorchTrainer` on the stack's GPU pool (one worker per
GPU, DistributedDataParallel), reporting through `ray_tpu_gke.bench` only. Its JAX port for the TPU side is
jax_job.py beside it: the same model (a two-layer MLP), the same seeded data, the same evaluation loss, so the
comparison's agreement compares like with like.

    python -m plan.compare compare --context CTX \\
        --entrypoint bench-a100='python examples/bench-jobs/torch_job.py --gpus 8 --steps 300' \\
        --entrypoint bench-tpu='python examples/bench-jobs/jax_job.py --chips 8 --steps 300'

Model FLOPs per step come from PyTorch's own counter (`torch.utils.flop_counter.FlopCounterMode`) around the first
step, times the workers (each counts its share of the batch), on the math attention backend: the counter has formulas
only for the fused attention kernels (torch/utils/flop_counter.py), and the math backend computes attention as matrix
products it counts (docs/compare.md, "Model FLOPs per step"; this MLP has no attention, a transformer does). The image needs torch and Ray Train beside this package
(`pip install torch "ray[train]==2.55.0"` and `pip install --no-deps ray-tpu-gke`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from ray_tpu_gke import bench

FEATURES, HIDDEN, EVAL_ROWS = 16, 64, 8


def batch(step: int, size: int, seed: int):
    """The global batch of a step (NumPy, seeded): the same data as jax_job.py's."""
    import numpy as np

    rng = np.random.default_rng([seed, 1_000_003 + step])
    x = rng.standard_normal((size, FEATURES)).astype(np.float32)
    return x, np.sin(x @ np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32)).astype(np.float32)


def train_loop(config: dict) -> None:
    import ray.train
    import ray.train.torch
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(config["seed"])
    model = ray.train.torch.prepare_model(torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["learning_rate"])
    size, steps = config["batch_size"], config["steps"]
    run = None
    if rank == 0:
        run = bench.start(run=config["run"], side=config["side"], kind="gpu",
                          platform="gpu" if device.type == "cuda" else "cpu", simulated=config["simulate"],
                          devices=world, device_kind=torch.cuda.get_device_name(device) if device.type == "cuda"
                          else "cpu", processes=world, steps=steps, batch_size=size, seed=config["seed"],
                          framework="torch", framework_version=torch.__version__, result_dir=config["result_dir"])
    share = size // world
    flops = None

    def one_step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x)[:, 0], y)
        loss.backward()
        optimizer.step()
        return loss

    for step in range(1, steps + 1):
        x_all, y_all = batch(step - 1, size, config["seed"])
        x = torch.from_numpy(x_all[rank * share:(rank + 1) * share]).to(device)
        y = torch.from_numpy(y_all[rank * share:(rank + 1) * share]).to(device)
        began = time.perf_counter()
        if flops is None:  # count once: every step runs the same operations
            with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
                loss = one_step(x, y)
            flops = counter.get_total_flops() * world
        else:
            loss = one_step(x, y)
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the step's kernels done before its time is taken
        value = float(loss.item())
        if run is not None:
            run.step(step, loss=value, examples=size, step_s=time.perf_counter() - began)
        if step % config["report_every"] == 0 or step == steps:
            with tempfile.TemporaryDirectory() as directory:
                began = time.perf_counter()
                if rank == 0:
                    torch.save(model.state_dict(), Path(directory) / "model.pt")
                ray.train.report({"step": step, "loss": value},
                                 checkpoint=ray.train.Checkpoint.from_directory(directory) if rank == 0 else None)
                if run is not None:
                    run.checkpoint(step, time.perf_counter() - began)
    if run is not None:
        import numpy as np

        x = np.random.default_rng([config["seed"], 7]).standard_normal((EVAL_ROWS, FEATURES)).astype(np.float32)
        y = np.sin(x @ np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32))
        with torch.no_grad():
            predictions = model(torch.from_numpy(x).to(device))[:, 0].cpu().numpy()
        run.finish(metric=float(((predictions - y) ** 2).mean()), metric_name="evalLoss", flops_per_step=flops,
                   flops_source="torch.utils.flop_counter.FlopCounterMode x workers",
                   fingerprint=bench.fingerprint(predictions.tolist(), seed=config["seed"],
                                                 inputs="bench-jobs MLP evaluation batch"))


def main(argv=None) -> int:
    parser = bench.add_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--gpus", type=int, default=1, help="workers, one GPU each")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--storage-path", default="/gcs/ray-train")
    args = parser.parse_args(argv)
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    run = args.run or f"torch-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
    side = args.side or "bench-a100"
    ray.init()
    trainer = TorchTrainer(
        train_loop, train_loop_config={"run": run, "side": side, "seed": args.seed, "steps": args.steps,
                                       "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                                       "report_every": args.report_every, "simulate": args.simulate,
                                       "result_dir": args.result_dir},
        # --simulate: CPU workers standing in for the GPUs (the result says so).
        scaling_config=ScalingConfig(num_workers=args.gpus, use_gpu=not args.simulate),
        run_config=RunConfig(name=run, storage_path=f"{args.storage_path.rstrip('/')}/{side}"))
    trainer.fit()
    ray.shutdown()
    written = Path(args.result_dir or ".") / run / f"{side}.json"
    if args.result_dir and written.exists():  # the worker's document, once more as the driver's last line
        bench.print_result(json.loads(written.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
