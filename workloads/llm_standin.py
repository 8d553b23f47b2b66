"""A stand-in LLM engine for the local LLM rehearsal (`make compare-llm`): NOT vLLM. vLLM's CPU build is not on PyPI
(the `vllm` wheels there are CUDA builds; the CPU backend is built from source, docs.vllm.ai "CPU" installation), so
the rehearsal serves the comparison's own small transformer (workloads.lm, through serve_bench.LmModel) decoding
greedily, behind the same OpenAI API a Ray Serve LLM application exposes, so that the load generator, its token
metrics and the report run unchanged:

- `POST /v1/completions` and `POST /v1/chat/completions`, streamed as server-sent events (`data: {chunk}` lines,
  `data: [DONE]` last; OpenAI API reference, "Streaming") or answered whole; `GET /v1/models`;
- each output token one greedy step of the model, its id sent as a text piece (" 17"); the prompt's words are its
  tokens (each word hashed into the model's vocabulary), the last `seq_len` of them read;
- the usage chunk at the end when `stream_options.include_usage` is asked (prompt and completion tokens), and, beyond
  the OpenAI API, the replica's start-up figures (`replica`: startedAt, loadS, compileS, platform) so that a cold
  start can be split at the replica.

The application builder takes Ray Serve LLM's arguments (`build_openai_app(args)` with `args.llm_configs[0]` an
LLMConfig as a dict; Ray 2.55 python/ray/llm/_internal/serve/core/ingress/builder.py) and reads from it the model id
(`model_loading_config.model_id`) and Serve's options (`deployment_config`: autoscaling_config,
max_ongoing_requests); the deployment is named as Ray Serve LLM names its server deployment ("LLMServer:" + the model
id with "/" as "--" and "." as "_", core/server/builder.py `_get_deployment_name`), so that the collector reads its
replicas by the same name. What a replica holds comes from `args.stand_in.ray_actor_options` (the local run sets the
side's TPU chips or GPUs per replica). One deployment is the ingress and the engine (Ray Serve LLM has two); one
decoding step runs at a time per replica and concurrent requests take turns step by step, a crude stand-in for
vLLM's continuous batching.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from workloads.serve_bench import PRESET_ENV, LmModel

MAX_TOKENS = 4096
SERVER_PREFIX = "LLMServer:"
# Seconds one decoding step holds the replica at least ($STANDIN_STEP_S, default 0: as fast as the CPU goes). The
# local rehearsal sets it so that a replica's capacity (1 / STEP tokens a second) is the same on any machine, and the
# burst's high step must queue requests whatever this machine's speed.
STEP_ENV = "STANDIN_STEP_S"


def server_name(model_id: str) -> str:
    return SERVER_PREFIX + model_id.replace("/", "--").replace(".", "_")


def prompt_ids(text: str, vocab: int, seq_len: int) -> list[int]:
    """The prompt's words as token ids (each word hashed into the vocabulary), the last seq_len of them."""
    ids = [zlib.crc32(word.encode()) % vocab for word in text.split()] or [0]
    return ids[-seq_len:]


class StandInServer:
    def __init__(self, model_id: str):
        started = time.time()
        self.model_id = model_id
        self.device = ThreadPoolExecutor(max_workers=1, thread_name_prefix="device")  # one step at a time
        self.model = LmModel(os.environ.get(PRESET_ENV))
        self.step_s = float(os.environ.get(STEP_ENV) or 0.0)
        loaded = time.time()
        tokens, lengths = self.model.batch([[0]], 1)
        self.model.step(tokens, lengths)  # compile the decoding step of the smallest shape now
        self.info = {
            "startedAt": started,
            "loadS": round(loaded - started, 4),
            "compileS": round(time.time() - loaded, 4),
            "platform": self.model.platform,
            "engine": "stand-in (workloads.llm_standin), not vLLM",
            "stepS": self.step_s,
            "model": self.model.config.describe(),
        }

    def _chunk(self, api: str, piece: str, created: int, rid: str) -> dict:
        if api == "chat":
            choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
            return {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model_id,
                "choices": [choice],
            }
        return {
            "id": rid,
            "object": "text_completion",
            "created": created,
            "model": self.model_id,
            "choices": [{"index": 0, "text": piece, "finish_reason": None}],
        }

    def _step(self, tokens, lengths):
        """One decoding step on the device thread, holding it at least step_s (as an accelerator's step would)."""
        began = time.monotonic()
        out = self.model.step(tokens, lengths)
        rest = self.step_s - (time.monotonic() - began)
        if rest > 0:
            time.sleep(rest)
        return out

    async def _tokens(self, ids: list[int], count: int):
        loop = asyncio.get_running_loop()
        tokens, lengths = self.model.batch([ids], min(count, self.model.config.seq_len))
        for _ in range(count):
            tokens, lengths, chosen = await loop.run_in_executor(self.device, self._step, tokens, lengths)
            yield int(chosen[0])

    async def __call__(self, request: Request):
        path = request.url.path.rstrip("/")
        if request.method == "GET" and path.endswith("/v1/models"):
            return {"object": "list", "data": [{"id": self.model_id, "object": "model", "owned_by": "stand-in"}]}
        api = (
            "chat"
            if path.endswith("/v1/chat/completions")
            else "completions"
            if path.endswith("/v1/completions")
            else None
        )
        if api is None:
            return JSONResponse({"error": {"message": f"no route {path}"}}, status_code=404)
        try:
            body = await request.json()
            text = " ".join(m.get("content") or "" for m in body["messages"]) if api == "chat" else body["prompt"]
            count = int(body.get("max_tokens") or 16)
            if not isinstance(text, str) or not 1 <= count <= MAX_TOKENS:
                raise ValueError(f"a text prompt and max_tokens from 1 to {MAX_TOKENS}")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return JSONResponse({"error": {"message": f"{type(error).__name__}: {error}"}}, status_code=400)
        ids = prompt_ids(text, self.model.config.vocab, self.model.config.seq_len)
        usage = {
            "prompt_tokens": len(text.split()),
            "completion_tokens": count,
            "total_tokens": len(text.split()) + count,
        }
        created, rid = int(time.time()), f"standin-{time.time_ns()}"
        if not body.get("stream"):
            pieces = [f" {t}" async for t in self._tokens(ids, count)]
            answer = self._chunk(api, "".join(pieces), created, rid)
            if api == "chat":
                answer["choices"][0] = {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(pieces)},
                    "finish_reason": "length",
                }
            return {**answer, "usage": usage, "replica": self.info}
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events():
            async for token in self._tokens(ids, count):
                yield "data: " + json.dumps(self._chunk(api, f" {token}", created, rid)) + "\n\n"
            last = {"id": rid, "choices": [], "replica": self.info, **({"usage": usage} if with_usage else {})}
            yield "data: " + json.dumps(last) + "\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def build_openai_app(args: dict):
    """Ray Serve LLM's builder's arguments in, the stand-in application out."""
    config = (args.get("llm_configs") or [{}])[0]
    model_id = (config.get("model_loading_config") or {}).get("model_id") or "stand-in"
    options = {
        k: v
        for k, v in (config.get("deployment_config") or {}).items()
        if k in ("autoscaling_config", "max_ongoing_requests", "num_replicas")
    }
    actor = (args.get("stand_in") or {}).get("ray_actor_options") or {}
    deployment = serve.deployment(StandInServer, name=server_name(model_id), ray_actor_options=actor, **options)
    return deployment.bind(model_id)
