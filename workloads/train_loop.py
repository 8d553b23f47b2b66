"""The training loop every Ray Train worker runs (one per TPU host, or one per GPU node): the decoder-only transformer
language model of workloads.lm, data-parallel over every device of the job, its tokens read through Ray Data
(workloads.token_files: its dataset shard, `iter_jax_batches`), reporting through `ray_tpu_gke.bench` like any other
job. At the end rank 0 reports how long its loop waited for batches, from its shard's own statistics, and the step's
time on a batch already on the devices.

Before the first step each worker checks what it runs on: the JAX platform against the one the job asked for
(workloads.backend) and its pod's declared shape ($SLICE_*) against the job's. A mismatch goes to the run's ledger,
whose driver stops the job at once; the worker never trains. Rank 0 then reports each start, step, checkpoint,
restore and restart through a `bench.Run` (which prints the event lines) and the same to the ledger, with the
compile-duration events JAX records (jax.monitoring), the step's model FLOPs from XLA's cost analysis and, at the end,
the evaluation loss and the output fingerprint.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from ray_tpu_gke import bench
from ray_tpu_gke.workload.slice import COUNT_ENV, ENV

from . import backend, lm, token_files

# JAX 0.10.2 jax/_src/dispatch.py: the three duration events of compiling a jitted function (tracing to a jaxpr,
# lowering to MLIR, the backend compile), recorded through jax.monitoring.record_event_duration_secs.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
COMPILATION_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"  # jax 0.10.2 jax/_src/config.py jax_compilation_cache_dir
# Ray 2.55 ray/util/tpu.py get_tpu_coordinator_env_vars: what JaxTrainer sets on each worker of a multislice job.
MEGASCALE_SLICE_ID, MEGASCALE_NUM_SLICES = "MEGASCALE_SLICE_ID", "MEGASCALE_NUM_SLICES"
SLICE_NAME_LABEL = "ray.io/tpu-slice-name"  # Ray 2.55 ray._raylet.RAY_NODE_TPU_SLICE_NAME_KEY
WORKER_ID_LABEL = "ray.io/tpu-worker-id"
SYNTHETIC_STEPS = 3
INPUT_SOURCE = "Ray Data: the training loop's dataset shard, DataIterator.stats()"


class CompileClock:
    """Compile-duration events of this process since the last `take`. One per process: JAX keeps its listeners for
    the life of the process."""

    _instance = None

    def __init__(self):
        import jax.monitoring

        self._pending: list[list] = []
        jax.monitoring.register_event_duration_secs_listener(self._heard)

    @classmethod
    def of_this_process(cls) -> "CompileClock":
        if cls._instance is None:
            cls._instance = cls()
        cls._instance.take()  # what an earlier loop in this process compiled is not this attempt's
        return cls._instance

    def _heard(self, event: str, duration_secs: float, **_metadata) -> None:
        if event in COMPILE_EVENTS:
            self._pending.append([event, float(duration_secs)])

    def take(self) -> list[list]:
        taken, self._pending = self._pending, []
        return taken


def _coordinator_address() -> str:
    import ray

    from .ports import free_port

    return f"{ray.util.get_node_ip_address()}:{free_port()}"


def _join_simulated_processes(rank: int, world: int) -> None:
    """On the CPU stand-in the workers join one JAX program, as they would on the accelerator: the data-parallel step
    then sums gradients across every worker, as on a slice. Ray Train does it itself from 2.56 (it initialises
    jax.distributed for JAX_PLATFORMS=cpu too: ray/train/v2/jax/config.py _setup_jax_distributed_environment, 2.56.0
    and 2.60.0 wheels); 2.55 leaves the CPU alone, so the workers join here."""
    import jax
    from ray.train.collective import broadcast_from_rank_zero

    if jax.distributed.is_initialized():
        return
    coordinator = broadcast_from_rank_zero(_coordinator_address() if rank == 0 else None)
    jax.distributed.initialize(coordinator, num_processes=world, process_id=rank, initialization_timeout=120)


def _synthetic_step_s(compiled_step, params, opt_state, rows, batch) -> float | None:
    """The median time of SYNTHETIC_STEPS steps on one batch made in memory and already on the devices: the step
    without its input pipeline. The results are dropped: the trained state stays what the job's data made it."""
    import jax

    if compiled_step is None:  # no step ran in this attempt (it resumed at the last step)
        return None
    share = batch[0].shape[0] // jax.process_count()
    mine = slice(jax.process_index() * share, (jax.process_index() + 1) * share)
    x, y = (jax.make_array_from_process_local_data(rows, part[mine]) for part in batch)
    times = []
    for _ in range(SYNTHETIC_STEPS):
        began = time.perf_counter()
        jax.block_until_ready(compiled_step(params, opt_state, x, y))
        times.append(time.perf_counter() - began)
    return sorted(times)[len(times) // 2]


def shape_problems(shape: dict | None, environ=os.environ) -> list[str]:
    """The job's shape against the one this worker's pod declares ($SLICE_*), each difference named with both."""
    declared = {name: environ.get(variable) for name, variable in {**ENV, "slices": COUNT_ENV}.items()}
    if shape is None:  # a GPU job: its pods belong to a GPU pool, which declares no slice
        if not declared["generation"]:
            return []
        generation = declared["generation"]
        return [f"the job asked for GPUs but this pod declares a TPU slice (${ENV['generation']}={generation})"]
    return [
        f"the job's {name.replace('_', ' ')} is {shape[name]} but this pod declares ${variable}={declared[name]}"
        for name, variable in {**ENV, "slices": COUNT_ENV}.items()
        if declared[name] is not None and str(shape[name]) != declared[name].strip()
    ]


def _worker_info(rank: int, found: dict) -> dict:
    import ray

    labels = ray.get_runtime_context().get_node_labels()
    return {
        "rank": rank,
        "platform": found["platform"],
        "deviceKind": found["deviceKind"],
        "localDevices": found["localDevices"],
        "node": ray.get_runtime_context().get_node_id(),
        "sliceName": labels.get(SLICE_NAME_LABEL),
        "tpuWorkerId": labels.get(WORKER_ID_LABEL),
        "megascaleSliceId": os.environ.get(MEGASCALE_SLICE_ID),
        "megascaleNumSlices": os.environ.get(MEGASCALE_NUM_SLICES),
        "megascaleCoordinator": os.environ.get("MEGASCALE_COORDINATOR_ADDRESS"),
        "compilationCache": os.environ.get(COMPILATION_CACHE_ENV) or None,
    }


def train_loop(config: dict) -> None:
    entered_at = time.time()
    import ray
    import ray.train
    from ray.train.collective import barrier, broadcast_from_rank_zero

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    ledger = config["ledger"]
    if config["simulate"] and world > 1:
        _join_simulated_processes(rank, world)
    clock = CompileClock.of_this_process() if rank == 0 else None

    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    found = backend.probe()
    refusal = backend.check(config["kind"], config["asked"], config["platform"], found, rank)
    if refusal is None:
        problems = shape_problems(config["shape"])
        if problems:
            refusal = (2, f"workloads.train: rank {rank}: {'; '.join(problems)}")
    elif refusal is not None:
        refusal = (3, refusal)
    if refusal is not None:
        ray.get(ledger.refuse.remote(*refusal))
        raise RuntimeError(refusal[1])

    steps, size, seed = config["steps"], config["batch_size"], config["seed"]
    model_config = lm.LmConfig(**config["model"])
    # Auto axes: XLA's partitioner places the gather of the embedding and the gradient sums (jax 0.10's make_mesh
    # defaults to explicit axes, under which a sharded gather needs its output sharding spelt out).
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    replicated = NamedSharding(mesh, PartitionSpec())
    rows = NamedSharding(mesh, PartitionSpec("data"))

    params, opt_state, static = lm.init_state(seed, model_config)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    restore_s = None
    if checkpoint is not None:
        began = time.perf_counter()
        with checkpoint.as_directory() as directory:
            params, opt_state, static, start = lm.load(Path(directory), seed, model_config)
        restore_s = time.perf_counter() - began
    params, opt_state = jax.device_put((params, opt_state), replicated)

    attempt = None
    if rank == 0:
        attempt = ray.get(ledger.begin.remote(start, entered_at))
    attempt = broadcast_from_rank_zero(attempt)
    ledger.worker.remote(attempt["attempt"], rank, _worker_info(rank, found))
    report = None
    if rank == 0:
        # The ledger is the record across attempts (workloads.result.build writes the document from it); the run's
        # recorder prints the event lines every collector reads with bench.read.
        report = bench.Run(
            run=config.get("run") or "run",
            side=config.get("side") or config["kind"],
            kind=config["kind"],
            platform=found["platform"],
            devices=jax.device_count(),
            device_kind=found["deviceKind"],
            processes=jax.process_count(),
            batch_size=size,
            seed=seed,
            steps=steps,
            framework="jax",
            framework_version=jax.__version__,
            attempt=attempt["attempt"],
            from_step=start,
        )
        if restore_s is not None:
            ledger.restore.remote(restore_s)
            report.restore(start, restore_s)
        report.begin()
        ledger.compiled_outside_steps.remote(attempt["attempt"], clock.take())

    step = jax.jit(lm.make_step(model_config, static))
    # Token rows (seq_len + 1) to inputs and next-token targets, in the step's data sharding.
    split = jax.jit(lambda tokens: (tokens[:, :-1], tokens[:, 1:]), out_shardings=(rows, rows))
    compiled_step, flops = None, None

    def local(array):
        return np.asarray(array.addressable_data(0))

    # This process's rows of each global batch (an equal share per process, as the data sharding expects), from the
    # token files through Ray Data (workloads.token_files): one batch per step, on this process's devices.
    share = size // jax.process_count()
    batches = iter(ray.train.get_dataset_shard(token_files.DATASET).iter_jax_batches(batch_size=share))
    for _ in range(start):  # the steps before the checkpoint this attempt resumes from
        next(batches)
    first = value = None
    compile_s = paused_s = 0.0
    tokens_per_step = size * model_config.seq_len
    for current in range(start, steps):
        began = time.perf_counter()  # the step's time includes waiting for its batch
        x, y = split(next(batches)["data"])
        if compiled_step is None:  # the first step of an attempt compiles, inside its measured time
            compiled_step = step.lower(params, opt_state, x, y).compile()
            # XLA's cost analysis is of the partitioned program one device runs: the step's FLOPs are N times it.
            per_device = lm.flops_of(compiled_step)
            flops = None if per_device is None else per_device * jax.device_count()
            if world > 1:
                # Every process enters the first step together. The step's gradient sum sets up JAX's CPU collectives
                # (Gloo) when it first runs, and XLA gives the other processes 30 s to join that set-up (Gloo context
                # initialization: GetKeyValue DEADLINE_EXCEEDED): on a loaded machine one process's first batch or
                # compile has outlasted it, a restart in a run that lost nothing. On a TPU or GPU: one round trip.
                barrier()
        params, opt_state, loss = compiled_step(params, opt_state, x, y)
        jax.block_until_ready((params, opt_state, loss))
        step_s = time.perf_counter() - began
        value = float(local(loss))
        first = value if first is None else first
        done = current + 1
        if rank == 0:
            now = time.time()
            compiled = clock.take()
            compile_s += sum(seconds for _, seconds in compiled)
            ledger.step.remote(attempt["attempt"], done, step_s, value, now, compiled, tokens_per_step)
            report.step(done, loss=value, examples=size, tokens=tokens_per_step, step_s=step_s, compiled=bool(compiled))
            if attempt["attempt"] > 0 and current == start:
                restart = {
                    "fromStep": start,
                    "failureSeenAt": attempt["failureSeenAt"],
                    "resumedAt": now,
                    "stepsRedone": max(0, attempt["maxStep"] - start),
                }
                ledger.restart.remote(restart)
                report.restart(
                    from_step=start,
                    failure_seen_at=attempt["failureSeenAt"],
                    resumed_at=now,
                    steps_redone=restart["stepsRedone"],
                )
        if done % config["report_every"] == 0 or done == steps:
            metrics = {
                "step": done,
                "start": start,
                "loss": value,
                "first_loss": first,
                "compile_s": compile_s,
                "platform": found["platform"],
                "devices": jax.device_count(),
                "processes": jax.process_count(),
                "attempt": attempt["attempt"],
            }
            if rank == 0:
                began = time.perf_counter()
                with tempfile.TemporaryDirectory() as directory:
                    lm.save(
                        Path(directory), jax.tree.map(local, params), jax.tree.map(local, opt_state), done, model_config
                    )
                    ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))
                save_s = time.perf_counter() - began
                ledger.checkpoint.remote(save_s)
                report.checkpoint(done, save_s)
            else:
                ray.train.report(metrics)
        if config["throttle_s"]:
            paused = time.perf_counter()
            time.sleep(config["throttle_s"])  # outside the step's measured time: a local run lasts long enough
            paused_s += time.perf_counter() - paused
    for _ in batches:  # none left: the iteration ends, and Ray Data records its total time
        pass
    input_wait = token_files.waiting(
        token_files.iterator_times(ray.train.get_dataset_shard(token_files.DATASET).stats()), paused_s
    )
    synthetic_s = _synthetic_step_s(compiled_step, params, opt_state, rows, lm.batch(0, size, seed, model_config))
    if rank == 0:
        eval_loss, values = lm.evaluate(jax.tree.map(local, params), static, seed, model_config)
        ray.get(
            ledger.finish.remote(
                {
                    "fingerprint": bench.fingerprint(
                        values, seed=seed, inputs=f"workloads.lm held-out batch of seed {seed}"
                    ),
                    "evalLoss": eval_loss,
                    "flopsPerStep": flops,
                    "flopsSource": "XLA cost analysis of the compiled step, per device x devices" if flops else None,
                    "model": {**model_config.describe(), "tokensPerStep": tokens_per_step},
                    "platform": found["platform"],
                    "deviceKind": found["deviceKind"],
                    "devices": jax.device_count(),
                    "processes": jax.process_count(),
                    "finalStep": max(start, steps),
                    "finalLoss": value,
                    "jaxVersion": jax.__version__,
                    "finishedAt": time.time(),
                    "input": {**input_wait, "syntheticStepTimeS": synthetic_s, "source": INPUT_SOURCE},
                }
            )
        )
