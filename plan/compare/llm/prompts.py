"""The prompts every side is sent: lengths drawn from a seeded distribution, the same on every side and in every run.

Lengths follow `vllm bench serve`'s random dataset: each prompt's input length and output length uniform within
[length x (1 - range), length x (1 + range)] (vllm/benchmarks/datasets.py RandomDataset, `--random-range-ratio`).
A prompt is that many words from a fixed list; its output length is asked for as `max_tokens`, with `ignore_eos` so
that a vLLM server generates all of them (vLLM's sampling parameter, vllm/sampling_params.py; `vllm bench serve
--ignore-eos` sends it the same way). A word is not a token of every tokenizer: the input tokens counted in the report
are the server's own (`usage.prompt_tokens`), not this estimate.

Pure: no clock, no network.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..serving.patterns import PatternError

WORDS = (
    "the cluster serves tokens from a slice of chips and a pool of cards while traffic rises and falls over "
    "the day so start up time and scaling decide as much as speed a model answers each prompt in turn"
).split()
MAX_LENGTH = 32_768  # a generous bound on input and output lengths (tokens), so that a typo cannot ask for millions


@dataclass(frozen=True)
class Prompt:
    index: int
    text: str
    words: int
    max_tokens: int


@dataclass(frozen=True)
class PromptSet:
    input_len: int
    output_len: int
    range_ratio: float
    seed: int
    count: int

    def prompts(self) -> list[Prompt]:
        rng = random.Random(f"prompts:{self.seed}")
        out = []
        for index in range(self.count):
            words = _drawn(rng, self.input_len, self.range_ratio)
            tokens = _drawn(rng, self.output_len, self.range_ratio)
            text = " ".join(rng.choice(WORDS) for _ in range(words))
            out.append(Prompt(index, text, words, tokens))
        return out

    def params(self) -> dict:
        return {
            "inputLen": self.input_len,
            "outputLen": self.output_len,
            "rangeRatio": self.range_ratio,
            "seed": self.seed,
            "count": self.count,
        }


def _drawn(rng: random.Random, length: int, ratio: float) -> int:
    low, high = max(1, int(length * (1 - ratio))), max(1, int(length * (1 + ratio)))
    return rng.randint(low, high)


def prompt_set(input_len: int, output_len: int, range_ratio: float, seed: int, count: int) -> PromptSet:
    for flag, value in (("--input-len", input_len), ("--output-len", output_len)):
        if not isinstance(value, int) or not 1 <= value <= MAX_LENGTH:
            raise PatternError(f"{flag}: {value!r} is not allowed; allowed: a whole number from 1 to {MAX_LENGTH}")
    if not 0 <= range_ratio < 1:
        raise PatternError(f"--len-range: {range_ratio!r} is not allowed; allowed: from 0 up to (not including) 1")
    if count < 1:
        raise PatternError(f"prompts: {count} is not allowed; allowed: at least 1")
    return PromptSet(input_len, output_len, range_ratio, seed, count)


def body(prompt: Prompt, model: str, api: str, *, stream: bool = True) -> dict:
    """The OpenAI request for `prompt`: a completion or a chat completion, greedy (temperature 0), streamed with the
    usage chunk at the end (`stream_options.include_usage`, OpenAI API reference, "Create completion")."""
    common = {
        "model": model,
        "max_tokens": prompt.max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": stream,
    }
    if stream:
        common["stream_options"] = {"include_usage": True}
    if api == "chat":
        return {**common, "messages": [{"role": "user", "content": prompt.text}]}
    return {**common, "prompt": prompt.text}


PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}  # OpenAI API paths (API reference)
