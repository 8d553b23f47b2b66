"""The training workload: Ray Train's `JaxTrainer` on TPU slices or on one GPU node (its command line:
ray_tpu_gke.workload.train_args).

    python -m workloads.train --generation v6e --topology 4x4 --hosts 4 --chips-per-host 4 --steps 500
    python -m workloads.train --slices 2 --steps 500          # multislice: the shape from the pod's $SLICE_*
    python -m workloads.train --gpus 8 --steps 500            # the same program on one 8-GPU node (stacks/compare)
    python -m workloads.train --gpus 1 --simulate --steps 50  # the CPU standing in for the GPU, on purpose
    python -m workloads.train --gpus 8 --preset gpt-100m       # the ~110M-parameter model (default: tiny)

One Ray Train worker per TPU host (`ScalingConfig(use_tpu=True, topology=..., accelerator_type=...)`), which Ray
(2.55 and later) places on whole slices with its slice placement group and joins into one JAX program (`jax.distributed
.initialize` in ray/train/v2/jax/config.py); with `--slices N` it reserves N slices and sets MEGASCALE_* per slice.
Before the first step every worker checks that JAX runs on the accelerator asked for (workloads.backend); when it
does not, the job stops at once, exit status 3, with one line naming the missing backend. Checkpoints go under
--storage-path (default `/gcs/ray-train`, the bucket the stack mounts at /gcs in every Ray pod) in a directory per
run (--run); the same --run resumes from its latest checkpoint. Rank 0 prints event lines while it runs; the driver
prints the result document last and writes it to `<result-dir>/<run>/<side>.json` (workloads.result; the schema is
in docs/workloads.md).

Exit status: 0 trained; 1 training failed (the result document still comes last, with "error"); 2 bad arguments, or
arguments that contradict the worker group's shape; 3 the wrong JAX platform.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import sys
import threading
import time
from typing import Optional

from ray_tpu_gke import bench
from ray_tpu_gke.workload.slice import ENV, SliceSpec
from ray_tpu_gke.workload.train_args import DATA_FOLDER, DEFAULT_NAME, DEFAULT_STORAGE, parse_args

from . import lm, token_files

EXIT_TRAINING_FAILED, EXIT_WRONG_PLATFORM = 1, 3


PROCESS_START = bench.process_start_time()


def make_trainer(
    spec: Optional[SliceSpec],
    *,
    steps: int,
    batch_size: Optional[int] = None,
    model: Optional[lm.LmConfig] = None,
    storage_path: str = DEFAULT_STORAGE,
    name: str = DEFAULT_NAME,
    side: Optional[str] = None,
    slices: int = 1,
    report_every: int = 50,
    keep: int = 2,
    gpus: Optional[int] = None,
    max_failures: int = 2,
    seed: int = 0,
    simulate: bool = False,
    throttle_s: float = 0.0,
    data_path: Optional[str] = None,
    ledger=None,
):
    """A JaxTrainer on `slices` TPU slices of `spec`, or with `gpus`, on one GPU node: one worker holding all its
    GPUs, the same training loop, so the two sides of stacks/Pulumi.compare.yaml measure the same program. `name` is
    Ray Train's run name (checkpoints under storage_path/name). `simulate`: the CPU stands in for the accelerator
    (JAX_PLATFORMS=cpu, one CPU device per chip or GPU). `model`: the language model's sizes (default the tiny
    preset); `batch_size` sequences per global batch (default the model's). `data_path`: where the token files are
    written, once per corpus, and read from through Ray Data (default <storage_path>/tokens: workloads.token_files).
    Without `ledger`, one is started here."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.v2.jax import JaxTrainer

    from . import backend
    from .failure_clock import FailureClock
    from .ledger import start_ledger
    from .train_loop import train_loop

    ledger = ledger or start_ledger()
    model = model or lm.config_for()
    batch_size = batch_size or model.batch_size
    kind = "gpu" if gpus else "tpu"
    if gpus:
        scaling = ScalingConfig(num_workers=1, use_gpu=True, resources_per_worker={"GPU": gpus})
    else:
        scaling = ScalingConfig(
            num_workers=spec.hosts * slices,  # one worker per TPU host; Ray derives the slices from the count
            use_tpu=True,
            topology=spec.topology,
            accelerator_type=spec.accelerator_type,  # e.g. TPU-V6E (ray.util.accelerators)
            # Explicit: Ray 2.55 takes 8 chips per v5e/v6e host otherwise (ray/_private/accelerators/tpu.py
            # get_chips_per_host; 2.60 takes 4 on multi-host topologies), while GKE's multi-host v5e/v6e slices have
            # 4-chip hosts, and a stack may pin 2.55.
            resources_per_worker={"TPU": spec.chips_per_host},
        )
    worker_env = {}
    if simulate:
        # Set, JAX_PLATFORMS is left alone by Ray Train (ray/train/v2/jax/config.py); the host-platform device count
        # (XLA flag --xla_force_host_platform_device_count) gives one CPU device per chip or GPU.
        worker_env = {
            "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={gpus or spec.chips_per_host}",
        }
    shape = None if gpus else {**{k: getattr(spec, k) for k in ENV}, "slices": slices}
    asked = (
        f"--gpus {gpus}"
        if gpus
        else f"{slices if slices > 1 else 'a'} {spec.generation} {spec.topology} slice{'s' if slices > 1 else ''}"
    )
    processes = 1 if gpus else spec.hosts * slices
    data_path = data_path or f"{storage_path.rstrip('/')}/{DATA_FOLDER}"
    folder = token_files.corpus(
        data_path, steps=steps, seed=seed, batch_size=batch_size, processes=processes, model=model
    )
    paths = token_files.write(folder, steps=steps, batch_size=batch_size, processes=processes, seed=seed, model=model)
    return JaxTrainer(
        train_loop,
        train_loop_config={
            "steps": steps,
            "batch_size": batch_size,
            "model": dataclasses.asdict(model),
            "run": name,
            "side": side or name,
            "report_every": report_every,
            "seed": seed,
            "simulate": simulate,
            "kind": kind,
            "platform": backend.expected_platform(kind, simulate),
            "asked": asked,
            "shape": shape,
            "throttle_s": throttle_s,
            "ledger": ledger,
        },
        scaling_config=scaling,
        datasets={token_files.DATASET: token_files.dataset(paths)},
        dataset_config=token_files.data_config(),
        # A lost worker (a preempted host, a deleted pod) restarts the workers, on whole slices, from the latest
        # checkpoint.
        run_config=RunConfig(
            name=name,
            storage_path=storage_path,
            checkpoint_config=CheckpointConfig(num_to_keep=keep),
            failure_config=failure_config(FailureConfig, max_failures),
            callbacks=[FailureClock(ledger)],
            worker_runtime_env={"env_vars": worker_env} if worker_env else None,
        ),
    )


def failure_config(config_class, max_failures: int):
    """FailureConfig with `max_failures` retries for worker failures, and, where the installed Ray has it, unlimited
    retries for preemptions apart from them: `max_preemption_failures` came with Ray Train's preemption handling
    (ray-project/ray pull request 64360, Ray 2.58; docs.ray.io ray.train.PreemptionError, default -1 = unlimited).
    Ray 2.55's FailureConfig has no such field, so there a preemption counts as one of `max_failures`."""
    fields = {f.name for f in dataclasses.fields(config_class)}
    extra = {"max_preemption_failures": -1} if "max_preemption_failures" in fields else {}
    return config_class(max_failures=max_failures, **extra)


def _watch(ledger, stop: threading.Event) -> None:
    """The driver's gate: a worker that found the wrong platform (or shape) stops the whole job at once, before Ray
    Train could retry it on the same wrong platform."""
    import ray

    while not stop.wait(0.2):
        try:
            refusal = ray.get(ledger.refusal.remote(), timeout=30)
        except Exception:  # the ledger is gone: the run is ending
            return
        if refusal:
            print(refusal["line"], file=sys.stderr, flush=True)
            os._exit(refusal["status"])


def main(argv: Optional[list[str]] = None) -> int:
    spec, args = parse_args(argv)
    import ray

    # Ray Train imported before ray.init starts Ray's background threads: an import racing one of them can find
    # ray.autoscaler half-initialised (seen as "cannot import name 'DictCount' ... circular import").
    import ray.train.v2.jax

    from . import result
    from .ledger import start_ledger

    try:
        ray.init(address=os.environ.get("RAY_ADDRESS", "auto"))
    except ConnectionError as error:  # Ray 2.55 services.py: "Could not find any running Ray instance"
        print(
            f"workloads.train runs on a Ray cluster: as a RayJob's entrypoint, with RAY_ADDRESS naming one, or on "
            f"a local one of workloads.local_cluster (as make compare starts); Ray: {str(error).splitlines()[0]}",
            file=sys.stderr,
        )
        return 2
    ledger = start_ledger()
    trainer = make_trainer(
        spec,
        steps=args.steps,
        batch_size=args.batch_size,
        model=args.model,
        storage_path=args.storage_path,
        name=args.run,
        side=args.side,
        slices=args.slices,
        report_every=args.report_every,
        gpus=args.gpus,
        max_failures=args.max_failures,
        seed=args.seed,
        simulate=args.simulate,
        throttle_s=args.throttle_s,
        data_path=args.data_path,
        ledger=ledger,
    )
    stop = threading.Event()
    threading.Thread(target=_watch, args=(ledger, stop), daemon=True).start()
    fit_called, error = time.time(), None
    try:
        trainer.fit()
    except Exception as failure:  # Ray Train's TrainingFailedError after the retries, or a controller error
        error = f"{type(failure).__name__}: {str(failure).splitlines()[0] if str(failure) else ''}"[:2000]
    stop.set()
    record = ray.get(ledger.record.remote())
    if record["refusal"]:  # refused just as fit() returned, before the watcher saw it
        print(record["refusal"]["line"], file=sys.stderr, flush=True)
        return record["refusal"]["status"]
    try:  # the installed JAX's version, without importing JAX, which this driver never runs
        jax_version = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        jax_version = None
    doc = result.build(
        record,
        run=args.run,
        side=args.side,
        kind="gpu" if args.gpus else "tpu",
        simulated=args.simulate,
        slices=args.slices,
        steps=args.steps,
        batch_size=args.batch_size,
        seed=args.seed,
        process_start=PROCESS_START,
        fit_called=fit_called,
        started_at=PROCESS_START,
        finished_at=time.time(),
        ray_version=ray.__version__,
        jax_version=jax_version,
        error=error,
    )
    bench.write_result(doc, args.result_dir)
    # Disconnected first, so that no line Ray forwards from the workers (or its deduplication summary, printed when
    # the driver exits) comes after the document: the last line of the log is the result.
    ray.shutdown()
    bench.print_result(doc)
    return EXIT_TRAINING_FAILED if error else 0


if __name__ == "__main__":
    sys.exit(main())
