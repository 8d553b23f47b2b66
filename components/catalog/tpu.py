"""The TPU catalogue: every TPU number in the project comes from here.

Pure Python (no Pulumi import), so config validation, node pools, Ray manifests and policies all ask the same
source and can never disagree. Shapes are derived from each generation's rules rather than listed, following
GKE "Plan TPUs in GKE" / "About TPUs in GKE" and the Cloud TPU page of each generation (see README, "TPU catalogue").
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "TPU_RESOURCE",
    "ACCELERATOR_LABEL",
    "TOPOLOGY_LABEL",
    "CatalogError",
    "MachineType",
    "Generation",
    "SliceShape",
    "GENERATIONS",
    "generation",
    "generation_of_machine_type",
    "parse_topology",
    "is_valid_topology",
    "topologies",
    "describe_topologies",
    "layouts",
    "resolve",
    "parse_gke_version",
    "ZONES",
    "slice_shape",
]


TPU_RESOURCE = "google.com/tpu"
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"


class CatalogError(ValueError):
    """A TPU shape that no generation offers; the message says what is allowed."""


@dataclass(frozen=True)
class MachineType:
    """A TPU VM: one Kubernetes node, one host of a slice."""

    name: str
    chips: int
    host_topology: tuple[int, ...]  # how the host's chips are arranged, e.g. (2, 2) or (2, 2, 1)
    vcpus: int
    memory_gib: int
    multi_host: bool  # whether hosts of this type are joined by ICI into larger slices


@dataclass(frozen=True)
class Generation:
    name: str
    accelerator: str  # value of the cloud.google.com/gke-tpu-accelerator node label
    tensorcores_per_chip: int
    min_gke_version: str
    dimensions: int  # 2 (v5e, v6e) or 3 (v4, v5p, tpu7x)
    max_chips: int  # the largest slice (3-D: a whole number of 4x4x4 cubes)
    machine_types: tuple[MachineType, ...]
    min_gke_version_autopilot: str | None = None  # where Autopilot needs a newer version than Standard
    any_dimension_order: bool = False  # v4 accepts 8x4x4 as well as 4x4x8; later generations want A <= B <= C

    def machine_type(self, name: str) -> MachineType | None:
        return next((m for m in self.machine_types if m.name == name), None)


@dataclass(frozen=True)
class SliceShape:
    """One TPU slice: a topology of one generation laid out on hosts of one machine type."""

    generation: Generation
    topology: str
    machine_type: MachineType

    @property
    def chips(self) -> int:
        return math.prod(parse_topology(self.topology))

    @property
    def chips_per_host(self) -> int:
        return self.machine_type.chips

    @property
    def hosts(self) -> int:
        return self.chips // self.machine_type.chips

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def tensorcores(self) -> int:
        return self.chips * self.generation.tensorcores_per_chip

    @property
    def accelerator(self) -> str:
        return self.generation.accelerator

    @property
    def node_selector(self) -> dict[str, str]:
        return {ACCELERATOR_LABEL: self.generation.accelerator, TOPOLOGY_LABEL: self.topology}

    @property
    def min_gke_version(self) -> str:
        """The oldest GKE version (Standard mode) that runs this generation."""
        return self.generation.min_gke_version

    @property
    def key(self) -> str:
        """A short identity of the shape, e.g. `v6e-4x4`."""
        return f"{self.generation.name}-{self.topology}"


def _mt(name, chips, host_topology, vcpus, memory_gib, multi_host=True):
    return MachineType(name, chips, host_topology, vcpus, memory_gib, multi_host)


# vCPUs and memory per host. Sources:
#   [tpu7x]  https://cloud.google.com/tpu/docs/tpu7x, 4-chip VM table: v5p 208 vCPUs / 448 GB, v6e 180 / 720,
#            TPU7x 224 / 960.
#   [v5p]    https://cloud.google.com/tpu/docs/v5p: "Number of vCPUs (4-chip VM) 208", "RAM (GB) (4-chip VM) 448".
#   [plan]   https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus, machine type table (vCPUs, chips,
#            memory): ct6e-standard-8t 180 vCPUs and 1440 GiB (SMT off: 180, not 360).
#   [v6e]    https://cloud.google.com/tpu/docs/v6e: 8 chips and 1536 GiB per physical host; ct6e-standard-1t holds
#            an eighth of it. Copies of [plan] disagree on its memory (448 or 176 GiB): the smaller is used, so
#            what the worker requests is never more than the host has.
#   [kuberay] KubeRay ray-service.tpu-single-host.yaml: "ct4p-hightpu-4t (v4) TPUs have 240 vCPUs".
#   [v5e]    https://cloud.google.com/tpu/docs/v5e machine types (24/48, 112/192, 224/384): the tables could not be
#            read back when this was written; re-check with `gcloud compute machine-types describe`.
# Numbers marked "unsourced" came from the first version of this catalogue and no primary source was found for them.
GENERATIONS: dict[str, Generation] = {
    g.name: g
    for g in (
        Generation(
            name="v4",
            accelerator="tpu-v4-podslice",
            tensorcores_per_chip=2,
            min_gke_version="1.26.1-gke.1500",
            dimensions=3,
            max_chips=64 * 64,
            any_dimension_order=True,
            machine_types=(_mt("ct4p-hightpu-4t", 4, (2, 2, 1), 240, 407),),  # [kuberay]; memory: unsourced
        ),
        Generation(
            name="v5e",
            accelerator="tpu-v5-lite-podslice",
            tensorcores_per_chip=1,
            min_gke_version="1.27.2-gke.2100",
            dimensions=2,
            max_chips=256,
            machine_types=(  # [v5e]
                _mt("ct5lp-hightpu-1t", 1, (1, 1), 24, 48, multi_host=False),
                _mt("ct5lp-hightpu-4t", 4, (2, 2), 112, 192),
                _mt("ct5lp-hightpu-8t", 8, (2, 4), 224, 384, multi_host=False),
            ),
        ),
        Generation(
            name="v5p",
            accelerator="tpu-v5p-slice",
            tensorcores_per_chip=2,
            min_gke_version="1.28.3-gke.1024000",
            dimensions=3,
            # [v5p]: "The maximum v5p shape is 16x16x24 (6144 chips, 96 cubes)".
            max_chips=96 * 64,
            machine_types=(_mt("ct5p-hightpu-4t", 4, (2, 2, 1), 208, 448),),  # [v5p], [tpu7x]
        ),
        Generation(
            name="v6e",
            accelerator="tpu-v6e-slice",
            tensorcores_per_chip=1,
            min_gke_version="1.31.2-gke.1115000",
            dimensions=2,
            max_chips=256,
            machine_types=(
                _mt("ct6e-standard-1t", 1, (1, 1), 44, 176, multi_host=False),  # [plan], [v6e]
                _mt("ct6e-standard-4t", 4, (2, 2), 180, 720),  # [tpu7x], [plan]
                _mt("ct6e-standard-8t", 8, (2, 4), 180, 1440, multi_host=False),  # [plan]
            ),
        ),
        Generation(
            name="tpu7x",
            accelerator="tpu7x",
            tensorcores_per_chip=2,
            # https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood: "available in GKE Standard
            # clusters that run version 1.34.0-gke.2201000 and later, and in Autopilot clusters that run version
            # 1.34.1-gke.3084001 and later".
            min_gke_version="1.34.0-gke.2201000",
            dimensions=3,
            max_chips=144 * 64,  # the 9,216-chip pod ([tpu7x]); no smaller slice limit is documented
            min_gke_version_autopilot="1.34.1-gke.3084001",
            machine_types=(
                _mt("tpu7x-standard-1t", 1, (1, 1, 1), 56, 240, multi_host=False),  # xpk only; shape unsourced
                _mt("tpu7x-standard-4t", 4, (2, 2, 1), 224, 960),  # [tpu7x]
            ),
        ),
    )
}


def generation(name: str) -> Generation:
    try:
        return GENERATIONS[name]
    except KeyError:
        raise CatalogError(f"unknown TPU generation; allowed: {', '.join(GENERATIONS)}") from None


def generation_of_machine_type(name: str) -> Generation | None:
    """The generation whose hosts are of this machine type, or None for a machine type without TPUs."""
    return next((g for g in GENERATIONS.values() if g.machine_type(name)), None)


@lru_cache(maxsize=None)
def parse_topology(topology: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in topology.split("x"))
    except ValueError:
        raise CatalogError("a topology is chips per dimension joined by 'x', e.g. 4x4 or 2x2x4") from None
    if not dims or any(d < 1 for d in dims):
        raise CatalogError("a topology is chips per dimension joined by 'x', e.g. 4x4 or 2x2x4")
    return dims


def _format(dims) -> str:
    return "x".join(str(d) for d in dims)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _valid_2d(dims: tuple[int, ...], gen: Generation) -> bool:
    # v5e/v6e: 1x1, then squares and 1:2 rectangles of powers of two (2x2, 2x4, 4x4 ... 16x16).
    a, b = dims
    if (a, b) == (1, 1):
        return True
    return a >= 2 and _is_power_of_two(a) and b in (a, 2 * a) and a * b <= gen.max_chips


# 3-D generations: slices smaller than a 4x4x4 cube are the sub-cube shapes built from 2x2x1 hosts; larger ones
# are whole 4x4x4 cubes, so every dimension is a multiple of 4, up to the generation's largest slice.
_SUB_CUBES = ((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4))


def _valid_3d(dims: tuple[int, ...], gen: Generation) -> bool:
    if any(_fits_one_host(m, dims) for m in gen.machine_types) or dims in _SUB_CUBES:
        return True
    if any(d % 4 for d in dims) or math.prod(dims) > gen.max_chips:
        return False
    return gen.any_dimension_order or list(dims) == sorted(dims)


def is_valid_topology(gen: Generation, topology: str) -> bool:
    try:
        dims = parse_topology(topology)
    except CatalogError:
        return False
    if len(dims) != gen.dimensions or _format(dims) != topology:
        return False
    return (_valid_2d if gen.dimensions == 2 else _valid_3d)(dims, gen)


@lru_cache(maxsize=None)
def topologies(generation_name: str) -> tuple[str, ...]:
    """Every valid topology of a generation, smallest slice first."""
    gen = generation(generation_name)
    if gen.dimensions == 2:
        candidates: list[tuple[int, ...]] = [(1, 1)]
        candidates += [(a, b) for a in range(2, 17) for b in (a, 2 * a)]
    else:
        steps = range(4, gen.max_chips // 16 + 1, 4)
        cubes = (
            itertools.product(steps, repeat=3)
            if gen.any_dimension_order
            else itertools.combinations_with_replacement(steps, 3)
        )
        candidates = [m.host_topology for m in gen.machine_types] + list(_SUB_CUBES)
        candidates += [d for d in cubes if math.prod(d) <= gen.max_chips]
    valid = {_format(d) for d in candidates if (_valid_2d if gen.dimensions == 2 else _valid_3d)(d, gen)}
    return tuple(sorted(valid, key=lambda t: (math.prod(parse_topology(t)), parse_topology(t))))


def describe_topologies(gen: Generation) -> str:
    """The rule for a generation's topologies, short enough for an error message."""
    if gen.dimensions == 2:
        return ", ".join(topologies(gen.name))
    small = ", ".join(dict.fromkeys(_format(d) for d in (*(m.host_topology for m in gen.machine_types), *_SUB_CUBES)))
    order = "in any order" if gen.any_dimension_order else "with A <= B <= C"
    return f"{small}, or AxBxC with A, B, C multiples of 4 {order} and at most {gen.max_chips} chips"


def layouts(gen: Generation, topology: str) -> tuple[MachineType, ...]:
    """The machine types a valid topology can be laid out on, the default first.

    A shape that fits one host exactly runs on that host (no cross-host ICI, one pod to schedule); that is the
    default where a shape also fits several smaller hosts (v5e/v6e 2x4: one 8-chip host, or two 4-chip hosts).
    """
    dims = parse_topology(topology)
    chips = math.prod(dims)
    single = [m for m in gen.machine_types if _fits_one_host(m, dims)]
    multi = [m for m in gen.machine_types if m.multi_host and chips > m.chips and chips % m.chips == 0]
    return tuple(single + multi)


def _fits_one_host(machine: MachineType, dims: tuple[int, ...]) -> bool:
    return machine.host_topology == dims


@lru_cache(maxsize=None)
def resolve(generation_name: str, topology: str, machine_type: str | None = None) -> SliceShape:
    """The slice shape for a generation, topology and optional machine type; CatalogError says what is allowed."""
    gen = generation(generation_name)
    if not is_valid_topology(gen, topology):
        raise CatalogError(f"not a {gen.name} topology; allowed: {describe_topologies(gen)}")
    options = layouts(gen, topology)
    if machine_type is None:
        return SliceShape(gen, topology, options[0])
    chosen = next((m for m in options if m.name == machine_type), None)
    if chosen is None:
        raise CatalogError(
            f"not a machine type for {gen.name} {topology}; allowed: {', '.join(m.name for m in options)}"
        )
    return SliceShape(gen, topology, chosen)


def parse_gke_version(version: str) -> tuple[int, ...]:
    """`1.31.2-gke.1115000` -> (1, 31, 2, 1115000); missing parts count as 0, so a prefix is judged by its oldest."""
    head, _, build = version.partition("-gke.")
    parts = head.split(".")
    ascii_digits = lambda text: text.isascii() and text.isdigit()  # noqa: E731  (not '١٣', which isdigit() accepts)
    if not 2 <= len(parts) <= 3 or not all(map(ascii_digits, parts)) or (build and not ascii_digits(build)):
        raise CatalogError("a GKE version looks like 1.31.2-gke.1115000 (or a prefix such as 1.31)")
    numbers = [int(p) for p in parts] + [0] * (3 - len(parts))
    return (*numbers, int(build) if build else 0)


# Zones known to offer each generation (Cloud TPU "regions and zones"). Availability changes and depends on quota,
# so a zone outside this list is only a warning.
ZONES: dict[str, tuple[str, ...]] = {
    "v4": ("us-central2-b",),
    "v5e": (
        "us-central1-a",
        "us-south1-a",
        "us-west1-c",
        "us-west4-a",
        "us-east1-c",
        "us-east5-b",
        "europe-west4-b",
        "asia-southeast1-b",
    ),
    "v5p": ("us-central1-a", "us-east5-a", "europe-west4-b"),
    "v6e": (
        "us-central1-b",
        "us-east1-d",
        "us-east5-a",
        "us-east5-b",
        "us-south1-a",
        "europe-west4-a",
        "asia-northeast1-b",
        "southamerica-west1-a",
    ),
    "tpu7x": ("us-central1-c",),
}


def slice_shape(generation: str, topology: str, machine_type: str | None = None) -> SliceShape:
    """Look up a TPU slice shape: its chips, hosts, machine type, node selector and minimum GKE version.

    >>> shape = slice_shape("v6e", "4x4")
    >>> shape.chips, shape.hosts, shape.machine_type.name
    (16, 4, 'ct6e-standard-4t')

    Raises CatalogError, saying what is allowed, for a shape that no generation offers.
    """
    return resolve(generation, topology, machine_type)
