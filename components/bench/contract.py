"""The result document's contract: its schema id, the events a job prints, the fields of the document and the JSON
types each may hold, and `validate`, every way a document departs from them (docs/workloads.md "Result document")."""

from __future__ import annotations

import math
from typing import Any, Iterable, TypeGuard

SCHEMA = "ray-tpu-gke/train-result/v1"
EVENTS = ("start", "step", "checkpoint", "restore", "restart")
KINDS = ("tpu", "gpu")
PLATFORMS = ("tpu", "gpu", "cpu")
REPORTER = "ray_tpu_gke.bench"

# Every field of the result document and the JSON types it may hold ("null" where the contract allows it).
FIELDS: dict[str, tuple[str, ...]] = {
    "schema": ("str",),
    "run": ("str",),
    "side": ("str",),
    "kind": ("str", "null"),
    "platform": ("str",),
    "simulated": ("bool",),
    "devices": ("int",),
    "deviceKind": ("str", "null"),
    "processes": ("int",),
    "slices": ("int",),
    "steps": ("int",),
    "batchSize": ("int", "null"),
    "seed": ("int",),
    "stepTimesS": ("list",),
    "compiledSteps": ("list",),
    "compileS": ("float",),
    "compileEvents": ("int",),
    "processStartToFirstStepS": ("float", "null"),
    "workerGroupStartS": ("float", "null"),
    "checkpoints": ("dict",),
    "examplesPerS": ("float", "null"),
    "loss": ("list",),
    "finalLoss": ("float", "null"),
    "fingerprint": ("dict", "null"),
    "restarts": ("list",),
    "workers": ("list",),
    "startedAt": ("float",),
    "finishedAt": ("float",),
    "rayVersion": ("str", "null"),
    "jaxVersion": ("str", "null"),
    "compilationCache": ("str", "null"),
    # Fourth round: any framework, the job's own evaluation metric, throughput in tokens, model FLOPs per step.
    "reporter": ("str",),
    "framework": ("str", "null"),
    "frameworkVersion": ("str", "null"),
    "tokensPerS": ("float", "null"),
    "tokensPerStep": ("int", "null"),
    "evalMetric": ("dict", "null"),
    "flopsPerStep": ("float", "null"),
    "flopsSource": ("str", "null"),
}
RESTART_FIELDS = {
    "failureSeenAt": ("float", "null"),
    "resumedAt": ("float",),
    "fromStep": ("int",),
    "stepsRedone": ("int",),
}
WORKER_FIELDS = {
    "rank": ("int",),
    "slice": ("int",),
    "megascaleSliceId": ("str", "null"),
    "megascaleNumSlices": ("str", "null"),
    "platform": ("str",),
}


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    names: dict[type, str] = {str: "str", list: "list", dict: "dict"}
    return names.get(type(value), type(value).__name__)


def _fits(value: Any, allowed: tuple[str, ...]) -> bool:
    kind = _type_of(value)
    # A whole number of seconds is still a number of seconds: JSON does not keep 2.0 apart from 2.
    return kind in allowed or (kind == "int" and "float" in allowed)


def _check_fields(where: str, value: Any, fields: dict[str, tuple[str, ...]]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {_type_of(value)}, expected an object"]
    problems = [f"{where}.{name}: missing" for name in fields if name not in value]
    problems += [
        f"{where}.{name}: {_type_of(value[name])} {value[name]!r}, expected {' or '.join(allowed)}"
        for name, allowed in fields.items()
        if name in value and not _fits(value[name], allowed)
    ]
    return problems


def _numbers(where: str, values: Iterable, kind: str = "float") -> list[str]:
    return [
        f"{where}[{i}]: {v!r} is not a finite {kind}"
        for i, v in enumerate(values)
        if not _fits(v, (kind,)) or (kind == "float" and not math.isfinite(v))
    ]


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
            problems += [
                f"result.compiledSteps: index {i} is not one of the {len(times)} steps"
                for i in compiled
                if isinstance(i, int) and not 0 <= i < len(times)
            ]
    checkpoints = doc.get("checkpoints")
    if isinstance(checkpoints, dict):
        for name in ("saveS", "restoreS"):
            if not isinstance(checkpoints.get(name), list):
                problems.append(f"result.checkpoints.{name}: missing or not a list")
            else:
                problems += _numbers(f"result.checkpoints.{name}", checkpoints[name])
    loss = doc.get("loss")
    if isinstance(loss, list):
        problems += [
            f"result.loss[{i}]: {pair!r} is not [step, loss]"
            for i, pair in enumerate(loss)
            if not (
                isinstance(pair, list) and len(pair) == 2 and _fits(pair[0], ("int",)) and _fits(pair[1], ("float",))
            )
        ]
    fingerprint_ = doc.get("fingerprint")
    if isinstance(fingerprint_, dict):
        problems += _check_fields(
            "result.fingerprint", fingerprint_, {"seed": ("int", "null"), "values": ("list",), "sha256": ("str",)}
        )
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
