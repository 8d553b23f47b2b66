"""A small JAX model shared by workloads.train (which fits it) and workloads.serve (which answers with it).

A two-layer MLP regressing a fixed smooth function of FEATURES inputs: small enough to compile and train in seconds
on one CPU, large enough that a loss going down means the data-parallel step is right. Parameters are plain NumPy
arrays between steps, so a checkpoint is one `.npz` file that either program can read without the other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FEATURES = 16
HIDDEN = 64
CHECKPOINT_FILE = "params.npz"


def init_params(seed: int = 0, features: int = FEATURES, hidden: int = HIDDEN) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "w1": (rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32),
        "b1": np.zeros((hidden,), np.float32),
        "w2": (rng.standard_normal((hidden, 1)) / np.sqrt(hidden)).astype(np.float32),
        "b2": np.zeros((1,), np.float32),
    }


def forward(params, x):
    import jax.numpy as jnp

    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return (hidden @ params["w2"] + params["b2"])[..., 0]


def loss(params, x, y):
    return ((forward(params, x) - y) ** 2).mean()


def batch(step: int, size: int, features: int = FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """The global batch of a step: the same on every process, so each takes its own rows of it."""
    rng = np.random.default_rng(1_000_003 + step)
    x = rng.standard_normal((size, features)).astype(np.float32)
    target = np.sin(x @ np.linspace(-1.0, 1.0, features, dtype=np.float32))
    return x, target.astype(np.float32)


def save(directory: Path, params: dict, step: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT_FILE
    np.savez(path, step=np.asarray(step), **{k: np.asarray(v) for k, v in params.items()})
    return path


def load(directory: Path) -> tuple[dict[str, np.ndarray], int]:
    with np.load(Path(directory) / CHECKPOINT_FILE) as data:
        params = {k: data[k] for k in data.files if k != "step"}
        return params, int(data["step"])
