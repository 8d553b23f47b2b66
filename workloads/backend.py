"""Which JAX backend a training worker got, against the one its job asked for.

A job asks for an accelerator (`--gpus N`, or a TPU slice); JAX then runs on whatever backend the worker's image and
environment give it. Ray 2.55 sets `JAX_PLATFORMS=cuda` on GPU workers and `tpu` on TPU workers, unless the
environment already sets it (ray/train/v2/jax/config.py `_setup_jax_distributed_environment`): an image without
JAX's CUDA plugin then has no backend at all, and an environment whose platform list allows the CPU trains there at
the accelerator's price. `check` names that before any training step. Only `probe` imports JAX.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Optional

# jax.devices()[0].platform of each accelerator kind: "gpu" for CUDA devices, "tpu" for TPU chips.
PLATFORM_OF_KIND = {"tpu": "tpu", "gpu": "gpu"}
BACKEND_NAME = {"gpu": "CUDA", "tpu": "TPU"}
# What brings each backend into JAX 0.10.2: the CUDA PJRT plugin of jax[cuda12] (namespace package jax_plugins,
# wheel jax-cuda12-pjrt; jax 0.10.2 METADATA `extra == "cuda12"`) and libtpu for jax[tpu].
PLUGIN_MODULES = {"gpu": ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13"), "tpu": ("libtpu",)}
PLUGIN_PACKAGE = {"gpu": "jax-cuda12-plugin (the workloads-gpu image)", "tpu": "libtpu (the workloads-tpu image)"}


def expected_platform(kind: str, simulate: bool) -> str:
    """The platform a job of this kind must compute on: its accelerator's, or the CPU when it simulates one."""
    return "cpu" if simulate else PLATFORM_OF_KIND[kind]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def probe() -> dict:
    """The backend this process's JAX starts: platform, device kind and counts, or the error it raised."""
    import jax

    found = {
        "platform": None,
        "deviceKind": None,
        "devices": 0,
        "localDevices": 0,
        "error": None,
        "jaxPlatforms": os.environ.get("JAX_PLATFORMS", ""),
        "plugins": {kind: [m for m in modules if _installed(m)] for kind, modules in PLUGIN_MODULES.items()},
    }
    try:
        devices = jax.devices()
    except Exception as error:  # JAX raises RuntimeError, or AssertionError when no platform initialised at all
        found["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else 'no backend'}"
        return found
    found.update(
        platform=devices[0].platform,
        deviceKind=devices[0].device_kind,
        devices=len(devices),
        localDevices=jax.local_device_count(),
    )
    return found


def check(kind: str, asked: str, expected: str, found: dict, rank: int) -> Optional[str]:
    """One line naming the missing backend when `found` (a `probe`) is not the `expected` platform, else None.
    `asked` is how the job asked for its accelerator, e.g. "--gpus 1" or "a v6e 2x4 slice"."""
    if found["platform"] == expected:
        return None
    if expected == "cpu":
        return (
            f"workloads.train: --simulate runs on the CPU, but rank {rank}'s JAX runs on "
            f"{found['platform'] or 'no backend'} ({found['error'] or 'JAX_PLATFORMS=' + found['jaxPlatforms']})"
        )
    backend = BACKEND_NAME[kind]
    if found["platform"] is None:
        got = f"JAX started no backend ({found['error']})"
    else:
        got = f"JAX runs on {found['platform']} instead"
    plugins = found["plugins"][kind]
    why = f"{', '.join(plugins)} installed" if plugins else f"{PLUGIN_PACKAGE[kind]} is not installed"
    return (
        f"workloads.train: {asked} needs JAX's {backend} backend (platform {expected}), but rank {rank} has no "
        f"{backend} backend: {got}; JAX_PLATFORMS={found['jaxPlatforms'] or '(unset)'}; {why}. No training step "
        "was run; --simulate runs on the CPU on purpose."
    )
