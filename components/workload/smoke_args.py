"""The smoke test's command line (`python -m workloads.tpu_smoke`, docs/workloads.md), the entrypoint that runs it
for a worker group, and the result line it prints: what the smoke test on the cluster and `ray-tpu-gke verify` (which
submits it as a RayJob and reads its log) share. No Ray import.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Optional

from .slice import COUNT_ENV, SliceSpec, add_arguments, from_args

MODULE = "workloads.tpu_smoke"
DESCRIPTION = (
    "TPU smoke test of one Ray worker group: are its slices whole, labelled as the stack declares, and do "
    "their hosts compute together?"
)
RESULT_KIND = "ray-tpu-gke/tpu-smoke"


def parse_result(text: str) -> Optional[dict]:
    """The last smoke result in a log (a RayJob's output carries Ray's own lines around it), or None. Read with
    `ray_tpu_gke.bench.objects`, the one reader of JSON lines in a job's log."""
    from .. import bench

    found = None
    for value in bench.objects(text):
        if value.get("kind") == RESULT_KIND:
            found = value
    return found


def command(spec: SliceSpec, group: Optional[str], slices: int, timeout: int, labels_only: bool = False) -> str:
    """The entrypoint that runs this smoke test for a worker group (what `ray-tpu-gke verify` submits)."""
    parts = ["python", "-m", MODULE, *spec.to_args(), "--slices", str(slices), "--timeout", str(timeout)]
    if group:
        parts += ["--group", group]
    if labels_only:
        parts.append("--labels-only")
    return " ".join(parts)


def parse_args(argv: Optional[list[str]] = None, environ=os.environ) -> tuple[SliceSpec, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=DESCRIPTION)
    add_arguments(parser, environ)
    parser.add_argument(
        "--group",
        default=environ.get("SMOKE_GROUP"),
        help="the Ray worker group (its slices are named <group>-<replica>); default: every TPU host",
    )
    # A driver on a pod of the group (or on the head of a cluster with one TPU group) knows the group's slices.
    parser.add_argument(
        "--slices",
        type=int,
        default=environ.get("SMOKE_SLICES", environ.get(COUNT_ENV, 1)),
        help=f"whole slices the group must have (default $SMOKE_SLICES, else ${COUNT_ENV}, else 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=environ.get("SMOKE_TIMEOUT", 900),
        help="seconds for the whole test, scale-up included (default 900)",
    )
    parser.add_argument(
        "--labels-only",
        action="store_true",
        help="check the slices' labels only, without reserving their chips (slices that serve)",
    )
    parser.add_argument(
        "--platform",
        default=environ.get("SMOKE_PLATFORM", "tpu"),
        help="the JAX platform the hosts must compute on (default tpu; the tests use cpu)",
    )
    args = parser.parse_args(argv)
    spec = from_args(parser, args)
    if args.slices < 1:
        parser.error("--slices must be at least 1")
    if args.group is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", args.group):
        parser.error(f"--group {args.group!r} is not a worker group name")
    return spec, args
