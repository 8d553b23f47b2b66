"""Outputs of values the program already holds or of resource outputs with plain values, built without the work
`Output.from_input` does for an arbitrary input: it makes an output of every key and item of a dict or list (a node
selector of four labels takes about a dozen outputs and tasks), and wraps an output in another `apply` that
unwraps inputs nested in its value (two outputs and a task each, for `Output.all` of resource IDs)."""

from __future__ import annotations

import asyncio
from typing import Any, Sequence, TypeVar

import pulumi
from pulumi.output import UNKNOWN, contains_unknowns

T = TypeVar("T")


def known(value: T) -> pulumi.Output[T]:
    """An output of a plain value (no outputs inside, no secret): known, depending on no resource."""
    loop = asyncio.get_event_loop()
    resolved, is_known, is_secret = loop.create_future(), loop.create_future(), loop.create_future()
    resolved.set_result(value)
    is_known.set_result(True)
    is_secret.set_result(False)
    return pulumi.Output(set(), resolved, is_known, is_secret)


def as_output(value: pulumi.Input[Any]) -> pulumi.Output[Any]:
    """`value` as an output: itself when it is one (a string output needs no unwrapping), else `Output.from_input`."""
    return value if isinstance(value, pulumi.Output) else pulumi.Output.from_input(value)


def gathered(outputs: Sequence[pulumi.Output[T]]) -> pulumi.Output[list[T]]:
    """`Output.all(*outputs)` for outputs whose values hold no inputs (resource IDs and names): the list of their
    values, known when all are, secret when any is, depending on every resource they depend on; one gather.

    As in `Output.all`, an output not known (in a preview) is UNKNOWN in the list: the SDK's own unwrapping applies
    with unknowns and turns the value of an unknown output into UNKNOWN (pulumi output.py, `apply`)."""
    outputs = list(outputs)

    async def state() -> tuple[set, list, bool, bool]:
        resources: set = set()
        values, known_all, secret_any = [], True, False
        for output in outputs:
            resources |= await output.resources()
            value, is_known = await output.future(with_unknowns=True), await output.is_known()
            values.append(value if is_known or contains_unknowns(value) else UNKNOWN)
            known_all = known_all and is_known
            secret_any = secret_any or await output.is_secret()
        return resources, values, known_all, secret_any

    together = asyncio.ensure_future(state())
    # The Output's four parts as futures that settle when the gather does; coroutines would be left unawaited (and
    # warned about) when the gather fails or the program ends early. An error is raised by the first part, the one
    # the Output awaits first; the others are cancelled, so no exception is left unretrieved.
    parts = [together.get_loop().create_future() for _ in range(4)]

    def settle(done: asyncio.Future) -> None:
        error = None if done.cancelled() else done.exception()
        for index, part in enumerate(parts):
            if done.cancelled() or (error is not None and index > 0):
                part.cancel()
            elif error is not None:
                part.set_exception(error)
            else:
                part.set_result(done.result()[index])

    together.add_done_callback(settle)
    return pulumi.Output(*parts)
