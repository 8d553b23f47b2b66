"""What workloads.train tells a reader, in plain data: its event lines while it runs and its result document at the
end (the contract with plan.compare's collector, docs/workloads.md "Result document"). No Ray or JAX import: the
collector and the project's tests read these with the project's own interpreter.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Iterator, Optional

SCHEMA = "ray-tpu-gke/train-result/v1"
EVENTS = ("start", "step", "checkpoint", "restore", "restart")

# Every field of the result document and the JSON types it may hold ("null" where the contract allows it).
FIELDS: dict[str, tuple[str, ...]] = {
    "schema": ("str",), "run": ("str",), "side": ("str",), "kind": ("str",), "platform": ("str",),
    "simulated": ("bool",), "devices": ("int",), "deviceKind": ("str",), "processes": ("int",), "slices": ("int",),
    "steps": ("int",), "batchSize": ("int",), "seed": ("int",), "stepTimesS": ("list",), "compiledSteps": ("list",),
    "compileS": ("float",), "compileEvents": ("int",), "processStartToFirstStepS": ("float",),
    "workerGroupStartS": ("float",), "checkpoints": ("dict",), "examplesPerS": ("float",), "loss": ("list",),
    "finalLoss": ("float",), "fingerprint": ("dict",), "restarts": ("list",), "workers": ("list",),
    "startedAt": ("float",), "finishedAt": ("float",), "rayVersion": ("str",), "jaxVersion": ("str",),
    "compilationCache": ("str", "null"),
}
KINDS = ("tpu", "gpu")
PLATFORMS = ("tpu", "gpu", "cpu")
RESTART_FIELDS = {"failureSeenAt": ("float", "null"), "resumedAt": ("float",), "fromStep": ("int",),
                  "stepsRedone": ("int",)}
WORKER_FIELDS = {"rank": ("int",), "slice": ("int",), "megascaleSliceId": ("str", "null"),
                 "megascaleNumSlices": ("str", "null"), "platform": ("str",)}


def event_line(event: str, **fields: Any) -> str:
    """One event as the line rank 0 prints: a JSON object whose "event" key names it."""
    if event not in EVENTS:
        raise ValueError(f"{event!r} is not one of {', '.join(EVENTS)}")
    return json.dumps({"event": event, **fields}, sort_keys=True)


def _objects(text: str) -> Iterator[dict]:
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            value = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def parse_events(log: str) -> list[dict]:
    """The event objects of a job's log, in order. Ray prefixes a worker's lines (`(RayTrainWorker pid=123) `), so
    the object starts at a line's first `{`."""
    return [value for value in _objects(log) if "event" in value]


def parse_result(log: str) -> Optional[dict]:
    """The result document of a job's log: the last JSON object with this schema (the driver prints it last)."""
    found = None
    for value in _objects(log):
        if value.get("schema") == SCHEMA:
            found = value
    return found


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
    if "kind" in doc and doc["kind"] not in KINDS:
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
    fingerprint = doc.get("fingerprint")
    if isinstance(fingerprint, dict):
        problems += _check_fields("result.fingerprint", fingerprint,
                                  {"seed": ("int",), "values": ("list",), "sha256": ("str",)})
        if isinstance(fingerprint.get("values"), list):
            problems += _numbers("result.fingerprint.values", fingerprint["values"])
    for name, fields in (("restarts", RESTART_FIELDS), ("workers", WORKER_FIELDS)):
        if isinstance(doc.get(name), list):
            for i, item in enumerate(doc[name]):
                problems += _check_fields(f"result.{name}[{i}]", item, fields)
    return problems


def _slice_indices(workers: list[dict]) -> dict[Optional[str], int]:
    names = sorted({w.get("sliceName") for w in workers if w.get("sliceName")})
    return {name: i for i, name in enumerate(names)}


def build(record: dict, *, run: str, side: str, kind: str, simulated: bool, slices: int, steps: int,
          batch_size: int, seed: int, process_start: float, fit_called: float, started_at: float,
          finished_at: float, ray_version: str, jax_version: Optional[str], error: Optional[str] = None) -> dict:
    """The result document from the run's ledger record (workloads.ledger.RunLedger.record) and what the driver
    measured itself. Pure: the tests build documents from hand-made records too."""
    executed = record["steps"]
    attempts = record["attempts"]
    last = attempts[-1] if attempts else {"attempt": None, "workers": []}
    final = [s for s in executed if s["attempt"] == last["attempt"]]
    final_s = sum(s["stepS"] for s in final)
    first_attempt_steps = [s for s in executed if s["attempt"] == executed[0]["attempt"]] if executed else []
    latest_loss = {s["step"]: s["loss"] for s in executed}  # a redone step's loss is its last run's
    finish = record.get("finish") or {}
    indices = _slice_indices(last["workers"])
    rank0 = last["workers"][0] if last["workers"] else {}
    by_event: dict[str, float] = {}
    for event, seconds, _attempt in record["compile"]:
        by_event[event] = by_event.get(event, 0.0) + seconds
    return {
        "schema": SCHEMA, "run": run, "side": side, "kind": kind,
        "platform": finish.get("platform") or rank0.get("platform"), "simulated": simulated,
        "devices": finish.get("devices"), "deviceKind": finish.get("deviceKind") or rank0.get("deviceKind"),
        "processes": finish.get("processes"), "slices": slices, "steps": steps, "batchSize": batch_size,
        "seed": seed,
        "stepTimesS": [s["stepS"] for s in executed],
        "compiledSteps": [i for i, s in enumerate(executed) if s["compiled"]],
        "compileS": sum(by_event.values()), "compileEvents": len(record["compile"]),
        "processStartToFirstStepS": (first_attempt_steps[0]["time"] - process_start) if executed else None,
        "workerGroupStartS": (attempts[0]["enteredAt"] - fit_called) if attempts else None,
        "checkpoints": {"saveS": list(record["checkpoints"]["saveS"]),
                        "restoreS": list(record["checkpoints"]["restoreS"])},
        "examplesPerS": batch_size * len(final) / final_s if final_s > 0 else None,
        "loss": [[step, latest_loss[step]] for step in sorted(latest_loss)],
        "finalLoss": finish.get("finalLoss"),
        "fingerprint": finish.get("fingerprint"),
        "restarts": [{"failureSeenAt": r["failureSeenAt"], "resumedAt": r["resumedAt"], "fromStep": r["fromStep"],
                      "stepsRedone": r["stepsRedone"]} for r in record["restarts"]],
        "workers": [{"rank": w["rank"], "slice": indices.get(w.get("sliceName"), 0),
                     "megascaleSliceId": w.get("megascaleSliceId"), "megascaleNumSlices": w.get("megascaleNumSlices"),
                     "platform": w.get("platform"), "sliceName": w.get("sliceName"),
                     "tpuWorkerId": w.get("tpuWorkerId"), "node": w.get("node")} for w in last["workers"]],
        "startedAt": started_at, "finishedAt": finished_at, "rayVersion": ray_version,
        "jaxVersion": finish.get("jaxVersion") or jax_version,
        "compilationCache": rank0.get("compilationCache"),
        # Additions to the contract (docs/workloads.md "Result document"):
        "compileByEventS": by_event,
        "attempts": len(attempts),
        "failuresSeen": [{"at": f["at"], "ranks": f["ranks"], "detail": f["detail"]} for f in record["failures"]],
        "error": error,
    }
