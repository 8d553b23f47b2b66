"""Ray Serve application: the small JAX model of workloads.model on a TPU, for a RayService's serveConfig.

    applications:
      - name: jax-model
        import_path: workloads.serve:app
        route_prefix: /
        runtime_env:
          env_vars:
            MODEL_CHECKPOINT: /gcs/ray-train/tiny-mlp/checkpoint_...   # optional: params.npz of workloads.model
        deployments:
          - name: JaxModel
            num_replicas: 2
            ray_actor_options:
              resources: {TPU: 8}          # a whole single-host v6e 2x4 per replica

`POST /` with `{"inputs": [[16 numbers], ...]}` answers `{"outputs": [...], "model": {...}}`; a malformed body is a
400 with the reason. Each replica holds one TPU chip unless the serveConfig asks for more (Ray Serve
`ray_actor_options`, overridable per deployment in serveConfigV2); Ray points JAX at the replica's chips through
TPU_VISIBLE_CHIPS (ray/_private/accelerators/tpu.py set_current_process_visible_accelerator_ids). Without
MODEL_CHECKPOINT the replica serves the model's seeded initial parameters.
"""

from __future__ import annotations

import os
import time

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

from workloads import model

CHECKPOINT_ENV = "MODEL_CHECKPOINT"
MAX_BATCH = 1024


def _padded(rows: int) -> int:
    """Batches are padded to a power of two, so a replica compiles at most log2(MAX_BATCH) + 1 shapes."""
    return 1 << max(0, rows - 1).bit_length()


@serve.deployment(name="JaxModel", ray_actor_options={"resources": {"TPU": 1}})
class JaxModel:
    def __init__(self):
        import jax

        directory = os.environ.get(CHECKPOINT_ENV)
        params, self.step = model.load(directory) if directory else (model.init_params(seed=0), 0)
        self._params = jax.device_put(params)
        self._forward = jax.jit(model.forward)
        started = time.perf_counter()
        self._forward(self._params, np.zeros((1, model.FEATURES), np.float32)).block_until_ready()
        self.info = {
            "step": self.step,
            "checkpoint": directory,
            "platform": jax.devices()[0].platform,
            "devices": jax.local_device_count(),
            "compile_s": round(time.perf_counter() - started, 3),
        }

    def predict(self, inputs) -> list[float]:
        x = np.asarray(inputs, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != model.FEATURES or not 1 <= x.shape[0] <= MAX_BATCH:
            raise ValueError(
                f"inputs must be 1 to {MAX_BATCH} rows of {model.FEATURES} numbers, got shape {list(x.shape)}"
            )
        padded = np.zeros((_padded(len(x)), model.FEATURES), np.float32)
        padded[: len(x)] = x
        return np.asarray(self._forward(self._params, padded))[: len(x)].tolist()

    async def __call__(self, request: Request):
        try:
            body = await request.json()
            outputs = self.predict(body["inputs"])
        except (ValueError, KeyError, TypeError) as error:
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
        return {"outputs": outputs, "model": self.info}


app = JaxModel.bind()
