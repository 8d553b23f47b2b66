"""Runs the real Pulumi program under mocks and records every registration, as `pulumi preview --json` would show it.

Shared by `python -m plan` and the tests, so what a reviewer reads is what the tests check.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import json
import logging
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as pulumi_resource
from pulumi.runtime import rpc, settings
from pulumi.runtime import stack as pulumi_stack
from pulumi.runtime.proto import resource_pb2, source_pb2
from ray_tpu_gke.spec.problems import ConfigError

from . import mocks, one_pass
from . import project as projects

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "ray-tpu-gke"

# Markers of the Pulumi wire format.
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_UNKNOWN = rpc.UNKNOWN


@dataclass
class Step:
    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    dependencies: list[str]
    inputs: dict[str, Any]
    protect: bool
    ignore_changes: list[str]
    delete_before_replace: bool
    replace_on_changes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "op": "create",
            "urn": self.urn,
            "newState": {
                "type": self.type,
                "name": self.name,
                "custom": self.custom,
                "parent": self.parent,
                "provider": self.provider,
                "dependencies": self.dependencies,
                "inputs": self.inputs,
                "options": {
                    "protect": self.protect,
                    "ignoreChanges": self.ignore_changes,
                    "deleteBeforeReplace": self.delete_before_replace,
                    "replaceOnChanges": self.replace_on_changes,
                },
            },
        }


@dataclass
class Plan:
    stack: str
    steps: list[Step]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    cost: dict[str, Any] | None = None  # the cost estimate (plan/cost.py attaches it), top-level `cost` in the JSON
    project: str = ""  # the Pulumi project's name (Pulumi.yaml `name`); empty: this repository's (PROJECT)
    notes: list[str] = field(default_factory=list)  # what the offline answers were (plan/mocks.py), not the project's

    def to_json(self) -> dict:
        summary = {"create": len(self.steps)} if self.steps else {}  # offline, everything is new
        out = {
            "project": self.project or PROJECT,
            "stack": self.stack,
            "steps": [s.to_json() for s in self.steps],
            "outputs": self.outputs,
            "changeSummary": summary,
        }
        if self.cost is not None:
            out["cost"] = self.cost
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"


def normalize(value: Any) -> Any:
    """Wire values as a reviewer reads them: whole numbers as integers, secrets masked, references as URNs."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return "[secret]"
        if sig == _RESOURCE_SIG:
            return value.get("urn")
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == _UNKNOWN:
        return "[unknown]"
    return value


def _provider_urn(reference: str) -> str | None:
    return reference.rsplit("::", 1)[0] if reference else None


def _complete(coroutine):
    """Finish a coroutine that never really waits (serializing plain mock state) without pumping the event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("mock state serialization unexpectedly awaited")


def _plain_struct(struct: struct_pb2.Struct) -> dict[str, Any] | None:
    """The struct as `rpc.deserialize_properties` reads it when it holds only strings, numbers, booleans, lists and
    maps (None otherwise): one walk instead of the three conversions a registration would take."""
    try:
        return _plain_fields(struct)
    except _NotPlain:
        return None


class _NotPlain(Exception):
    pass


def _plain_fields(struct: struct_pb2.Struct) -> dict[str, Any]:
    fields = struct.fields
    out = {}
    for key in fields:
        if key == _SIG_KEY:  # a secret, resource reference, asset or output value
            raise _NotPlain
        out[key] = _plain_value(fields[key])
    return out


def _plain_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if text == _UNKNOWN:
            raise _NotPlain
        return text
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return _plain_fields(value.struct_value)
    if kind == "list_value":
        return [_plain_value(v) for v in value.list_value.values]
    raise _NotPlain  # null: deserializing drops it


def _whole_numbers(value: Any) -> Any:
    """`normalize` of a plain value (no secrets, references or unknowns to mask): whole numbers as integers."""
    kind = type(value)
    if kind is dict:
        return {k: _whole_numbers(v) for k, v in value.items()}
    if kind is list:
        return [_whole_numbers(v) for v in value]
    if kind is float and value.is_integer():
        return int(value)
    return value


def _answer(state: dict[str, Any], plain: dict[str, Any], wire: struct_pb2.Struct) -> struct_pb2.Struct:
    """`serialize_properties(state)` for a mock state that echoes plain inputs: an input the mock handed back
    untouched is copied from the request as it came; only what the mock added or replaced is serialized.

    Keys go in the state's order, as serialize_properties puts them, so the SDK reads the answer in the same order.
    A mock hands back new values for what it changes (PlanMocks copies the inputs and adds keys), never edits a nested
    input in place: an input that is still the very object it was given is taken to be unchanged.
    """
    answer = struct_pb2.Struct()
    fields, source = answer.fields, wire.fields
    for key, value in state.items():
        if key in plain and plain[key] is value:
            fields[key].CopyFrom(source[key])
        else:
            one = _complete(rpc.serialize_properties({key: value}, {}))
            if key in one.fields:
                fields[key].CopyFrom(one.fields[key])
    return answer


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that records each registration in order, with inputs and options as the engine gets them."""

    def __init__(self, program_mocks: pulumi_mocks.Mocks):
        super().__init__(program_mocks)
        self.steps: list[Step] = []
        self.outputs: dict[str, Any] = {}
        self.stack_urn = ""
        self.declared: dict[str, int] = {}  # URN -> position in the program's own order of declaration

    def in_declaration_order(self) -> list[Step]:
        """The steps in the order the program declared its resources.

        The SDK registers a resource once its inputs and dependencies resolve, and awaits dependencies in the order of
        Python sets of resources (memory addresses), so the raw order can differ between two runs of a large stack.
        Declaration order is deterministic, and a valid registration order: a resource can only name a parent or a
        dependency that was declared before it.
        """
        last = len(self.declared)
        return sorted(self.steps, key=lambda step: self.declared.get(step.urn, last))

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack" and urn == self.stack_urn:
            return resource_pb2.RegisterResourceResponse(urn=urn)  # set_mocks' own stack, registered again
        has_object = request.HasField("object")
        # One walk of the inputs serves the plan, the mocks and the answer, unless they hold secrets, unknowns,
        # references or nulls: then the SDK's own conversions, which know those.
        plain = _plain_struct(request.object) if has_object else {}
        if plain is None:
            inputs = json_format.MessageToDict(request.object)
        self.steps.append(
            Step(
                urn=urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent or None,
                provider=_provider_urn(request.provider),
                dependencies=sorted(set(request.dependencies)),
                inputs=normalize(inputs) if plain is None else _whole_numbers(plain),
                protect=bool(request.protect),
                ignore_changes=list(request.ignoreChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
                replace_on_changes=list(request.replaceOnChanges),
            )
        )
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = urn
            return resource_pb2.RegisterResourceResponse(urn=urn)
        resource_args = pulumi_mocks.MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=rpc.deserialize_properties(request.object) if plain is None else plain,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom or False,
        )
        id_, state = self.mocks.new_resource(resource_args)
        if plain is None or not has_object:
            # The stock monitor pumps the event loop here; finishing the coroutine directly keeps one registration
            # one flat call, so thousands of resources neither recurse deeply nor race on threads.
            obj = _complete(rpc.serialize_properties(state, {}))
        else:
            obj = _answer(state, plain, request.object)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=obj)

    def RegisterResourceOutputs(self, request):
        if request.urn == self.stack_urn and request.HasField("outputs"):
            self.outputs = normalize(json_format.MessageToDict(request.outputs))
        return super().RegisterResourceOutputs(request)


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each monitor call on the event loop's own thread: registrations happen in one deterministic order."""

    def submit(self, fn, /, *args, **kwargs):
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # handed to the awaiting task
            future.set_exception(error)
        return future


def config_map(values: dict[str, Any]) -> dict[str, str]:
    """Stack config as the Pulumi engine hands it to a program: structured values as JSON text."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


def run_program(
    stack: str,
    values: dict[str, Any],
    secret_keys: list[str] | None = None,
    preview: bool = False,
    program: Path | None = None,
    project: str | None = None,
    quotas: list[dict] | None = None,
    quotas_source: str = "",
) -> Plan:
    """Run `__main__.py` (or `program`, of the Pulumi project named `project`) for a stack under mocks; return every
    registration in order. The project's name is what `pulumi.get_project()` and its config namespace are.
    `quotas`: the Cloud project's QuotaInfos (`mocks.load_quotas`) for the deploy-time quota check to read."""
    chosen = projects._current  # `ray-tpu-gke` in another project's folder (plan/project.py); None: this repository
    project = project or (chosen.name if chosen is not None else PROJECT)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_default_executor(_InlineExecutor(max_workers=1))
    unretrieved: list[dict] = []  # tasks that failed unawaited (below: said only when the run itself succeeds)
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    program_mocks = mocks.PlanMocks(
        project=values.get("gcp:project", "mock-project"), quotas=quotas, quotas_source=quotas_source
    )
    monitor = RecordingMonitor(program_mocks)
    warnings: list[str] = []
    pulumi.runtime.reset_options(project=project, stack=stack, preview=preview)
    pulumi_mocks.set_mocks(
        program_mocks,
        project=project,
        stack=stack,
        preview=preview,
        monitor=monitor,
        logger=_collecting_logger(warnings),
    )
    # set_mocks registers a stack of its own; run_in_stack makes the real one and records its outputs, as the CLI does.
    settings.set_root_resource(None)
    pulumi.runtime.set_all_config(config_map(values), secret_keys or [])
    program_path = program or (chosen.program if chosen is not None else ROOT / "__main__.py")
    sys.path.insert(0, str(program_path.parent))
    # A program of its own: every component's refused arguments in one pass (plan/one_pass.py); a stack file's
    # config is validated whole before its program runs.
    own_program = chosen is not None and not chosen.reads_stack_files
    refused: list = []
    try:
        with (
            _young_garbage_only(),
            _without_source_positions(),
            _declaration_order(monitor),
            one_pass.collecting() if own_program else contextlib.nullcontext([]) as refused,
        ):
            loop.run_until_complete(pulumi_stack.run_in_stack(lambda: runpy.run_path(str(program_path))))
        if refused:
            raise ConfigError(list(refused))
    except ConfigError:
        _end_pending(loop)
        raise
    except BaseException:
        _end_pending(loop)
        if refused:  # the program failed on what a refused component left unknown: the refusals are the cause
            raise ConfigError(list(refused)) from None
        raise
    finally:
        sys.path.remove(str(program_path.parent))
        loop.close()
        asyncio.set_event_loop(None)
    # A failed run raised its error above: the tasks that failed with it (a log line waiting on a URN the failed check
    # left unresolved) are that same error, which asyncio would otherwise print with a traceback as each is collected.
    for context in unretrieved:
        loop.default_exception_handler(context)
    return Plan(
        stack=stack,
        steps=monitor.in_declaration_order(),
        outputs=monitor.outputs,
        warnings=warnings,
        project=project,
        notes=program_mocks.notes,
    )


def _end_pending(loop) -> None:
    """The program failed (its error is raised to the caller): the outputs that depended on the failure are left
    pending; end them quietly instead of letting asyncio log each one as the loop closes."""
    loop.set_exception_handler(lambda _loop, _context: None)
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


@contextlib.contextmanager
def _declaration_order(monitor: RecordingMonitor):
    """Note each resource's URN, in the order the program constructs them; restored afterwards."""
    original = pulumi.Resource.__init__
    urns: dict[int, str] = {}  # id(resource) -> URN, for the children's URNs

    def init(self, t, name, custom, props=None, opts=None, *args, **kwargs):
        parent = opts.parent if opts is not None and opts.parent is not None else settings.get_root_resource()
        urn = monitor.make_urn(urns.get(id(parent), "") if parent is not None else "", t, name)
        urns[id(self)] = urn
        monitor.declared.setdefault(urn, len(monitor.declared))
        original(self, t, name, custom, props, opts, *args, **kwargs)

    pulumi.Resource.__init__ = init
    try:
        yield
    finally:
        pulumi.Resource.__init__ = original


# A registration allocates a few hundred tracked objects (futures, tasks, outputs) that live until the program ends.
_RUN_GC_THRESHOLD = (10_000, 20, 20)


@contextlib.contextmanager
def _young_garbage_only():
    """Collect only what the run allocates, and in larger batches; restored afterwards.

    With the default settings the collector's full passes keep walking the few hundred thousand objects that importing
    pulumi_gcp and pulumi_kubernetes leaves behind, and its young passes run every 700 allocations: together about
    40% of a large plan's time. Freezing moves the objects that exist before the run out of the collector's sight
    (unfreezing puts them back in the oldest generation); garbage the run makes is collected as before.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*_RUN_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


@contextlib.contextmanager
def _without_source_positions():
    """Spare the SDK the source position of each registration, which no plan shows; restored afterwards.

    For every resource the SDK walks the whole call stack (the harness, asyncio and any test runner below the
    program included), looks up each frame's source line and turns its file name into a URI, for the engine's
    diagnostics: 10-25% of a plan's time, more the deeper the caller. The mock monitor never reads it.
    """
    original = getattr(pulumi_resource, "_get_stack_trace", None)
    if original is None:  # an SDK that no longer works this way: nothing to spare
        yield
        return
    pulumi_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        pulumi_resource._get_stack_trace = original


def _collecting_logger(sink: list[str]) -> logging.Logger:
    """The mock engine logs `pulumi.log.warn` here; the plan shows them as warnings."""

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                sink.append(record.getMessage())

    logger = logging.Logger("ray-tpu-gke.plan", level=logging.WARNING)
    logger.addHandler(Collect())
    return logger
