"""The LLM load generator: the serving comparison's open-loop client (serving/load.py: one asyncio task per request,
asleep until its send time and sent then whether or not earlier requests have answered, an unbounded-enough
connection pool) speaking the OpenAI API with streaming: each request a completion or a chat completion with `stream`
true, its server-sent events read as they arrive (`data: {json}` lines, `data: [DONE]` last; OpenAI API reference,
"Streaming").

Per request it keeps the times vLLM's serving benchmark measures (vllm/benchmarks/lib/endpoint_request_func.py,
`async_request_openai_completions` and `..._chat_completions`): the send, the first chunk that carries text (TTFT),
every later chunk with text (one inter-token latency per chunk: a chunk that carries several tokens is one gap, as
there), the last chunk (end-to-end latency), and the output tokens from the server's usage chunk
(`usage.completion_tokens`, asked for with `stream_options.include_usage`) or, where the server sends none, the chunks
with text. The metrics themselves are computed in metrics.py.

Aims where it is told: a loopback URL locally, a Service's cluster address from the in-cluster Job (job.py), or a
`--target` the user named.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Optional
from urllib.parse import urlsplit

from ..serving.load import DEFAULT_MAX_IN_FLIGHT, Outcome, TargetError
from . import prompts as prompts_module
from .shapes import Shape

DEFAULT_TIMEOUT_S = 120.0  # a whole generation, streamed
DONE = "[DONE]"


def target_url(url: str) -> str:
    """An http(s) URL with a host, without a trailing slash (the OpenAI paths are appended)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"{url!r} is not an http(s) URL with a host, e.g. http://10.0.0.7:8000")
    return url.rstrip("/")


@dataclass
class TokenOutcome(Outcome):
    """One streamed request: Outcome's times (seconds from the shape's start) and its chunks'."""

    prompt: int = 0
    first_at: Optional[float] = None  # the first chunk with text
    chunk_at: list = field(default_factory=list)  # every chunk with text, the first included
    pieces: list = field(default_factory=list)  # their text, kept for the agreement check
    output_tokens: Optional[int] = None  # the server's usage.completion_tokens
    prompt_tokens: Optional[int] = None  # the server's usage.prompt_tokens

    @property
    def tokens_out(self) -> int:
        return self.output_tokens if self.output_tokens is not None else len(self.chunk_at)

    def to_json(self) -> dict:
        return {
            **super().to_json(),
            "prompt": self.prompt,
            "chunkAt": [round(t, 6) for t in self.chunk_at],
            "outputTokens": self.output_tokens,
            "promptTokens": self.prompt_tokens,
            **({"pieces": self.pieces} if self.pieces else {}),
            **({"reply": self.reply} if self.reply is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> "TokenOutcome":
        chunks = list(data.get("chunkAt") or [])
        return cls(
            data["label"],
            data["due"],
            data.get("sent"),
            data.get("done"),
            data.get("status"),
            data.get("error"),
            data.get("reply"),
            prompt=data.get("prompt", 0),
            first_at=chunks[0] if chunks else None,
            chunk_at=chunks,
            pieces=list(data.get("pieces") or []),
            output_tokens=data.get("outputTokens"),
            prompt_tokens=data.get("promptTokens"),
        )


@dataclass
class StreamRun:
    shape: str
    started_at: float  # epoch seconds of the schedule's zero
    outcomes: list[TokenOutcome]

    def to_json(self) -> dict:
        return {"shape": self.shape, "startedAt": self.started_at, "outcomes": [o.to_json() for o in self.outcomes]}

    @classmethod
    def from_json(cls, data: dict) -> "StreamRun":
        return cls(data["shape"], data["startedAt"], [TokenOutcome.from_json(o) for o in data["outcomes"]])


def text_of(event: dict, api: str) -> str:
    """The text a chunk carries: a completion's `choices[0].text`, a chat completion's `choices[0].delta.content`."""
    choices = event.get("choices") or []
    if not choices:
        return ""
    choice = choices[0] or {}
    if api == "chat":
        return (choice.get("delta") or {}).get("content") or ""
    return choice.get("text") or ""


async def _read_stream(response, outcome: TokenOutcome, api: str, zero: float, clock, keep: bool) -> None:
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue  # blank separators, comments, `event:` lines
        data = line[len("data:") :].strip()
        if data == DONE:
            break
        event = json.loads(data)
        now = clock() - zero
        if event.get("error"):
            raise ValueError(f"error event: {str(event['error'])[:200]}")
        text = text_of(event, api)
        if text:
            outcome.chunk_at.append(now)
            if outcome.first_at is None:
                outcome.first_at = now
            if keep:
                outcome.pieces.append(text)
        usage = event.get("usage") or {}
        if usage:
            outcome.output_tokens = usage.get("completion_tokens", outcome.output_tokens)
            outcome.prompt_tokens = usage.get("prompt_tokens", outcome.prompt_tokens)
        if isinstance(event.get("replica"), dict):  # the local stand-in engine's start-up figures (not OpenAI's)
            outcome.reply = {"replica": event["replica"]}


async def _one(client, url: str, body: bytes, outcome: TokenOutcome, api: str, zero: float, clock, keep) -> None:
    import httpx

    delay = zero + outcome.due - clock()
    if delay > 0:
        await asyncio.sleep(delay)
    outcome.sent = clock() - zero
    try:
        async with client.stream("POST", url, content=body, headers={"content-type": "application/json"}) as reply:
            outcome.status = reply.status_code
            if not 200 <= reply.status_code < 300:
                outcome.error = f"http {reply.status_code}"
            else:
                await _read_stream(reply, outcome, api, zero, clock, keep)
                if not outcome.chunk_at:
                    outcome.error = "no tokens"
    except httpx.TimeoutException:
        outcome.error = "timeout"
    except httpx.HTTPError as error:  # connection refused or reset, protocol errors
        outcome.error = type(error).__name__
    except ValueError as error:  # a chunk that is not JSON, or an error event
        outcome.error = f"bad stream: {str(error)[:120]}"
    # vLLM's latency ends at the last chunk with text; a request without one ends when it ended
    outcome.done = outcome.chunk_at[-1] if outcome.chunk_at and outcome.error is None else clock() - zero


async def run_async(
    shape: Shape,
    base_url: str,
    model: str,
    prompt_list: list[prompts_module.Prompt],
    *,
    api: str = "completions",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    keep_pieces: bool = False,
    clock: Optional[Callable[[], float]] = None,
) -> StreamRun:
    """Every send of `shape` against `base_url`, request i with prompt i modulo the set (the same prompt for the
    same send on every side)."""
    import httpx

    url = target_url(base_url) + prompts_module.PATHS[api]
    schedule = shape.schedule()
    bodies = [
        json.dumps(prompts_module.body(prompt_list[i % len(prompt_list)], model, api)).encode()
        for i in range(len(schedule))
    ]
    outcomes = [TokenOutcome(label, due, prompt=i % len(prompt_list)) for i, (due, label) in enumerate(schedule)]
    clock = clock or asyncio.get_running_loop().time
    limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
    timeout = httpx.Timeout(timeout_s)
    async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
        zero, epoch = clock() + 0.05, time.time() + 0.05  # a moment for every task to be created before the first send
        await asyncio.gather(
            *(_one(client, url, b, o, api, zero, clock, keep_pieces) for b, o in zip(bodies, outcomes))
        )
    return StreamRun(shape.name, epoch, outcomes)


def run(shape: Shape, base_url: str, model: str, prompt_list: list, **options) -> StreamRun:
    return asyncio.run(run_async(shape, base_url, model, prompt_list, **options))


def first_model(base_url: str, timeout_s: float = 30.0) -> str:
    """The first model a server lists (`GET /v1/models`, OpenAI API reference, "List models"), as `vllm bench serve`
    picks one when none is named."""
    import httpx

    reply = httpx.get(target_url(base_url) + "/v1/models", timeout=timeout_s, trust_env=False)
    reply.raise_for_status()
    listed = reply.json().get("data") or []
    if not listed:
        raise TargetError(f"{base_url} lists no model at /v1/models")
    return listed[0]["id"]
