"""When Ray Train's controller saw a worker fail, told to the run's ledger (workloads.ledger): a callback of its own
module, so that the ledger's process need not import Ray Train to unpickle it."""

from __future__ import annotations

import time

from ray.train.v2.api.callback import UserCallback


class FailureClock(UserCallback):
    """Runs in Ray Train's controller (Ray 2.55 ray/train/v2/api/callback.py UserCallback.after_exception, called
    from after_worker_group_poll_status when a poll finds worker errors): the moment the controller saw a failure."""

    def __init__(self, ledger):
        self._ledger = ledger

    def after_exception(self, run_context, worker_exceptions: dict) -> None:
        detail = "; ".join(f"rank {rank}: {type(error).__name__}" for rank, error in sorted(worker_exceptions.items()))
        self._ledger.failure_seen.remote(time.time(), sorted(worker_exceptions), detail[:500])
