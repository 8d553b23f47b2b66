"""kubectl against one context, every read as JSON (so a test can put a stand-in `kubectl` on PATH), and the
Kubernetes API's timestamps as epoch seconds."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional


class KubectlError(RuntimeError):
    pass


class Kubectl:
    def __init__(self, context: str, kubeconfig: Optional[Path] = None, executable: str = "kubectl",
                 timeout: float = 120):
        self.base = [executable, "--context", context] + (["--kubeconfig", str(kubeconfig)] if kubeconfig else [])
        self.timeout = timeout

    def run(self, *args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True,
                                  timeout=self.timeout)
        except FileNotFoundError:
            raise KubectlError(f"{self.base[0]} is not installed or not on PATH") from None
        except subprocess.TimeoutExpired:
            raise KubectlError(f"kubectl {' '.join(args)} did not answer within {self.timeout:.0f}s") from None

    def json(self, *args: str, stdin: Optional[str] = None, missing_ok: bool = False) -> Optional[dict]:
        done = self.run(*args, "-o", "json", stdin=stdin)
        if done.returncode != 0:
            if missing_ok and "(NotFound)" in done.stderr:
                return None
            raise KubectlError(f"kubectl {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise KubectlError(f"kubectl {' '.join(args)} printed no JSON") from None

    def items(self, *args: str) -> list[dict]:
        return (self.json("get", *args) or {}).get("items", [])


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
