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
products it counts (docs/compare.md, "Model FLOPs per step"; this MLP has no attention, a transformer does). The
image needs torch and Ray Train beside this package
(`pip install torch "ray[train]==2.60.0"` and `pip install --no-deps ray-tpu-gke`).

The same job runs on a TPU slice with `--device jax`: PyTorch on JAX through torchax (workloads/Dockerfile.torch-tpu,
docs/compare.md "PyTorch on the TPU side"), one Ray Train worker per TPU host holding all of its chips, the model, the
loss, the optimiser, the data and the loop around the step unchanged. What changes: the device; how the batch spreads
over the chips (DistributedDataParallel's one process per GPU becomes one program over every chip of the host, the
parameters replicated and the batch split along a JAX device mesh, SPMD, as jax_job.py does it: `place_on_mesh`); and
where the gradient comes from (JAX's, for the loss and its gradient compiled once: `torchax_step`). Its model FLOPs
per step come from XLA's cost analysis of that compiled program, its compile time from JAX's own events.

    python -m plan.compare compare --local --inject-failure 0 \\
        --entrypoint bench-tpu='python examples/bench-jobs/torch_job.py --device jax --chips 8 --storage-path /tmp/c' \\
        --entrypoint bench-a100='python examples/bench-jobs/torch_job.py --gpus 1 --storage-path /tmp/c'
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
    torch.manual_seed(config["seed"])
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    on_jax = config.get("device") == "jax"
    if on_jax:  # the TPU side: the same model, on every chip of the host (place_on_mesh)
        model, place = place_on_mesh(model)
        device = torch.device("jax")
        devices, device_kind, platform = jax_devices()
    else:
        device = ray.train.torch.get_device()
        model = ray.train.torch.prepare_model(model)
        place = None
        devices, platform = world, "gpu" if device.type == "cuda" else "cpu"
        device_kind = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    optimizer = torch.optim.SGD(model.parameters(), lr=config["learning_rate"])
    size, steps = config["batch_size"], config["steps"]
    run = None
    if rank == 0:
        run = bench.start(run=config["run"], side=config["side"], kind="tpu" if on_jax else "gpu", platform=platform,
                          simulated=config["simulate"], devices=devices, device_kind=device_kind, processes=world,
                          steps=steps, batch_size=size, seed=config["seed"], framework="torch",
                          framework_version=torch.__version__, result_dir=config["result_dir"])
    share = size // world
    flops = None
    compiles = JaxCompiles() if on_jax else None  # eager torchax compiles an XLA program per new operation and shape

    def one_step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x)[:, 0], y)
        loss.backward()
        optimizer.step()
        return loss

    if on_jax:
        one_step = torchax_step(model, optimizer)

    for step in range(1, steps + 1):
        x_all, y_all = batch(step - 1, size, config["seed"])
        x = torch.from_numpy(x_all[rank * share:(rank + 1) * share]).to(device)
        y = torch.from_numpy(y_all[rank * share:(rank + 1) * share]).to(device)
        if place is not None:  # rows split over the chips
            x, y = place(x, rows=True), place(y, rows=True)
        began = time.perf_counter()
        programs = compiles.programs if compiles else 0
        if flops is None and not on_jax:  # count once: every step runs the same operations
            with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
                loss = one_step(x, y)
            flops = counter.get_total_flops() * world
        else:
            loss = one_step(x, y)
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the step's kernels done before its time is taken
        value = float(loss.item())
        if run is not None:
            run.step(step, loss=value, examples=size, step_s=time.perf_counter() - began,
                     compiled=compiles.programs > programs if compiles else None)
        if step % config["report_every"] == 0 or step == steps:
            with tempfile.TemporaryDirectory() as directory:
                began = time.perf_counter()
                if rank == 0:  # on the host's memory: a file any device can load
                    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()},
                               Path(directory) / "model.pt")
                ray.train.report({"step": step, "loss": value},
                                 checkpoint=ray.train.Checkpoint.from_directory(directory) if rank == 0 else None)
                if run is not None:
                    run.checkpoint(step, time.perf_counter() - began)
    if run is not None and compiles:  # what the training loop compiled, not the evaluation below
        run.compiled(compiles.seconds, events=compiles.programs)
    if run is not None:
        import numpy as np

        x = np.random.default_rng([config["seed"], 7]).standard_normal((EVAL_ROWS, FEATURES)).astype(np.float32)
        y = np.sin(x @ np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32))
        with torch.no_grad():
            predictions = model(torch.from_numpy(x).to(device))[:, 0].cpu().numpy()
        run.finish(metric=float(((predictions - y) ** 2).mean()), metric_name="evalLoss",
                   flops_per_step=one_step.flops if on_jax else flops,
                   flops_source="XLA cost analysis of the compiled gradient step, per device x devices" if on_jax
                   else "torch.utils.flop_counter.FlopCounterMode x workers",
                   fingerprint=bench.fingerprint(predictions.tolist(), seed=config["seed"],
                                                 inputs="bench-jobs MLP evaluation batch"))


def place_on_mesh(model):
    """torchax: PyTorch operations on JAX arrays (torch tensors on the device "jax"), so on whatever JAX runs on: a
    TPU host's chips, or the CPU of a rehearsal. Returns the model with its parameters replicated on every device of a
    one-axis mesh, and a function that puts a tensor there, split along its rows or replicated, so that every
    operation on a batch runs as one SPMD program over all the devices (JAX's sharding propagation)."""
    import jax
    import torchax
    import torchax.interop
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    torchax.enable_globally()  # after the model's initialisation on the CPU: the same weights as the GPU side's
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))  # as jax_job.py's

    def place(tensor, rows=False):
        where = NamedSharding(mesh, PartitionSpec("data") if rows else PartitionSpec())
        array = torchax.interop.jax_view(tensor.to("jax"))
        return torchax.interop.torch_view(jax.device_put(array, where))

    model.load_state_dict({k: place(v) for k, v in model.state_dict().items()}, assign=True)
    return model, place


def torchax_step(model, optimizer):
    """The training step on the TPU side. torchax 0.0.13 runs some PyTorch functions as JAX functions outside
    PyTorch's autograd (torch.nn.functional.linear among them: torchax/ops/jtorch.py), so `loss.backward()` would
    leave a Linear layer's parameters without gradients. The same loss's gradient comes from JAX instead
    (jax.value_and_grad through torch.func.functional_call, compiled once), and the optimiser steps with it as
    before. `step.flops`: the model FLOPs of a step, from XLA's cost analysis of the compiled program (one
    device's share, times the devices), once it has run."""
    import jax
    import torch
    import torchax.interop

    def loss_of(parameters, x, y):
        return torch.nn.functional.mse_loss(torch.func.functional_call(model, parameters, (x,))[:, 0], y)

    gradient = jax.jit(jax.value_and_grad(torchax.interop.jax_view(loss_of)))
    compiled = None

    def step(x, y):
        nonlocal compiled
        arguments = torchax.interop.jax_view((dict(model.named_parameters()), x, y))
        if compiled is None:
            compiled = gradient.lower(*arguments).compile()
            analysis = compiled.cost_analysis()
            analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis  # older JAX: a list
            step.flops = (analysis or {}).get("flops", 0.0) * jax.device_count() or None
        loss, gradients = torchax.interop.torch_view(compiled(*arguments))
        optimizer.zero_grad()
        for name, parameter in model.named_parameters():
            parameter.grad = gradients[name]
        optimizer.step()
        return loss

    step.flops = None
    return step


class JaxCompiles:
    """What JAX compiled since it was made, heard through jax.monitoring: torchax runs every operation as JAX, so
    JAX's compile events are the port's compile time, and a step that compiled is one that met a new shape."""

    # JAX 0.10.2 jax/_src/dispatch.py: a jitted function's tracing, lowering and backend compile, each recorded with
    # jax.monitoring.record_event_duration_secs; one backend compile per XLA program.
    EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration")

    def __init__(self):
        import jax.monitoring

        self.seconds, self.programs = 0.0, 0
        jax.monitoring.register_event_duration_secs_listener(self._heard)

    def _heard(self, event: str, duration_secs: float, **_metadata) -> None:
        if event in self.EVENTS:
            self.seconds += float(duration_secs)
            self.programs += event == self.EVENTS[-1]


def jax_devices() -> tuple[int, str, str]:
    """How many devices the job runs on, their kind and platform, as JAX sees them (torchax runs on JAX)."""
    import jax

    first = jax.devices()[0]
    return jax.device_count(), first.device_kind, first.platform


def scaling(args, ScalingConfig):
    """The workers: one per GPU (--simulate: CPU workers standing in for the GPUs; the result says so), or one worker
    holding every chip of a TPU host: one host, since the mesh spans the chips one process sees (a multi-host slice
    would join its hosts' JAX processes with jax.distributed)."""
    # as jax_job.py asks for its host: Ray Train takes TPU resources with use_tpu only (Ray 2.55
    # ray/train/v2/api/config.py ScalingConfig)
    if args.device == "jax":
        return ScalingConfig(num_workers=1, use_tpu=True, topology=args.topology,
                             accelerator_type=args.accelerator_type, resources_per_worker={"TPU": args.chips})
    return ScalingConfig(num_workers=args.gpus, use_gpu=not args.simulate)


def simulated_chips(args):
    """--simulate on the TPU side: JAX on the CPU with one device per chip (XLA's host-platform device count), so the
    rehearsal runs the same mesh; a TPU host's environment is left to Ray and the TPU runtime."""
    if args.device != "jax" or not args.simulate:
        return None
    return {"env_vars": {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"--xla_force_host_platform_device_count={args.chips}"}}


def main(argv=None) -> int:
    parser = bench.add_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--device", choices=("cuda", "jax"), default="cuda",
                        help="cuda: the GPUs, one worker each; jax: a TPU slice's chips through torchax")
    parser.add_argument("--gpus", type=int, default=1, help="workers, one GPU each (--device cuda)")
    parser.add_argument("--chips", type=int, default=8, help="TPU chips per host (--device jax)")
    parser.add_argument("--topology", default="2x4", help="the TPU slice's topology (--device jax): one host's")
    parser.add_argument("--accelerator-type", default="TPU-V6E", help="Ray's TPU accelerator type (--device jax)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--storage-path", default="/gcs/ray-train")
    args = parser.parse_args(argv)
    import ray
    from ray.train import RunConfig, ScalingConfig

    if args.device == "jax":
        # torchax runs PyTorch's operations as JAX's, so the TPU side is a JAX worker: Ray's TorchTrainer on TPU
        # workers binds the native TorchTPU backend (Ray 2.60 ray/air/_internal/device_manager/tpu.py needs
        # torch_tpu), which torchax is not.
        from ray.train.v2.jax import JaxTrainer as Trainer
    else:
        from ray.train.torch import TorchTrainer as Trainer

    run = args.run or f"torch-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
    side = args.side or ("bench-tpu" if args.device == "jax" else "bench-a100")
    ray.init()
    trainer = Trainer(
        train_loop, train_loop_config={"run": run, "side": side, "seed": args.seed, "steps": args.steps,
                                       "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                                       "report_every": args.report_every, "simulate": args.simulate,
                                       "result_dir": args.result_dir, "device": args.device},
        scaling_config=scaling(args, ScalingConfig),
        run_config=RunConfig(name=run, storage_path=f"{args.storage_path.rstrip('/')}/{side}",
                             worker_runtime_env=simulated_chips(args)))
    trainer.fit()
    ray.shutdown()
    written = Path(args.result_dir or ".") / run / f"{side}.json"
    if args.result_dir and written.exists():  # the worker's document, once more as the driver's last line
        bench.print_result(json.loads(written.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
