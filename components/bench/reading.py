"""`bench.read`: the one parser of what a job writes, its event lines and its last result document, from a log
whatever Ray put around them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Union

from .contract import EVENTS, SCHEMA, _number

_DECODER = json.JSONDecoder()


def objects(lines: Union[str, Iterable[str]]) -> Iterator[dict]:
    """Every JSON object of a log, one per line: Ray puts a prefix such as `(RayTrainWorker pid=123) ` before a
    worker's line and its log deduplication may append text after it, so a line is read from its first `{` and only
    the JSON object there counts."""
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        start = line.find("{")
        if start < 0:
            continue
        try:
            value, _ = _DECODER.raw_decode(line, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


@dataclass
class JobLog:
    """What a job's log says: its event lines in order and its last result document."""

    events: list[dict] = field(default_factory=list)
    result: Optional[dict] = None
    lines: int = 0

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("event") == kind]

    def first(self, kind: str) -> Optional[dict]:
        found = self.of(kind)
        return found[0] if found else None

    @property
    def last_step(self) -> Optional[int]:
        steps = [e["step"] for e in self.of("step") if isinstance(e.get("step"), int)]
        return max(steps) if steps else None


def read(lines: Union[str, Iterable[str]]) -> JobLog:
    """The one parser of what `bench` writes: every event line (in log order; one needs a known kind and a numeric
    `time`, others are skipped) and the last result document of a job's log (a text or its lines)."""
    log = JobLog()
    text = lines.splitlines() if isinstance(lines, str) else list(lines)
    log.lines = len(text)
    # From Ray 2.56 a Ray Train worker's print reaches the driver twice, once on each of its streams: Train's print
    # patch logs it and also writes it to the worker's stdout, which Ray has wrapped (ray/train/v2/_internal/logging/
    # patch_print.py redirected_print, "tee to the original print", 2.56.0 to 2.60.0). An event is a moment: the same
    # object twice is one event, printed twice.
    seen: set[str] = set()
    for found in objects(text):
        if found.get("schema") == SCHEMA:
            log.result = found
        elif found.get("event") in EVENTS and _number(found.get("time")):
            key = json.dumps(found, sort_keys=True)
            if key not in seen:
                seen.add(key)
                log.events.append(found)
    return log
