"""One TPU slice as a stack declares it, in the terms Ray uses for it.

The Ray programs take the slice from their command line, or from the environment: every Ray pod of a worker group
carries its group's shape (`SLICE_GENERATION`, `SLICE_TOPOLOGY`, `SLICE_HOSTS`, `SLICE_CHIPS_PER_HOST`, and
`SLICE_COUNT`, the group's replicas: slices). Generation names are the stack's (`tpuSlices[].generation`,
components/catalog/tpu.py). No Ray import: `ray-tpu-gke verify` builds these arguments too.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass
from typing import Mapping, Optional

# Ray's accelerator version for each generation: Ray 2.55 VALID_TPU_TYPES ("v4", "v5p", "v5litepod", "v6e", "v7x") in
# ray/_private/accelerators/tpu.py, where GKE's TPU_ACCELERATOR_TYPE "tpu7x-N" becomes "v7x-N"
# (TPUAcceleratorManager.get_current_node_tpu_pod_type).
RAY_VERSIONS = {"v4": "v4", "v5e": "v5litepod", "v5p": "v5p", "v6e": "v6e", "tpu7x": "v7x"}
# TensorCores per chip, which Ray's pod type counts (v6e-16: 16 one-core chips; v4-8: 4 two-core chips): Ray 2.55
# SINGLE_CORE_TPU_TYPES = ("v5litepod", "v6e") in the same file, every other generation 2. The catalogue's
# tensorcores_per_chip says the same (tests/workloads/test_workloads_smoke.py compares them, and Ray's own inference).
CORES_PER_CHIP = {"v4": 2, "v5e": 1, "v5p": 2, "v6e": 1, "tpu7x": 2}

ENV = {
    "generation": "SLICE_GENERATION",
    "topology": "SLICE_TOPOLOGY",
    "hosts": "SLICE_HOSTS",
    "chips_per_host": "SLICE_CHIPS_PER_HOST",
}
COUNT_ENV = "SLICE_COUNT"  # slices of the worker group (its replicas), beside ENV on every pod of the group


@dataclass(frozen=True)
class SliceSpec:
    generation: str  # the stack's name: v4, v5e, v5p, v6e, tpu7x
    topology: str  # chips per dimension, e.g. 4x4
    hosts: int  # TPU VMs (Kubernetes nodes, Ray worker pods) per slice
    chips_per_host: int  # google.com/tpu per worker pod

    def __post_init__(self):
        if self.generation not in RAY_VERSIONS:
            raise ValueError(f"generation {self.generation!r} is not one of {', '.join(RAY_VERSIONS)}")
        try:
            dims = [int(d) for d in self.topology.split("x")]
        except ValueError:
            dims = []
        if not dims or min(dims) < 1:
            raise ValueError(f"topology {self.topology!r} is not chips per dimension joined by 'x', e.g. 4x4")
        if self.hosts < 1 or self.chips_per_host < 1:
            raise ValueError("hosts and chips per host must be at least 1")
        if self.hosts * self.chips_per_host != self.chips:
            raise ValueError(
                f"{self.hosts} hosts of {self.chips_per_host} chips are not the {self.chips} chips of "
                f"topology {self.topology}"
            )

    @property
    def chips(self) -> int:
        return math.prod(int(d) for d in self.topology.split("x"))

    @property
    def ray_version(self) -> str:
        return RAY_VERSIONS[self.generation]

    @property
    def pod_type(self) -> str:
        """Ray's `ray.io/tpu-pod-type` label of every host of the slice, e.g. v6e-16."""
        return f"{self.ray_version}-{self.chips * CORES_PER_CHIP[self.generation]}"

    @property
    def accelerator_type(self) -> str:
        """Ray's `ray.io/accelerator-type` label and ScalingConfig accelerator_type, e.g. TPU-V6E
        (ray.util.accelerators.GOOGLE_TPU_V6E)."""
        return f"TPU-{self.ray_version.upper()}"

    @property
    def head_resource(self) -> str:
        """The resource Ray gives worker 0 of a multi-host slice (TPUAcceleratorManager
        .get_current_node_additional_resources); Ray reserves a slice, and its autoscaler scales one up, through it."""
        return f"TPU-{self.pod_type}-head"

    def to_args(self) -> list[str]:
        return [
            "--generation",
            self.generation,
            "--topology",
            self.topology,
            "--hosts",
            str(self.hosts),
            "--chips-per-host",
            str(self.chips_per_host),
        ]

    def to_json(self) -> dict:
        return {
            "generation": self.generation,
            "topology": self.topology,
            "hosts": self.hosts,
            "chips_per_host": self.chips_per_host,
            "pod_type": self.pod_type,
            "accelerator_type": self.accelerator_type,
        }


def add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str] = os.environ) -> None:
    group = parser.add_argument_group("the slice, as the stack declares it (or $SLICE_*)")
    group.add_argument(
        "--generation",
        default=environ.get(ENV["generation"]),
        choices=sorted(RAY_VERSIONS),
        help="tpuSlices[].generation",
    )
    group.add_argument("--topology", default=environ.get(ENV["topology"]), help="tpuSlices[].topology, e.g. 4x4")
    group.add_argument("--hosts", type=int, default=environ.get(ENV["hosts"]), help="hosts (worker pods) per slice")
    group.add_argument(
        "--chips-per-host", type=int, default=environ.get(ENV["chips_per_host"]), help="google.com/tpu per worker pod"
    )


def from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> SliceSpec:
    """The slice of parsed arguments; a missing or inconsistent value is a usage error (exit 2)."""
    missing = [f"--{name.replace('_', '-')} (or ${env})" for name, env in ENV.items() if getattr(args, name) is None]
    if missing:
        parser.error(f"missing {', '.join(missing)}")
    try:
        return SliceSpec(args.generation, args.topology, int(args.hosts), int(args.chips_per_host))
    except ValueError as error:
        parser.error(str(error))
        raise  # parser.error exits; this keeps type checkers content


def contradictions(given: Mapping[str, object], environ: Mapping[str, str]) -> list[str]:
    """Each value given on a command line that differs from the one the worker group's environment declares, named
    with both: `--hosts 2 contradicts $SLICE_HOSTS=4`. `given` maps ENV's names (and "slices", for SLICE_COUNT) to
    the values passed; None is "not passed"."""
    variables = {**ENV, "slices": COUNT_ENV}
    problems = []
    for name, value in given.items():
        declared = environ.get(variables[name])
        if value is None or declared is None or str(value) == declared.strip():
            continue
        problems.append(
            f"--{name.replace('_', '-')} {value} contradicts ${variables[name]}={declared} "
            "(the shape of the worker group this job runs on)"
        )
    return problems


def from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, Optional[str]]:
    """The shape a pod's environment declares (None where it declares nothing), by ENV's names plus "slices"."""
    return {name: environ.get(variable) for name, variable in {**ENV, "slices": COUNT_ENV}.items()}
