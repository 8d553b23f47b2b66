"""Every component's problems in one pass of the offline plan, for a program that configures the library itself.

Each component validates its arguments before it registers anything and raises `ConfigError` with every problem of
its own arguments; a program that builds a slice's pools, a CPU pool and a Ray cluster would stop at the first, and
its author would fix the slice to meet the pool's problems on the next run. Under the offline plan the harness wraps
each component of the library instead (`collecting`): a component whose arguments are refused has its problems
recorded, is registered as an empty component (so that what names it as a parent still registers), and reads as
*unknown* in every output the program takes from it (`pools.node_selector`, `cluster.kubeconfig`), as a preview reads
an output not yet known, so the components after it validate their own arguments. The run then raises one
`ConfigError` with every component's problems, in the order the program made the components, and prints no plan.

What this cannot reach: a program whose own code fails on an unknown output (it indexes one, say) ends there; the
problems found until then are raised, and its own error is not.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Iterator

import pulumi
import ray_tpu_gke
from ray_tpu_gke.spec.problems import ConfigError, Problem

FAILED = "_ray_tpu_gke_refused"  # set on a component whose arguments were refused


def components() -> list[type]:
    """The library's public component classes (ray_tpu_gke.__all__)."""
    found = (getattr(ray_tpu_gke, name) for name in ray_tpu_gke.__all__)
    return [c for c in found if isinstance(c, type) and issubclass(c, pulumi.ComponentResource)]


def unknown() -> pulumi.Output:
    """An output whose value is not known (as in a preview): `apply` on it runs nothing."""
    loop = asyncio.get_event_loop()
    value, known, secret = loop.create_future(), loop.create_future(), loop.create_future()
    value.set_result(None)
    known.set_result(False)
    secret.set_result(False)
    return pulumi.Output(set(), value, known, secret)


@contextlib.contextmanager
def collecting() -> Iterator[list[Problem]]:
    """Inside: a component's ConfigError is recorded in the list yielded, not raised (see the module)."""
    problems: list[Problem] = []
    originals = {cls: (vars(cls)["__init__"], vars(cls).get("__getattr__")) for cls in components()}

    def wrap(cls, original):
        def init(self, name, *args, **kwargs):
            try:
                original(self, name, *args, **kwargs)
            except ConfigError as error:
                problems.extend(error.problems)
                opts = kwargs.get("opts") if "opts" in kwargs else (args[1] if len(args) > 1 else None)
                setattr(self, FAILED, True)
                pulumi.ComponentResource.__init__(self, f"ray-tpu-gke:index:{cls.__name__}", name, None, opts)

        return init

    def outputs_unknown(self, attribute: str):
        if attribute.startswith("_") or not self.__dict__.get(FAILED):
            raise AttributeError(attribute)
        return unknown()

    # setattr, not `cls.__init__ = ...`, which mypy refuses on a type (misc, attr-defined): hence noqa B010.
    for cls, (init, _) in originals.items():
        setattr(cls, "__init__", wrap(cls, init))  # noqa: B010
        setattr(cls, "__getattr__", outputs_unknown)  # noqa: B010
    try:
        yield problems
    finally:
        for cls, (init, getattr_) in originals.items():
            setattr(cls, "__init__", init)  # noqa: B010
            if getattr_ is None:
                delattr(cls, "__getattr__")
            else:
                setattr(cls, "__getattr__", getattr_)  # noqa: B010
