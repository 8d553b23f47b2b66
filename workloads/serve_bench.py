"""The serving comparison's Ray Serve application (`import_path: workloads.serve_bench:app`), the same on the TPU
slice and on the GPU pool: a scoring endpoint over the comparison's model, told nothing of where it runs (the stack's
serveConfig gives each side its `ray_actor_options`: TPU chips or GPUs per replica, and Serve's autoscaling).

`POST /` with `{"inputs": [[FEATURES numbers], ...], "tokens": N}` (1 to MAX_BATCH rows, N from 1 to MAX_TOKENS,
default 1) answers `{"scores": [...], "tokens": N, "replica": {...}}`. With N > 1 it generates: N steps, each one
jitted model call on the window of the last FEATURES values (the previous step's score appended), each waiting for the
one before, so a request costs N device round trips, as a decoder's tokens do; N = 1 is a single score. The answer
carries the replica's own start-up figures (`loadS`: parameters ready, `compileS`: the first jitted call,
`startedAt`: epoch seconds when its constructor began), so the collector can split a cold start at the replica. A
malformed body is a 400 with the reason.

The model is reached only through `_Model`, an adapter over workloads.model's public functions (`init_params`,
`forward`, `FEATURES`): when the comparison's model changes, only the adapter does. Batches are padded to a power of
two, so a replica compiles at most log2(MAX_BATCH) + 1 shapes, and the first request of each shape compiles.
"""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

MAX_BATCH = 256
MAX_TOKENS = 1024
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

    def generate(self, inputs, tokens: int = 1) -> list[float]:
        x = np.asarray(inputs, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.model.features or not 1 <= x.shape[0] <= MAX_BATCH:
            raise ValueError(f"inputs must be 1 to {MAX_BATCH} rows of {self.model.features} numbers, got shape "
                             f"{list(x.shape)}")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_TOKENS:
            raise ValueError(f"tokens must be a whole number from 1 to {MAX_TOKENS}, got {tokens!r}")
        window = np.zeros((_padded(len(x)), self.model.features), np.float32)
        window[:len(x)] = x
        for _ in range(tokens):  # each step waits for the one before: a decoder's token loop
            scores = self.model.score(window)
            window = np.concatenate([window[:, 1:], scores[:, None]], axis=1)
        return scores[:len(x)].tolist()

    async def __call__(self, request: Request):
        try:
            body = await request.json()
            tokens = body.get("tokens", 1)
            # Off the replica's event loop: a handler that computes on it starves the loop that pushes the replica's
            # ongoing-request count to Serve's autoscaler, which then reads the busy replica as idle and scales it down.
            scores = await asyncio.to_thread(self.generate, body["inputs"], tokens)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
        return {"scores": scores, "tokens": tokens, "replica": self.info}


app = Scorer.bind()
