"""What a side's report says of the job itself beyond its measures: where its compile time comes from, and the last
lines of its log that a failed job's report quotes. Pure."""

from __future__ import annotations

from typing import Optional

LOG_TAIL_LINES = 20  # the last lines of a failed job's log that its report quotes


def log_tail(log: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last `lines` non-empty lines of a job's log, each cut to 300 characters."""
    kept = [line.rstrip()[:300] for line in log.splitlines() if line.strip()]
    return kept[-lines:]


def compile_source(result: dict) -> Optional[str]:
    """Where the job's compile time comes from, by its framework, or None where it measured none (no compile event):
    JAX's own compile-duration events (jax.monitoring, as workloads.train records them), or the job's measure of its
    framework's compilation (torch.compile, ...) through `run.compiled`."""
    if not result.get("compileEvents"):
        return None
    framework = result.get("framework")
    if framework in (None, "jax"):
        return "jax.monitoring"
    return f"{framework}, measured by the job"
