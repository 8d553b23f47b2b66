"""The serving comparison's Ray Serve application (`import_path: workloads.serve_bench:app`), the same on the TPU
slice and on the GPU pool: the comparison's decoder-only transformer (workloads.lm) behind one endpoint, told nothing
of where it runs (the stack's serveConfig gives each side its `ray_actor_options`: TPU chips or GPUs per replica, and
Serve's autoscaling).

`POST /` with `{"sequences": [[token ids], ...], "generate": N}` (1 to MAX_BATCH sequences of 1 to the model's
`seq_len` ids below its `vocab`; N from 0 to MAX_NEW_TOKENS, default 0):

- N = 0, scoring: `{"logLikelihoods": [...]}`, each sequence's log-likelihood under the model (the sum of
  log p(token | the tokens before it), in nats), one model call;
- N > 0, generation: `{"generated": [[N ids], ...]}`, N greedy tokens after each sequence, one model call per token,
  each waiting for the one before (a decoder's token loop, without a KV cache); a sequence that fills the model's
  context slides its window by one token.

Every answer carries the replica's own start-up figures (`loadS`: parameters ready, `compileS`: the smallest batch's
functions compiled, `startedAt`: epoch seconds when its constructor began), so the collector can split a cold start
at the replica; a malformed body is a 400 with the reason. The model's size is the preset named by $LM_PRESET
(workloads.lm PRESETS, default `tiny`), its parameters the seed's or a workloads.train checkpoint's
($MODEL_CHECKPOINT). Shapes are fixed so that compilation stays bounded: the batch is padded to a power of two from
MIN_BATCH to MAX_BATCH, and the sequences (with room for the tokens to generate) to a power of two from MIN_LENGTH to
the preset's `seq_len`, so a replica compiles two functions for each of at most 5 x (log2(seq_len / MIN_LENGTH) + 1)
shapes; the smallest is compiled at start, and the first request of each other shape compiles it.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

MIN_BATCH, MAX_BATCH = 4, 64
MIN_LENGTH = 32  # the shortest padded sequence; the longest is the preset's seq_len
MAX_NEW_TOKENS = 1024
PRESET_ENV = "LM_PRESET"
CHECKPOINT_ENV = "MODEL_CHECKPOINT"  # optional: a workloads.train checkpoint folder (lm.npz) of the same preset
SEED = 0


def padded(size: int, least: int) -> int:
    """The power of two from `least` that holds `size`: the fixed shapes a replica compiles."""
    return max(least, 1 << max(0, size - 1).bit_length())


class LmModel:
    """The comparison's transformer as this app needs it: jitted scoring and greedy steps on padded [batch, length]
    token ids. The only place that knows workloads.lm: when the comparison's model changes, only this class does."""

    def __init__(self, preset: str | None):
        import equinox as eqx
        import jax
        import jax.numpy as jnp

        from workloads import lm

        self.config = config = lm.config_for(preset or lm.DEFAULT_PRESET)
        directory = os.environ.get(CHECKPOINT_ENV)
        params, _, static = lm.load(Path(directory), SEED, config)[:3] if directory else lm.init_state(SEED, config)
        self._params = jax.device_put(params)
        self.platform, self.devices = jax.devices()[0].platform, jax.local_device_count()

        def logits(params, tokens):  # [batch, length] -> [batch, length, vocab]
            return jax.vmap(eqx.combine(params, static))(tokens)

        def score(params, tokens, lengths):
            log_p = jax.nn.log_softmax(logits(params, tokens)[:, :-1], axis=-1)
            picked = jnp.take_along_axis(log_p, tokens[:, 1:, None], axis=-1)[..., 0]
            counted = jnp.arange(1, tokens.shape[1])[None, :] < lengths[:, None]  # the padding counts nothing
            return jnp.where(counted, picked, 0.0).sum(axis=-1)

        def step(params, tokens, lengths):
            last = jnp.take_along_axis(logits(params, tokens), (lengths - 1)[:, None, None], axis=1)[:, 0]
            chosen = jnp.argmax(last, axis=-1).astype(tokens.dtype)
            width = tokens.shape[1]
            full = lengths >= width  # the window slides by one token
            tokens = jnp.where(full[:, None], jnp.roll(tokens, -1, axis=1), tokens)
            tokens = tokens.at[jnp.arange(tokens.shape[0]), jnp.where(full, width - 1, lengths)].set(chosen)
            return tokens, jnp.minimum(lengths + 1, width), chosen

        self._score, self._step = jax.jit(score), jax.jit(step)

    def batch(self, sequences, room: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The request's sequences as padded [batch, length] ids (room for `room` more tokens, up to seq_len) and their
        lengths; ValueError says what is wrong."""
        vocab, seq_len = self.config.vocab, self.config.seq_len
        if not isinstance(sequences, list) or not 1 <= len(sequences) <= MAX_BATCH:
            raise ValueError(f"sequences must be a list of 1 to {MAX_BATCH} token id lists")
        for row, ids in enumerate(sequences):
            if (
                not isinstance(ids, list)
                or not 1 <= len(ids) <= seq_len
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab for i in ids)
            ):
                raise ValueError(f"sequence {row} must be 1 to {seq_len} token ids from 0 to {vocab - 1}")
        longest = max(len(ids) for ids in sequences)
        width = min(seq_len, padded(longest + room, min(MIN_LENGTH, seq_len)))
        tokens = np.zeros((padded(len(sequences), MIN_BATCH), width), np.int32)
        lengths = np.ones(len(tokens), np.int32)  # padding rows: one token, never read back
        for row, ids in enumerate(sequences):
            tokens[row, : len(ids)], lengths[row] = ids, len(ids)
        return tokens, lengths

    def score(self, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return np.asarray(self._score(self._params, tokens, lengths))

    def step(self, tokens, lengths):
        """One greedy token after each row: (tokens, lengths) to continue from, and the chosen ids (fetched)."""
        tokens, lengths, ids = self._step(self._params, tokens, lengths)
        return tokens, lengths, np.asarray(ids)

    def generate(self, tokens: np.ndarray, lengths: np.ndarray, new_tokens: int) -> np.ndarray:
        chosen = []
        for _ in range(new_tokens):  # each step's ids fetched before the next: one device round trip per token
            tokens, lengths, ids = self.step(tokens, lengths)
            chosen.append(ids)
        return np.stack(chosen, axis=1)


@serve.deployment(name="Scorer")
class Scorer:
    def __init__(self):
        started = time.time()
        # One computation at a time, as an accelerator runs one program at a time: the requests behind it wait in
        # this replica's queue, where Serve's ongoing-request count (what its autoscaling follows) sees them, instead
        # of as threads contending for the same chips or cores.
        self.device = ThreadPoolExecutor(max_workers=1, thread_name_prefix="device")
        self.model = LmModel(os.environ.get(PRESET_ENV))
        loaded = time.time()
        tokens, lengths = self.model.batch([[0]])  # compile the smallest batch's two functions now
        self.model.score(tokens, lengths)
        self.model.generate(tokens, lengths, 1)
        self.info = {
            "startedAt": started,
            "loadS": round(loaded - started, 4),
            "compileS": round(time.time() - loaded, 4),
            "platform": self.model.platform,
            "devices": self.model.devices,
            "model": self.model.config.describe(),
            "pid": os.getpid(),
        }

    def answer(self, sequences, new_tokens: int) -> dict:
        if not isinstance(new_tokens, int) or isinstance(new_tokens, bool) or not 0 <= new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"generate must be a whole number from 0 to {MAX_NEW_TOKENS}, got {new_tokens!r}")
        tokens, lengths = self.model.batch(sequences, new_tokens)
        rows = len(sequences)
        if new_tokens == 0:
            return {"logLikelihoods": self.model.score(tokens, lengths)[:rows].tolist()}
        return {"generated": self.model.generate(tokens, lengths, new_tokens)[:rows].tolist()}

    async def __call__(self, request: Request):
        try:
            body = await request.json()
            new_tokens = body.get("generate", 0)
            # Off the replica's event loop: a handler that computes on it starves the loop that pushes the replica's
            # ongoing-request count to Serve's autoscaler, which then reads the busy replica as idle and scales it down.
            answer = await asyncio.get_running_loop().run_in_executor(
                self.device, self.answer, body["sequences"], new_tokens
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
        return {**answer, "generate": new_tokens, "replica": self.info}


app = Scorer.bind()
