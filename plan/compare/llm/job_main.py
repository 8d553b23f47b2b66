"""The in-cluster load Job's program (`python -m plan.compare.llm.job_main SPEC`): the orders job.py wrote (URL,
shapes, prompts) run through drive.traffic, what was seen printed after job.MARKER as gzip+base64 lines. Imports only
the generator's modules (they travel in the Job's ConfigMap)."""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path

from ..serving.patterns import Phase
from . import drive
from .prompts import Prompt
from .shapes import Shape

MARKER = "COMPARE-LLM-SEEN"  # the line after which the collector reads what was seen (job.read_seen)
LINE = 16_000  # characters per printed line: within one log entry of the container runtime (16 KiB)


def from_spec(order: dict) -> tuple[list[Shape], drive.LlmLoad]:
    shapes = [
        Shape(
            s["name"],
            tuple(Phase(*p) for p in s["phases"]),
            tuple(tuple(x) for x in s["sends"]),
            s["gapS"],
            s["params"],
        )
        for s in order["shapes"]
    ]
    prompts = [Prompt(*p) for p in order["prompts"]]
    return shapes, drive.LlmLoad(prompts, order["api"], order["agreeCount"], order["agreeTokens"])


def run(order: dict, say=print) -> dict:
    shapes, load = from_spec(order)
    seen = {"name": order["name"], "patterns": {}, "problems": []}
    try:
        drive.traffic(
            seen,
            order["url"],
            shapes,
            load,
            timeout_s=order["timeoutS"],
            cold_timeout_s=order["coldTimeoutS"],
            say=say,
            model=order["model"],
        )
    except Exception as error:  # reported in the seen document: the collector keeps what ran
        seen["problems"].append(f"{order['name']}: the load Job: {type(error).__name__}: {str(error)[:300]}")
    return seen


def encode(seen: dict) -> list[str]:
    encoded = base64.b64encode(gzip.compress(json.dumps(seen).encode())).decode()
    return [MARKER] + [encoded[i : i + LINE] for i in range(0, len(encoded), LINE)]


def main(path: str) -> int:
    seen = run(json.loads(Path(path).read_text()), say=lambda m: print(m, flush=True))
    for line in encode(seen):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
