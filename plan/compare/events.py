"""What a training job says about itself: its event lines and its result document, read from its log.

The interface (docs/compare.md "What a job must print"; docs/workloads.md "Result document"): Ray Train's world rank 0
prints one JSON object per line with an `"event"` key (start, step, checkpoint, restore, restart); Ray may put a prefix
such as `(RayTrainWorker pid=123) ` before it, and its log deduplication may append text after it, so a line is read
from its first `{` and only the JSON object there counts. The driver prints the result document (`"schema":
"ray-tpu-gke/train-result/v1"`) as its last line; a submitter (`ray job submit`) prints its own lines after it, so the
last document in the log is the result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

RESULT_SCHEMA = "ray-tpu-gke/train-result/v1"
EVENT_KINDS = ("start", "step", "checkpoint", "restore", "restart")
_DECODER = json.JSONDecoder()


@dataclass
class JobLog:
    events: list[dict] = field(default_factory=list)
    result: Optional[dict] = None
    lines: int = 0

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def last_step(self) -> Optional[int]:
        steps = [e["step"] for e in self.of("step") if isinstance(e.get("step"), int)]
        return max(steps) if steps else None

    def first(self, kind: str) -> Optional[dict]:
        found = self.of(kind)
        return found[0] if found else None


def _object(line: str) -> Optional[dict]:
    start = line.find("{")
    if start < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(line, start)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse(text: str) -> JobLog:
    """Every event line (in log order, ill-formed ones skipped: an event needs a known kind and a numeric time) and
    the last result document of a job's log."""
    log = JobLog()
    for line in text.splitlines():
        log.lines += 1
        found = _object(line)
        if found is None:
            continue
        if found.get("schema") == RESULT_SCHEMA:
            log.result = found
        elif found.get("event") in EVENT_KINDS and _number(found.get("time")):
            log.events.append(found)
    return log
