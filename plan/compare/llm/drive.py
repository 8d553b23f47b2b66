"""What an LLM run sends once a side's application is up, the same locally, from the in-cluster Job and against a
`--target`: the first request (the start from zero), every load shape in order, then the agreement prompts (the
first prompts again, decoded greedily, their text pieces kept). What was sent and answered is kept in the form
report.py reads (`seen["cold"]`, `seen["patterns"][name]`, `seen["agreement"]`)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..serving.patterns import Phase
from . import stream
from .prompts import Prompt
from .shapes import Shape

COLD = Shape("cold", (Phase("cold", 1.0, 1.0),), ((0.0, "cold"),))  # one request, sent at once
AGREEMENT_SPACING_S = 0.2


@dataclass
class LlmLoad:
    prompts: list[Prompt]
    api: str = "completions"
    agree_count: int = 8
    agree_tokens: int = 16
    models: dict = field(default_factory=dict)  # side name -> the model id to ask for; absent: the server's first
    # called after each shape with (seen, shape): the local run waits there for a replica Serve is adding to start
    settle: Optional[Callable[[dict, Shape], None]] = None

    def agreement(self) -> tuple[Shape, list[Prompt]]:
        count = min(self.agree_count, len(self.prompts))
        sends = tuple((round(i * AGREEMENT_SPACING_S, 6), "agreement") for i in range(count))
        shape = Shape("agreement", (Phase("agreement", 1 / AGREEMENT_SPACING_S, count * AGREEMENT_SPACING_S),), sends)
        return shape, [dataclasses.replace(p, max_tokens=self.agree_tokens) for p in self.prompts[:count]]


def traffic(
    seen: dict,
    url: str,
    shapes: list[Shape],
    load: LlmLoad,
    *,
    timeout_s: float,
    cold_timeout_s: float,
    say=print,
    ready=lambda: None,
    model: Optional[str] = None,
) -> None:
    """The first request, every shape, the agreement prompts, into `seen`; `ready()` returns when the first request
    may leave (locally: when every side of the wave is there)."""
    model = model or load.models.get(seen["name"])
    ready()
    if model is None:  # a --target of its own: the model it serves first, as vllm bench serve picks it
        model = stream.first_model(url, timeout_s=cold_timeout_s)
    seen["model"] = model
    cold = stream.run(COLD, url, model, load.prompts, api=load.api, timeout_s=cold_timeout_s)
    seen["cold"] = cold.to_json()
    for shape in shapes:
        say(f"{seen['name']}: {shape.name}, {shape.requests} requests over {shape.duration_s:g} s")
        # Sparse requests meet a service scaled to zero: each may wait for a node and a replica.
        done = stream.run(
            shape, url, model, load.prompts, api=load.api, timeout_s=cold_timeout_s if shape.gap_s else timeout_s
        )
        seen["patterns"][shape.name] = {"startedAt": done.started_at, "endedAt": time.time(), "run": done.to_json()}
        if load.settle is not None:
            load.settle(seen, shape)
    shape, prompts = load.agreement()
    say(f"{seen['name']}: agreement, {shape.requests} prompts decoded greedily")
    agreed = stream.run(shape, url, model, prompts, api=load.api, timeout_s=cold_timeout_s, keep_pieces=True)
    seen["agreement"] = agreed.to_json()
