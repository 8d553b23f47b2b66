"""`bench.start` and the `Run` it returns: the recorder of one attempt of a job's training loop, which prints its
events as it goes and the result document at the end."""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Mapping, Optional

from .contract import KINDS, PLATFORMS
from .environment import settings
from .writing import document, event_line, print_result, process_start_time, write_result


class Run:
    """One attempt of a job's training loop, reporting as it goes. Create it with `bench.start`."""

    def __init__(
        self,
        *,
        run: str,
        side: str,
        kind: Optional[str],
        platform: str,
        devices: int = 1,
        device_kind: Optional[str] = None,
        processes: int = 1,
        slices: int = 1,
        simulated: bool = False,
        steps: Optional[int] = None,
        batch_size: Optional[int] = None,
        seed: int = 0,
        framework: Optional[str] = None,
        framework_version: Optional[str] = None,
        attempt: int = 0,
        from_step: int = 0,
        result_dir: Optional[str] = None,
        flops_per_step: Optional[float] = None,
        flops_source: Optional[str] = None,
        ray_version: Optional[str] = None,
        jax_version: Optional[str] = None,
        warmup_steps: int = 1,
        emit: Optional[Callable[[str], None]] = None,
        sink: Optional[Callable[[dict], None]] = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
    ):
        if (kind is not None and kind not in KINDS) or platform not in PLATFORMS:
            raise ValueError(
                f"kind {kind!r} must be one of {', '.join(KINDS)} (or None: the side decides), "
                f"platform {platform!r} one of {', '.join(PLATFORMS)}"
            )
        self.facts: dict[str, Any] = {
            "run": run,
            "side": side,
            "kind": kind,
            "platform": platform,
            "devices": devices,
            "device_kind": device_kind,
            "processes": processes,
            "slices": slices,
            "simulated": simulated,
            "batch_size": batch_size,
            "seed": seed,
            "framework": framework,
            "framework_version": framework_version,
            "ray_version": ray_version,
            "jax_version": jax_version,
        }
        self.planned_steps, self.attempt, self.from_step = steps, attempt, from_step
        self.result_dir, self.warmup_steps = result_dir, warmup_steps
        self.flops_per_step = flops_per_step
        self.flops_source = flops_source or ("declared" if flops_per_step else None)
        self._emit = emit or (lambda line: print(line, flush=True))
        self._sink, self._clock, self._timer = sink, clock, timer
        self.records: list[dict] = []
        self.saves: list[float] = []
        self.restores: list[float] = []
        self.restarts: list[dict] = []
        self.compile_s, self.compile_events = 0.0, 0
        self.process_start = process_start_time()
        self.started_at = clock()
        self._last = timer()

    def _event(self, event: str, **fields: Any) -> dict:
        record = {"event": event, "time": self._clock(), **fields}
        self._emit(event_line(event, **{k: v for k, v in record.items() if k != "event"}))
        if self._sink is not None:
            self._sink(record)
        return record

    def begin(self) -> "Run":
        self._event("start", attempt=self.attempt, fromStep=self.from_step)
        self._last = self._timer()
        return self

    def step(
        self,
        step: int,
        *,
        loss: Optional[float] = None,
        examples: Optional[int] = None,
        tokens: Optional[int] = None,
        step_s: Optional[float] = None,
        compiled: Optional[bool] = None,
    ) -> dict:
        """Step `step` (steps done, 1-based) is done. `step_s`: its time, measured by the job; by default the time
        since the previous step (or since start or restore), so call it once the step's result is ready. `compiled`:
        the step compiled or warmed up (default: the first `warmup_steps` steps of this attempt)."""
        now = self._timer()
        seconds = float(step_s) if step_s is not None else now - self._last
        self._last = now
        if compiled is None:
            compiled = len(self.records) < self.warmup_steps
        fields: dict[str, Any] = {
            "step": int(step),
            "stepS": seconds,
            "loss": None if loss is None else float(loss),
            "compiled": bool(compiled),
        }
        if examples is not None:
            fields["examples"] = int(examples)
        if tokens is not None:
            fields["tokens"] = int(tokens)
        record = self._event("step", **fields)
        self.records.append(record)
        return record

    def checkpoint(self, step: int, save_s: float = 0.0) -> None:
        self.saves.append(float(save_s))
        self._event("checkpoint", step=int(step), saveS=float(save_s))
        self._last = self._timer()  # the save is not the next step's time

    def restore(self, step: int, restore_s: float = 0.0) -> None:
        self.restores.append(float(restore_s))
        self._event("restore", step=int(step), restoreS=float(restore_s))
        self._last = self._timer()

    def restart(
        self, *, from_step: int, resumed_at: float, steps_redone: int, failure_seen_at: Optional[float] = None
    ) -> None:
        """At the first step of an attempt after a failure: from which step it resumed, and the steps done again."""
        restart = {
            "fromStep": int(from_step),
            "failureSeenAt": failure_seen_at,
            "resumedAt": float(resumed_at),
            "stepsRedone": int(steps_redone),
        }
        self.restarts.append(restart)
        self._event("restart", **restart)

    def compiled(self, seconds: float, events: int = 1) -> None:
        """Compile time the job measured itself (jax.monitoring, torch.compile): the report's compileS."""
        self.compile_s += float(seconds)
        self.compile_events += events

    def finish(
        self,
        *,
        metric: Optional[float] = None,
        metric_name: str = "evalLoss",
        fingerprint: Optional[dict] = None,
        flops_per_step: Optional[float] = None,
        flops_source: Optional[str] = None,
        final_loss: Optional[float] = None,
        steps: Optional[int] = None,
        extra: Optional[dict] = None,
        print_it: bool = True,
    ) -> dict:
        """The end: the job's evaluation metric (`metric`, named `metric_name`; the comparison's agreement compares
        it), an output fingerprint (`bench.fingerprint`), the model FLOPs of one step where the job knows them. Prints
        the result document as the last line and writes it under result_dir; returns it."""
        flops = flops_per_step if flops_per_step is not None else self.flops_per_step
        source = flops_source or (self.flops_source if flops_per_step is None else "declared")
        done = max((r["step"] for r in self.records), default=self.from_step)
        doc = document(
            **self.facts,
            steps=steps or self.planned_steps or done,
            step_records=self.records,
            saves=self.saves,
            restores=self.restores,
            restarts=self.restarts,
            compile_s=self.compile_s,
            compile_events=self.compile_events,
            process_start=self.process_start,
            started_at=self.started_at,
            finished_at=self._clock(),
            final_loss=final_loss,
            metric=metric,
            metric_name=metric_name,
            fingerprint=fingerprint,
            flops_per_step=flops,
            flops_source=source if flops is not None else None,
            extra=extra,
        )
        write_result(doc, self.result_dir)
        if print_it:
            print_result(doc)
        return doc


def start(
    *,
    run: Optional[str] = None,
    side: Optional[str] = None,
    kind: Optional[str] = None,
    platform: str,
    args: Optional[argparse.Namespace] = None,
    environ: Optional[Mapping[str, str]] = None,
    **facts: Any,
) -> Run:
    """The run starts: prints its `start` event and returns the recorder of its steps. `kind`: what the job was asked
    to run on, "tpu" or "gpu", or None to leave it to the side it runs as; `platform`: what it runs on ("tpu",
    "gpu", "cpu"). `run`, `side`, `result_dir`, `seed` and `simulated` come, where not given here, from `args`
    (parsed with `bench.add_arguments`), else from the environment the comparison sets (`bench.VARIABLES`:
    $RAY_TPU_GKE_RUN, ...). Keyword facts: devices, device_kind, processes, slices, simulated, steps, batch_size,
    seed, framework, framework_version, attempt, from_step, result_dir, flops_per_step, ray_version, jax_version,
    warmup_steps."""
    if args is not None:
        run = run or getattr(args, "run", None)
        side = side or getattr(args, "side", None)
        for name in ("result_dir", "seed", "simulate"):
            if getattr(args, name, None) is not None:
                facts.setdefault("simulated" if name == "simulate" else name, getattr(args, name))
    told = settings(environ)
    run, side = run or told.get("run"), side or told.get("side")
    for name in ("result_dir", "seed", "simulated"):
        if name in told:
            facts.setdefault(name, told[name])
    side = side or kind or "job"
    run = run or f"{side}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
    return Run(run=run, side=side, kind=kind, platform=platform, **facts).begin()
