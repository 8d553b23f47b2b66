"""What the comparison reads from the Kubernetes API (through plan.verify's kubectl wrapper), in seconds: its
timestamps and Go durations."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional


def timestamp(value: Optional[str]) -> Optional[float]:
    """An RFC 3339 time of the Kubernetes API (`metav1.Time`, whole seconds, or `MicroTime`) as epoch seconds."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)$", text)
    if match is None:
        return None
    base, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(base + (zone or "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp() + (float(fraction) if fraction else 0.0)


def iso(seconds: float) -> str:
    """Epoch seconds as the API writes a `metav1.Time` (whole seconds, UTC)."""
    return datetime.fromtimestamp(int(seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def go_duration(text: str) -> Optional[float]:
    """A Go `time.Duration` as `String()` writes it ("1m2.5s", "41.234s", "512ms") in seconds."""
    parts = re.findall(r"([0-9.]+)(h|ms|us|µs|ns|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)
