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


def _target(x: np.ndarray) -> np.ndarray:
    return np.sin(x @ np.linspace(-1.0, 1.0, x.shape[1], dtype=np.float32)).astype(np.float32)


def batch(step: int, size: int, seed: int = 0, features: int = FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """The global batch of a step: the same on every process (each takes its own rows of it), and the same on every
    accelerator for one seed, so two runs of one seed see the same data."""
    rng = np.random.default_rng([seed, 1_000_003 + step])
    x = rng.standard_normal((size, features)).astype(np.float32)
    return x, _target(x)


EVAL_STREAM = 7  # a random stream of its own: never one of the training steps' (which start at 1_000_003)


def eval_batch(seed: int = 0, rows: int = 8, features: int = FEATURES) -> np.ndarray:
    """A fixed evaluation batch of a seed: the inputs of the output fingerprint two runs are compared on."""
    return np.random.default_rng([seed, EVAL_STREAM]).standard_normal((rows, features)).astype(np.float32)


def predict_host(params: dict, x: np.ndarray) -> np.ndarray:
    """The forward pass in NumPy on host copies of the parameters: the same arithmetic whatever accelerator trained
    them, and no JAX program that every process of a multi-host job would have to join."""
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    return (hidden @ params["w2"] + params["b2"])[..., 0].astype(np.float32)


def save(directory: Path, params: dict, step: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT_FILE
    np.savez(path, step=np.asarray(step), **{k: np.asarray(v) for k, v in params.items()})
    return path


def load(directory: Path) -> tuple[dict[str, np.ndarray], int]:
    with np.load(Path(directory) / CHECKPOINT_FILE) as data:
        params = {k: data[k] for k in data.files if k != "step"}
        return params, int(data["step"])
