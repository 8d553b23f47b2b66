"""Bring your own (`--target SIDE=URL`): each endpoint measured with the same prompts and load as a stack's side, one
after the other, from this machine (the rate a laptop or a port-forward carries caps what it can offer; a live run of
the stack's services sends from inside the cluster instead, live.py). The model asked for is the first the server
lists. No Serve state or nodes are read: the report has no cold start or autoscaling for a target."""

from __future__ import annotations

import dataclasses
import time

from . import drive
from .drive import LlmLoad
from .sides import Target


def collect(targets: list[Target], shapes: list, load: LlmLoad, *, timeout_s: float, say=print) -> list[dict]:
    own = dataclasses.replace(load, models={})  # the server's own model name, whatever the stack's side serves
    seen = []
    for target in targets:
        entry: dict = {"name": target.name, "url": target.url, "appliedAt": time.time(), "patterns": {}, "problems": []}
        try:
            drive.traffic(entry, target.url, shapes, own, timeout_s=timeout_s, cold_timeout_s=timeout_s, say=say)
        except Exception as error:  # the endpoint unreachable or not OpenAI-compatible: said, the others still run
            entry["problems"].append(f"{target.name}: {type(error).__name__}: {str(error)[:300]}")
        seen.append(entry)
    return seen
