"""The run's ledger: one small Ray actor beside the driver that every attempt of the training loop reports to.

Ray Train restarts the workers after a failure (FailureConfig), so no worker outlives the run; the ledger does. Rank 0
of each attempt tells it when the loop started, every step, checkpoint and restore, and the fingerprint at the end;
every rank tells it what it runs on (platform, slice, MEGASCALE_* environment). A worker that finds the wrong platform
tells it too, and the driver, which polls it, stops the job at once instead of letting Ray Train retry. A callback in
Ray Train's controller tells it when the controller saw a worker fail (workloads.failure_clock), so a restart knows
when the failure was seen. The driver reads the whole record after `fit()` and builds the result document from it
(workloads.result.build).

The ledger's process imports Ray alone: its class needs nothing of Ray Train, whose import (pandas, pyarrow, Ray Data)
would add about two thirds of a CPU-second to each run's ledger start.
"""

from __future__ import annotations

from typing import Optional

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


class RunLedger:
    def __init__(self) -> None:
        self._refusal: Optional[dict] = None
        self._attempts: list[dict] = []
        self._failures: list[dict] = []
        self._steps: list[dict] = []
        self._compile: list[list] = []  # [event, seconds, attempt]
        self._saves: list[float] = []
        self._restores: list[float] = []
        self._restarts: list[dict] = []
        self._finish: Optional[dict] = None

    # The driver's gate -------------------------------------------------------------------------------------------
    def refuse(self, status: int, line: str) -> None:
        if self._refusal is None:
            self._refusal = {"status": status, "line": line}

    def refusal(self) -> Optional[dict]:
        return self._refusal

    # The controller ------------------------------------------------------------------------------------------------
    def failure_seen(self, at: float, ranks: list[int], detail: str) -> None:
        self._failures.append({"at": at, "ranks": ranks, "detail": detail})

    # Rank 0 ---------------------------------------------------------------------------------------------------------
    def begin(self, from_step: int, entered_at: float) -> dict:
        """A new attempt of the training loop; what rank 0 needs to report a restart."""
        previous = self._attempts[-1]["enteredAt"] if self._attempts else None
        seen = [f["at"] for f in self._failures if previous is not None and f["at"] >= previous]
        attempt = {"attempt": len(self._attempts), "fromStep": from_step, "enteredAt": entered_at, "workers": {}}
        self._attempts.append(attempt)
        done = max((s["step"] for s in self._steps), default=0)
        return {"attempt": attempt["attempt"], "failureSeenAt": min(seen) if seen else None, "maxStep": done}

    def step(
        self,
        attempt: int,
        step: int,
        step_s: float,
        loss: float,
        at: float,
        compiled: list[list],
        tokens: Optional[int] = None,
    ) -> None:
        self._steps.append(
            {
                "attempt": attempt,
                "step": step,
                "stepS": step_s,
                "loss": loss,
                "time": at,
                "compiled": bool(compiled),
                "tokens": tokens,
            }
        )
        self._compile += [[event, seconds, attempt] for event, seconds in compiled]

    def compiled_outside_steps(self, attempt: int, compiled: list[list]) -> None:
        self._compile += [[event, seconds, attempt] for event, seconds in compiled]

    def checkpoint(self, save_s: float) -> None:
        self._saves.append(save_s)

    def restore(self, restore_s: float) -> None:
        self._restores.append(restore_s)

    def restart(self, record: dict) -> None:
        self._restarts.append(record)

    def finish(self, summary: dict) -> None:
        self._finish = summary

    # Every rank -----------------------------------------------------------------------------------------------------
    def worker(self, attempt: int, rank: int, info: dict) -> None:
        self._attempts[attempt]["workers"][rank] = info

    def record(self) -> dict:
        return {
            "attempts": [{**a, "workers": [a["workers"][r] for r in sorted(a["workers"])]} for a in self._attempts],
            "failures": self._failures,
            "steps": self._steps,
            "compile": self._compile,
            "checkpoints": {"saveS": self._saves, "restoreS": self._restores},
            "restarts": self._restarts,
            "finish": self._finish,
            "refusal": self._refusal,
        }


def start_ledger():
    """The ledger actor, pinned to the driver's node: it must outlive any worker node the run loses."""
    here = ray.get_runtime_context().get_node_id()
    return (
        ray.remote(RunLedger)
        .options(
            num_cpus=0, max_concurrency=1, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        )
        .remote()
    )
