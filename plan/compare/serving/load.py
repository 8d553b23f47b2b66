"""The open-loop load generator: httpx's asyncio client (https://www.python-httpx.org/async/), one task per request,
each asleep until its send time from the pattern's schedule and sent then whether or not earlier requests have
answered. Latency is taken from the scheduled send time, so time a request spent waiting on this client (a busy event
loop, a connection pool that was full) counts against the service, as it would against a user.

Targets only loopback: the local Serve proxy, or a live cluster's service through `kubectl port-forward`
(`target_allowed`). Every run is bounded: the pattern's requests and duration (patterns.MAX_*), a per-request
timeout, and at most `max_in_flight` open connections.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urlsplit

from .patterns import Pattern

DEFAULT_TIMEOUT_S = 10.0
# Open connections at once. httpx's default pool (100 connections, httpx.Limits) would queue sends behind answers, a
# closed loop in disguise; a request that waits for a connection still counts that wait in its latency.
DEFAULT_MAX_IN_FLIGHT = 512


class TargetError(ValueError):
    pass


def target_allowed(url: str) -> str:
    """The URL, when it points at this machine (loopback): the load generator never aims at a public address."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        raise TargetError(f"{url!r} is not an http(s) URL with a host")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise TargetError(
            f"{url!r} is not on loopback; allowed: 127.0.0.1, ::1 or localhost (the local Serve proxy, "
            "or a cluster's service through kubectl port-forward)"
        )
    return url


@dataclass
class Outcome:
    """One request: when it was due, sent and answered (seconds from the pattern's start), and how it ended."""

    label: str
    due: float
    sent: Optional[float] = None
    done: Optional[float] = None
    status: Optional[int] = None
    error: Optional[str] = None  # "timeout", "connect", "http 503", ...
    reply: Optional[dict] = None  # the answer's JSON, when the run keeps replies

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def latency_s(self) -> Optional[float]:
        return None if self.done is None else self.done - self.due

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "due": round(self.due, 6),
            "sent": _round(self.sent),
            "done": _round(self.done),
            "status": self.status,
            "error": self.error,
        }


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


@dataclass
class LoadRun:
    pattern: str
    started_at: float  # epoch seconds of the schedule's zero
    outcomes: list[Outcome]


async def _one(
    client, url: str, body: bytes, outcome: Outcome, zero: float, clock: Callable[[], float], keep: bool
) -> None:
    import httpx

    delay = zero + outcome.due - clock()
    if delay > 0:
        await asyncio.sleep(delay)
    outcome.sent = clock() - zero
    try:
        response = await client.post(url, content=body, headers={"content-type": "application/json"})
        outcome.status = response.status_code
        if not 200 <= response.status_code < 300:
            outcome.error = f"http {response.status_code}"
        elif keep:
            outcome.reply = response.json()
    except httpx.TimeoutException:
        outcome.error = "timeout"
    except httpx.HTTPError as error:  # connection refused or reset, protocol errors
        outcome.error = type(error).__name__
    except ValueError:  # an answer that is not JSON, where the run keeps replies
        outcome.error = "not json"
    outcome.done = clock() - zero


async def run_async(
    pattern: Pattern,
    url: str,
    body: dict,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    keep_replies: bool = False,
) -> LoadRun:
    import httpx

    target_allowed(url)
    payload = json.dumps(body).encode()
    outcomes = [Outcome(label, due) for due, label in pattern.schedule()]
    loop = asyncio.get_running_loop()
    clock = loop.time
    limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), limits=limits, trust_env=False) as client:
        zero, epoch = clock() + 0.05, time.time() + 0.05  # a moment for every task to be created before the first send
        await asyncio.gather(*(_one(client, url, payload, o, zero, clock, keep_replies) for o in outcomes))
    return LoadRun(pattern.name, epoch, outcomes)


def run(pattern: Pattern, url: str, body: dict, **options) -> LoadRun:
    """One pattern against `url` (POST `body` as JSON), to the last answer or timeout."""
    return asyncio.run(run_async(pattern, url, body, **options))
