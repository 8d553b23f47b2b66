"""`ray_tpu_gke.bench`: how any training program tells the comparison (`python -m plan.compare`) what it needs, and the
one parser of what it tells. Pure Python (no Ray, JAX, PyTorch or NumPy import), so that a job in any framework, and
every collector, can import it.

    from ray_tpu_gke import bench

    run = bench.start(run="r1", side="bench-gpu", kind="gpu", platform="gpu", devices=8, device_kind="H100",
                      framework="torch", batch_size=256, steps=300)
    for step in range(1, 301):
        loss = train_one_step()                     # the step's result ready (synchronised) before the call
        run.step(step, loss=loss, examples=256, tokens=256 * 1024)
    run.finish(metric=eval_loss, metric_name="evalLoss", fingerprint=bench.fingerprint(predictions, seed=0),
               flops_per_step=flops)

The job prints one event line per start, step, checkpoint, restore and restart (a JSON object with an "event" key and
an epoch `time`) while it runs, and its result document (`"schema": "ray-tpu-gke/train-result/v1"`) as its last line
at the end, also written to `<result_dir>/<run>/<side>.json`. `bench.read(log)` finds both in a job's log, whatever
Ray put around them. Field by field: docs/workloads.md "Result document"; the comparison's flags: docs/compare.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union

SCHEMA = "ray-tpu-gke/train-result/v1"
EVENTS = ("start", "step", "checkpoint", "restore", "restart")
KINDS = ("tpu", "gpu")
PLATFORMS = ("tpu", "gpu", "cpu")
REPORTER = "ray_tpu_gke.bench"
_DECODER = json.JSONDecoder()

# Every field of the result document and the JSON types it may hold ("null" where the contract allows it).
FIELDS: dict[str, tuple[str, ...]] = {
    "schema": ("str",), "run": ("str",), "side": ("str",), "kind": ("str", "null"), "platform": ("str",),
    "simulated": ("bool",), "devices": ("int",), "deviceKind": ("str", "null"), "processes": ("int",),
    "slices": ("int",), "steps": ("int",), "batchSize": ("int", "null"), "seed": ("int",), "stepTimesS": ("list",),
    "compiledSteps": ("list",), "compileS": ("float",), "compileEvents": ("int",),
    "processStartToFirstStepS": ("float", "null"), "workerGroupStartS": ("float", "null"), "checkpoints": ("dict",),
    "examplesPerS": ("float", "null"), "loss": ("list",), "finalLoss": ("float", "null"),
    "fingerprint": ("dict", "null"), "restarts": ("list",), "workers": ("list",), "startedAt": ("float",),
    "finishedAt": ("float",), "rayVersion": ("str", "null"), "jaxVersion": ("str", "null"),
    "compilationCache": ("str", "null"),
    # Fourth round: any framework, the job's own evaluation metric, throughput in tokens, model FLOPs per step.
    "reporter": ("str",), "framework": ("str", "null"), "frameworkVersion": ("str", "null"),
    "tokensPerS": ("float", "null"), "tokensPerStep": ("int", "null"), "evalMetric": ("dict", "null"),
    "flopsPerStep": ("float", "null"),
    "flopsSource": ("str", "null"),
}
RESTART_FIELDS = {"failureSeenAt": ("float", "null"), "resumedAt": ("float",), "fromStep": ("int",),
                  "stepsRedone": ("int",)}
WORKER_FIELDS = {"rank": ("int",), "slice": ("int",), "megascaleSliceId": ("str", "null"),
                 "megascaleNumSlices": ("str", "null"), "platform": ("str",)}


# --- the steady-step rule ------------------------------------------------------------------------------------------

def steady_indices(step_times: list, compiled: Iterable[int]) -> list[int]:
    """The steps that measure the job's steady speed: every step but those during which it compiled (or warmed up:
    the first step of each attempt, unless the job says otherwise). The one rule of every percentile, throughput,
    time breakdown and chart."""
    skip = set(compiled)
    return [i for i in range(len(step_times)) if i not in skip]


def steady(step_times: list, compiled: Iterable[int]) -> list[float]:
    return [float(step_times[i]) for i in steady_indices(step_times, compiled)]


# --- writing -------------------------------------------------------------------------------------------------------

def event_line(event: str, **fields: Any) -> str:
    """One event as a job prints it: a JSON object whose "event" key names it."""
    if event not in EVENTS:
        raise ValueError(f"{event!r} is not one of {', '.join(EVENTS)}")
    return json.dumps({"event": event, **fields}, sort_keys=True)


def fingerprint(values: Iterable[float], seed: Optional[int] = None, inputs: Optional[str] = None) -> dict:
    """The output fingerprint of a trained model: its predictions on a fixed evaluation input, and the SHA-256 of
    their float32 little-endian bytes (the same bytes NumPy's `.astype("<f4").tobytes()` gives). `inputs` names what
    was predicted on, so that two jobs' fingerprints are compared only where they predicted on the same thing."""
    numbers = [float(v) for v in values]
    digest = hashlib.sha256(struct.pack(f"<{len(numbers)}f", *numbers)).hexdigest()
    out: dict[str, Any] = {"seed": seed, "values": numbers, "sha256": digest}
    if inputs is not None:
        out["inputs"] = inputs
    return out


def process_start_time() -> float:
    """When this process started (epoch seconds): /proc/self/stat field 22, starttime in clock ticks after boot, plus
    btime of /proc/stat (proc(5)). Where /proc is not Linux's, the time of this call."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # fields after "(comm)" start at field 3
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags every comparison job takes (docs/compare.md "Bring your own job"): the collector passes them."""
    parser.add_argument("--run", help="run id of the comparison")
    parser.add_argument("--side", help="this job's side in the comparison report")
    parser.add_argument("--result-dir", default="", help="write the result document to DIR/<run>/<side>.json")
    parser.add_argument("--seed", type=int, default=0, help="data, initial parameters and evaluation input")
    parser.add_argument("--simulate", action="store_true", help="run on the CPU standing in for the accelerator")
    parser.add_argument("--report-every", type=int, default=50, help="steps between checkpoints")
    return parser


def document(*, run: str, side: str, kind: Optional[str], platform: str, simulated: bool, devices: int, steps: int,
             step_records: list[dict], seed: int = 0, device_kind: Optional[str] = None, processes: int = 1,
             slices: int = 1, batch_size: Optional[int] = None, saves: Iterable[float] = (),
             restores: Iterable[float] = (), restarts: Iterable[dict] = (), compile_s: float = 0.0,
             compile_events: int = 0, process_start: Optional[float] = None,
             worker_group_start_s: Optional[float] = None,
             started_at: float, finished_at: float, final_loss: Optional[float] = None,
             metric: Optional[float] = None, metric_name: Optional[str] = None, fingerprint: Optional[dict] = None,
             flops_per_step: Optional[float] = None, flops_source: Optional[str] = None,
             framework: Optional[str] = None, framework_version: Optional[str] = None,
             ray_version: Optional[str] = None, jax_version: Optional[str] = None,
             compilation_cache: Optional[str] = None, workers: Iterable[dict] = (),
             extra: Optional[dict] = None) -> dict:
    """The result document: the one writer of it. `step_records` are the steps executed, in order, redone ones
    included: {"step", "stepS", "loss", "compiled", "time", "examples", "tokens"} (the last two optional). Pure: no
    clock, no I/O."""
    times = [float(s["stepS"]) for s in step_records]
    compiled = [i for i, s in enumerate(step_records) if s.get("compiled")]
    calm = steady_indices(times, compiled)
    calm_s = sum(times[i] for i in calm)

    def per_second(key: str) -> Optional[float]:
        counts = [step_records[i].get(key) for i in calm]
        if calm_s <= 0 or not counts or any(c is None for c in counts):
            return None
        return sum(counts) / calm_s

    latest_loss = {int(s["step"]): float(s["loss"]) for s in step_records if s.get("loss") is not None}
    if final_loss is None and step_records and step_records[-1].get("loss") is not None:
        final_loss = float(step_records[-1]["loss"])
    doc: dict[str, Any] = {
        "schema": SCHEMA, "reporter": REPORTER, "run": run, "side": side, "kind": kind, "platform": platform,
        "simulated": bool(simulated), "devices": devices, "deviceKind": device_kind, "processes": processes,
        "slices": slices, "steps": steps, "batchSize": batch_size, "seed": seed,
        "stepTimesS": times, "compiledSteps": compiled, "compileS": float(compile_s), "compileEvents": compile_events,
        "processStartToFirstStepS": (float(step_records[0]["time"]) - process_start
                                     if step_records and process_start is not None else None),
        "workerGroupStartS": worker_group_start_s,
        "checkpoints": {"saveS": [float(s) for s in saves], "restoreS": [float(s) for s in restores]},
        "examplesPerS": per_second("examples"), "tokensPerS": per_second("tokens"),
        "tokensPerStep": step_records[-1].get("tokens") if step_records else None,
        "loss": [[step, latest_loss[step]] for step in sorted(latest_loss)], "finalLoss": final_loss,
        "evalMetric": None if metric is None else {"name": metric_name or "metric", "value": float(metric)},
        "fingerprint": fingerprint, "flopsPerStep": None if flops_per_step is None else float(flops_per_step),
        "flopsSource": flops_source if flops_per_step is not None else None,
        "restarts": [{"failureSeenAt": r.get("failureSeenAt"), "resumedAt": r["resumedAt"], "fromStep": r["fromStep"],
                      "stepsRedone": r["stepsRedone"]} for r in restarts],
        "workers": list(workers), "startedAt": started_at, "finishedAt": finished_at,
        "framework": framework, "frameworkVersion": framework_version, "rayVersion": ray_version,
        "jaxVersion": jax_version, "compilationCache": compilation_cache,
    }
    doc.update(extra or {})
    return doc


def write_result(doc: dict, result_dir: Optional[str]) -> Optional[Path]:
    """The document to `<result_dir>/<run>/<side>.json`; nothing where result_dir is empty."""
    if not result_dir:
        return None
    path = Path(result_dir) / doc["run"] / f"{doc['side']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def print_result(doc: dict, out=None) -> None:
    """The document as the last line of the job's output: a collector takes the last one in the log."""
    print(json.dumps(doc, sort_keys=True), file=out or sys.stdout, flush=True)


class Run:
    """One attempt of a job's training loop, reporting as it goes. Create it with `bench.start`."""

    def __init__(self, *, run: str, side: str, kind: Optional[str], platform: str, devices: int = 1,
                 device_kind: Optional[str] = None, processes: int = 1, slices: int = 1, simulated: bool = False,
                 steps: Optional[int] = None, batch_size: Optional[int] = None, seed: int = 0,
                 framework: Optional[str] = None, framework_version: Optional[str] = None, attempt: int = 0,
                 from_step: int = 0, result_dir: Optional[str] = None, flops_per_step: Optional[float] = None,
                 flops_source: Optional[str] = None, ray_version: Optional[str] = None,
                 jax_version: Optional[str] = None, warmup_steps: int = 1, emit: Optional[Callable[[str], None]] = None,
                 sink: Optional[Callable[[dict], None]] = None, clock: Callable[[], float] = time.time,
                 timer: Callable[[], float] = time.perf_counter):
        if (kind is not None and kind not in KINDS) or platform not in PLATFORMS:
            raise ValueError(f"kind {kind!r} must be one of {', '.join(KINDS)} (or None: the side decides), "
                             f"platform {platform!r} one of {', '.join(PLATFORMS)}")
        self.facts = {"run": run, "side": side, "kind": kind, "platform": platform, "devices": devices,
                      "device_kind": device_kind, "processes": processes, "slices": slices, "simulated": simulated,
                      "batch_size": batch_size, "seed": seed, "framework": framework,
                      "framework_version": framework_version, "ray_version": ray_version,
                      "jax_version": jax_version}
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

    def step(self, step: int, *, loss: Optional[float] = None, examples: Optional[int] = None,
             tokens: Optional[int] = None, step_s: Optional[float] = None, compiled: Optional[bool] = None) -> dict:
        """Step `step` (steps done, 1-based) is done. `step_s`: its time, measured by the job; by default the time
        since the previous step (or since start or restore), so call it once the step's result is ready. `compiled`:
        the step compiled or warmed up (default: the first `warmup_steps` steps of this attempt)."""
        now = self._timer()
        seconds = float(step_s) if step_s is not None else now - self._last
        self._last = now
        if compiled is None:
            compiled = len(self.records) < self.warmup_steps
        fields: dict[str, Any] = {"step": int(step), "stepS": seconds, "loss": None if loss is None else float(loss),
                                  "compiled": bool(compiled)}
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

    def restart(self, *, from_step: int, resumed_at: float, steps_redone: int,
                failure_seen_at: Optional[float] = None) -> None:
        """At the first step of an attempt after a failure: from which step it resumed, and the steps done again."""
        restart = {"fromStep": int(from_step), "failureSeenAt": failure_seen_at, "resumedAt": float(resumed_at),
                   "stepsRedone": int(steps_redone)}
        self.restarts.append(restart)
        self._event("restart", **restart)

    def compiled(self, seconds: float, events: int = 1) -> None:
        """Compile time the job measured itself (jax.monitoring, torch.compile): the report's compileS."""
        self.compile_s += float(seconds)
        self.compile_events += events

    def finish(self, *, metric: Optional[float] = None, metric_name: str = "evalLoss",
               fingerprint: Optional[dict] = None, flops_per_step: Optional[float] = None,
               flops_source: Optional[str] = None, final_loss: Optional[float] = None, steps: Optional[int] = None,
               extra: Optional[dict] = None, print_it: bool = True) -> dict:
        """The end: the job's evaluation metric (`metric`, named `metric_name`; the comparison's agreement compares
        it), an output fingerprint (`bench.fingerprint`), the model FLOPs of one step where the job knows them. Prints
        the result document as the last line and writes it under result_dir; returns it."""
        flops = flops_per_step if flops_per_step is not None else self.flops_per_step
        source = flops_source or (self.flops_source if flops_per_step is None else "declared")
        done = max((r["step"] for r in self.records), default=self.from_step)
        doc = document(**self.facts, steps=steps or self.planned_steps or done, step_records=self.records,
                       saves=self.saves, restores=self.restores, restarts=self.restarts, compile_s=self.compile_s,
                       compile_events=self.compile_events, process_start=self.process_start,
                       started_at=self.started_at, finished_at=self._clock(), final_loss=final_loss, metric=metric,
                       metric_name=metric_name, fingerprint=fingerprint, flops_per_step=flops,
                       flops_source=source if flops is not None else None, extra=extra)
        write_result(doc, self.result_dir)
        if print_it:
            print_result(doc)
        return doc


def start(*, run: Optional[str] = None, side: Optional[str] = None, kind: Optional[str] = None, platform: str,
          args: Optional[argparse.Namespace] = None, **facts: Any) -> Run:
    """The run starts: prints its `start` event and returns the recorder of its steps. `kind`: what the job was asked
    to run on, "tpu" or "gpu", or None to leave it to the side it runs as; `platform`: what it runs on ("tpu",
    "gpu", "cpu"). `run`, `side`, `result_dir`,
    `seed` and `simulated` may come from `args` (parsed with `bench.add_arguments`). Keyword facts: devices,
    device_kind, processes, slices, simulated, steps, batch_size, seed, framework, framework_version, attempt,
    from_step, result_dir, flops_per_step, ray_version, jax_version, warmup_steps."""
    if args is not None:
        run = run or getattr(args, "run", None)
        side = side or getattr(args, "side", None)
        for name in ("result_dir", "seed", "simulate"):
            if getattr(args, name, None) is not None:
                facts.setdefault("simulated" if name == "simulate" else name, getattr(args, name))
    side = side or kind or "job"
    run = run or f"{side}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
    return Run(run=run, side=side, kind=kind, platform=platform, **facts).begin()


# --- reading -------------------------------------------------------------------------------------------------------

def objects(lines: Union[str, Iterable[str]]) -> Iterator[dict]:
    """Every JSON object of a log, one per line: Ray puts a prefix such as `(RayTrainWorker pid=123) ` before a
    worker's line and its log deduplication may append text after it, so a line is read from its first `{` and only
    the JSON object there counts."""
    for line in (lines.splitlines() if isinstance(lines, str) else lines):
        start = line.find("{")
        if start < 0:
            continue
        try:
            value, _ = _DECODER.raw_decode(line, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    for found in objects(text):
        if found.get("schema") == SCHEMA:
            log.result = found
        elif found.get("event") in EVENTS and _number(found.get("time")):
            log.events.append(found)
    return log


# --- the contract --------------------------------------------------------------------------------------------------

def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return {str: "str", list: "list", dict: "dict"}.get(type(value), type(value).__name__)


def _fits(value: Any, allowed: tuple[str, ...]) -> bool:
    kind = _type_of(value)
    # A whole number of seconds is still a number of seconds: JSON does not keep 2.0 apart from 2.
    return kind in allowed or (kind == "int" and "float" in allowed)


def _check_fields(where: str, value: Any, fields: dict[str, tuple[str, ...]]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {_type_of(value)}, expected an object"]
    problems = [f"{where}.{name}: missing" for name in fields if name not in value]
    problems += [f"{where}.{name}: {_type_of(value[name])} {value[name]!r}, expected {' or '.join(allowed)}"
                 for name, allowed in fields.items() if name in value and not _fits(value[name], allowed)]
    return problems


def _numbers(where: str, values: Iterable, kind: str = "float") -> list[str]:
    return [f"{where}[{i}]: {v!r} is not a finite {kind}" for i, v in enumerate(values)
            if not _fits(v, (kind,)) or (kind == "float" and not math.isfinite(v))]


def validate(doc: Any) -> list[str]:
    """Every way `doc` departs from the result document's contract, one line each; [] when it keeps it."""
    problems = _check_fields("result", doc, FIELDS)
    if not isinstance(doc, dict):
        return problems
    if doc.get("schema") not in (None, SCHEMA):
        problems.append(f"result.schema: {doc['schema']!r}, expected {SCHEMA!r}")
    if doc.get("kind") is not None and doc["kind"] not in KINDS:
        problems.append(f"result.kind: {doc['kind']!r}, expected one of {', '.join(KINDS)}")
    if "platform" in doc and doc["platform"] not in PLATFORMS:
        problems.append(f"result.platform: {doc['platform']!r}, expected one of {', '.join(PLATFORMS)}")
    times = doc.get("stepTimesS")
    if isinstance(times, list):
        problems += _numbers("result.stepTimesS", times)
        compiled = doc.get("compiledSteps")
        if isinstance(compiled, list):
            problems += _numbers("result.compiledSteps", compiled, "int")
            problems += [f"result.compiledSteps: index {i} is not one of the {len(times)} steps" for i in compiled
                         if isinstance(i, int) and not 0 <= i < len(times)]
    checkpoints = doc.get("checkpoints")
    if isinstance(checkpoints, dict):
        for name in ("saveS", "restoreS"):
            if not isinstance(checkpoints.get(name), list):
                problems.append(f"result.checkpoints.{name}: missing or not a list")
            else:
                problems += _numbers(f"result.checkpoints.{name}", checkpoints[name])
    loss = doc.get("loss")
    if isinstance(loss, list):
        problems += [f"result.loss[{i}]: {pair!r} is not [step, loss]" for i, pair in enumerate(loss)
                     if not (isinstance(pair, list) and len(pair) == 2 and _fits(pair[0], ("int",))
                             and _fits(pair[1], ("float",)))]
    fingerprint_ = doc.get("fingerprint")
    if isinstance(fingerprint_, dict):
        problems += _check_fields("result.fingerprint", fingerprint_,
                                  {"seed": ("int", "null"), "values": ("list",), "sha256": ("str",)})
        if isinstance(fingerprint_.get("values"), list):
            problems += _numbers("result.fingerprint.values", fingerprint_["values"])
    metric = doc.get("evalMetric")
    if isinstance(metric, dict):
        problems += _check_fields("result.evalMetric", metric, {"name": ("str",), "value": ("float",)})
    flops = doc.get("flopsPerStep")
    if _number(flops) and not (math.isfinite(flops) and flops > 0):
        problems.append(f"result.flopsPerStep: {flops!r} is not a positive finite number")
    for name, fields in (("restarts", RESTART_FIELDS), ("workers", WORKER_FIELDS)):
        if isinstance(doc.get(name), list):
            for i, item in enumerate(doc[name]):
                problems += _check_fields(f"result.{name}[{i}]", item, fields)
    return problems
