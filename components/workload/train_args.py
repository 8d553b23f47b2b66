"""The training workload's command line (`python -m workloads.train`, docs/workloads.md): its arguments, the slice
they declare or leave to the worker group's environment ($SLICE_*, $SLICE_COUNT), and what a RayJob's entrypoint
declares, which the planner checks against the group it runs on. No Ray or JAX import.
"""

from __future__ import annotations

import argparse
import datetime
import os
from typing import Mapping, Optional

from ray_tpu_gke import bench

from . import lm_config as lm
from .slice import COUNT_ENV, ENV, SliceSpec, add_arguments, contradictions, from_args

MODULE = "workloads.train"
DESCRIPTION = (
    "Ray Train `JaxTrainer` on TPU slices or on one GPU node: a decoder-only transformer language model "
    "(workloads.lm, Equinox and Optax), data-parallel over every chip, checkpointed to the stack's bucket, "
    "every step measured and reported through `ray_tpu_gke.bench`."
)
# The stack's bucket in every Ray pod: the GCS FUSE CSI volume's mountPath in `python -m plan STACK --manifests`.
GCS_MOUNT = "/gcs"
DEFAULT_STORAGE = f"{GCS_MOUNT}/ray-train"
# The token files the job reads through Ray Data (workloads.token_files), under --storage-path unless given: in the
# stack's bucket on GKE, in the run's own folder locally.
DATA_FOLDER = "tokens"
DEFAULT_RESULT_DIR = f"{GCS_MOUNT}/compare"
DEFAULT_NAME = "tiny-lm"


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _parser(parser_class=argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser = parser_class(prog=f"python -m {MODULE}", description=DESCRIPTION)
    add_arguments(parser, environ={})  # $SLICE_* is read after parsing, so an argument that contradicts it is seen
    parser.add_argument("--steps", type=int, default=500, help="training steps in all (default 500)")
    parser.add_argument(
        "--batch-size",
        type=int,
        help="sequences per global batch (default the preset's: "
        + ", ".join(f"{name} {config.batch_size}" for name, config in lm.PRESETS.items())
        + ")",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(lm.PRESETS),
        default=lm.DEFAULT_PRESET,
        help=f"the language model's size (default {lm.DEFAULT_PRESET}: "
        + "; ".join(f"{name} {config.parameters / 1e6:.2f}M parameters" for name, config in lm.PRESETS.items())
        + "); the flags below override one size each",
    )
    for size in lm.SIZE_FLAGS:
        parser.add_argument(f"--{size.replace('_', '-')}", type=int, help=f"the model's {size.replace('_', ' ')}")
    parser.add_argument("--learning-rate", type=float, help="AdamW's learning rate (default the preset's)")
    parser.add_argument("--report-every", type=int, default=50, help="steps between checkpoints (default 50)")
    parser.add_argument("--slices", type=int, help=f"slices to train on (default ${COUNT_ENV}, else 1)")
    parser.add_argument(
        "--storage-path",
        default=DEFAULT_STORAGE,
        help=f"where Ray Train keeps checkpoints (default {DEFAULT_STORAGE}, the stack's bucket)",
    )
    parser.add_argument(
        "--data-path",
        help="a folder (local or the bucket's mount) where the job writes its token files once and reads them through "
        f"Ray Data (default <storage-path>/{DATA_FOLDER})",
    )
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"the job's name (default {DEFAULT_NAME})")
    parser.add_argument("--gpus", type=int, help="train on one GPU node with this many GPUs instead of a TPU slice")
    parser.add_argument("--run", help="run id; the same id resumes its checkpoints (default <name>-<UTC time>)")
    parser.add_argument("--side", help="this run's side in a comparison report (default --name)")
    parser.add_argument(
        "--result-dir",
        default=DEFAULT_RESULT_DIR,
        help=f"the result goes to DIR/<run>/<side>.json (default {DEFAULT_RESULT_DIR}; '' writes none)",
    )
    parser.add_argument("--seed", type=int, default=0, help="data, initial parameters and evaluation batch (default 0)")
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="run on the CPU as a stand-in for the accelerator asked for (the result says so)",
    )
    parser.add_argument("--max-failures", type=int, default=2, help="worker failures to recover from (default 2)")
    parser.add_argument(
        "--throttle-s",
        type=float,
        default=0.0,
        help="pause after every step, outside its measured time, so a local run lasts long enough "
        "to interrupt (default 0)",
    )
    return parser


def parse_args(
    argv: Optional[list[str]] = None, environ: Mapping[str, str] = os.environ
) -> tuple[Optional[SliceSpec], argparse.Namespace]:
    """The slice (None for --gpus) and the arguments. A TPU job's shape comes from the arguments or, where one is
    not given, from the worker group's environment ($SLICE_*, $SLICE_COUNT); an argument that contradicts the
    environment is an error naming both. No Ray or JAX import: the planner parses the stacks' entrypoints with it."""
    parser = _parser()
    try:  # what the comparison tells the job through the environment: each a default the command line overrides
        told = bench.settings(environ)
    except ValueError as error:
        parser.error(str(error))
    parser.set_defaults(**{("simulate" if k == "simulated" else k): v for k, v in told.items()})
    args = parser.parse_args(argv)
    if min(args.steps, args.batch_size or 1, args.report_every, args.gpus or 1) < 1 or (args.slices or 1) < 1:
        parser.error("--steps, --batch-size, --report-every, --slices and --gpus must be at least 1")
    args.model = lm.config_for(
        args.preset, learning_rate=args.learning_rate, **{size: getattr(args, size) for size in lm.SIZE_FLAGS}
    )
    if args.model.problems():
        parser.error("; ".join(args.model.problems()))
    if args.max_failures < -1 or args.throttle_s < 0:
        parser.error("--max-failures must be -1 (unlimited) or more, --throttle-s not negative")
    given = {name: getattr(args, name) for name in ENV}
    if args.gpus:
        passed = [
            f"--{name.replace('_', '-')}"
            for name, value in {**given, "slices": args.slices}.items()
            if value is not None
        ]
        if passed:
            parser.error(f"--gpus trains on one GPU node; {', '.join(passed)} describe TPU slices")
        spec, args.slices = None, 1
    else:
        problems = contradictions({**given, "slices": args.slices}, environ)
        if problems:
            parser.error("; ".join(problems))
        for name, variable in {**ENV, "slices": COUNT_ENV}.items():
            if getattr(args, name) is None and environ.get(variable) is not None:
                try:
                    setattr(
                        args, name, environ[variable] if name in ("generation", "topology") else int(environ[variable])
                    )
                except ValueError:
                    parser.error(f"${variable}={environ[variable]!r} is not a whole number")
        args.slices = args.slices or 1
        spec = from_args(parser, args)
    # The batch is sharded by rows over every device of the job (workloads.train_loop): one chip or GPU each.
    devices = args.gpus if spec is None else spec.hosts * spec.chips_per_host * args.slices
    if args.batch_size is None:  # the preset's batch, rounded up to a whole number of rows per device
        args.batch_size = -(-args.model.batch_size // devices) * devices
    if args.batch_size % devices:
        parser.error(f"--batch-size {args.batch_size} must be a multiple of the job's {devices} chips or GPUs")
    args.run = args.run or f"{args.name}-{datetime.datetime.now(datetime.timezone.utc):%Y%m%d%H%M%S}"
    args.side = args.side or args.name
    return spec, args


def declared(argv: list[str]) -> dict:
    """What an entrypoint's arguments declare, without the environment or defaults for the shape (None where the
    entrypoint leaves it to the worker group): for the planner to check against the group it runs on. Arguments
    the workload refuses raise ValueError."""
    args = _parser(_RaisingParser).parse_args(argv)
    return {
        "generation": args.generation,
        "topology": args.topology,
        "hosts": args.hosts,
        "chipsPerHost": args.chips_per_host,
        "slices": args.slices,
        "gpus": args.gpus,
        "steps": args.steps,
        "batchSize": args.batch_size or lm.PRESETS[args.preset].batch_size,
        "preset": args.preset,
        "reportEvery": args.report_every,
        "seed": args.seed,
        "name": args.name,
        "run": args.run,
        "side": args.side,
        "resultDir": args.result_dir,
        "storagePath": args.storage_path,
        "simulate": args.simulate,
    }
