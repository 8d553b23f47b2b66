"""The serving comparison's Ray Serve application (`import_path: workloads.serve_bench:app`), the same on the TPU
slice and on the GPU pool: a scoring endpoint over the comparison's model, told nothing of where it runs (the stack's
serveConfig gives each side its `ray_actor_options`: TPU chips or GPUs per replica, and Serve's autoscaling).

`POST /` with `{"inputs": [[FEATURES numbers], ...]}` (1 to MAX_BATCH rows) answers `{"scores": [...], "replica":
{...}}`, the replica's own start-up figures included (`loadS`: parameters ready, `compileS`: the first jitted call,
`startedAt`: epoch seconds when its constructor began), so the collector can split a cold start at the replica. A
malformed body is a 400 with the reason.

The model is reached only through `_Model`, an adapter over workloads.model's public functions (`init_params`,
`forward`, `FEATURES`): when the comparison's model changes, only the adapter does. Batches are padded to a power of
two, so a replica compiles at most log2(MAX_BATCH) + 1 shapes, and the first request of each shape compiles.
"""

from __future__ import annotations

import os
import time

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

MAX_BATCH = 256
CHECKPOINT_ENV = "MODEL_CHECKPOINT"  # optional: a workloads.train checkpoint folder to serve instead of the seed's


class _Model:
    """The comparison's model as this app needs it: a number of input features and a jitted scoring function."""

    def __init__(self, seed: int = 0):
        import jax

        from workloads import model

        self.features = model.FEATURES
        directory = os.environ.get(CHECKPOINT_ENV)
        params = model.load(directory)[0] if directory else model.init_params(seed=seed)
        self._params = jax.device_put(params)
        self._score = jax.jit(model.forward)
        self.platform, self.devices = jax.devices()[0].platform, jax.local_device_count()

    def score(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self._score(self._params, x))


def _padded(rows: int) -> int:
    return 1 << max(0, rows - 1).bit_length()


@serve.deployment(name="Scorer")
class Scorer:
    def __init__(self):
        started = time.time()
        self.model = _Model()
        loaded = time.time()
        self.model.score(np.zeros((1, self.model.features), np.float32))  # compile the one-row shape now
        self.info = {"startedAt": started, "loadS": round(loaded - started, 4),
                     "compileS": round(time.time() - loaded, 4), "platform": self.model.platform,
                     "devices": self.model.devices, "pid": os.getpid()}

    def score(self, inputs) -> list[float]:
        x = np.asarray(inputs, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.model.features or not 1 <= x.shape[0] <= MAX_BATCH:
            raise ValueError(f"inputs must be 1 to {MAX_BATCH} rows of {self.model.features} numbers, got shape "
                             f"{list(x.shape)}")
        padded = np.zeros((_padded(len(x)), self.model.features), np.float32)
        padded[:len(x)] = x
        return self.model.score(padded)[:len(x)].tolist()

    async def __call__(self, request: Request):
        try:
            body = await request.json()
            scores = self.score(body["inputs"])
        except (ValueError, KeyError, TypeError) as error:
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
        return {"scores": scores, "replica": self.info}


app = Scorer.bind()
