"""Problems of a configuration, one line each with its key path, and the error that carries them all at once."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Optional, Union

from pydantic import BaseModel, ValidationError

from .. import admission


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))


def show(value: Any) -> str:
    try:
        text = json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def location_arg(args: dict, root: str, problems: list[Problem]) -> Optional[str]:
    """The `location` argument where it is a zone or a region (else None, with the problem noted)."""
    location = args.get("location")
    try:
        if not isinstance(location, str):
            raise TypeError("must be a string")
        admission.check_location(location)
    except (TypeError, ValueError) as error:
        if location is not None:
            problems.append(Problem(f"{root}.location", f"{show(location)} is invalid: {error}"))
        return None
    return location


# --- turning pydantic's errors into one line per problem -----------------------------------------------------------


def validation_problems(exc: ValidationError, base: str, model: type[BaseModel], style: str) -> list[Problem]:
    """pydantic's errors of validating `model` at key path `base`, one Problem each, in the front end's spelling."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        path = base + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        kind = error["type"]
        given = show(error.get("input"))
        if kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1], style)
            message = f"unknown key{did_you_mean(loc[-1], allowed)} (given {given}); allowed: {', '.join(allowed)}"
        elif kind == "string_type" and type(error.get("input")) in (int, float):
            # YAML reads an unquoted 1.30 as the number 1.3: say so, rather than report the number as the value.
            message = f"YAML read the number {given}, not text: quote the value as you meant it" + (
                ' (an unquoted 1.30 is the number 1.3: write "1.30")'
                if isinstance(error["input"], float)
                else f' ("{given}")'
            )
        else:
            reason = error["msg"].removeprefix("Value error, ")
            message = f"{given} is invalid: {reason[0].lower()}{reason[1:]}"
        problems.append(Problem(path, message))
    return problems


def did_you_mean(key: Any, allowed: list[str]) -> str:
    """' (did you mean X?)' with the closest allowed key to a misspelt one, or '' when none is close."""
    import difflib

    close = (
        difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        or [a for a in allowed if a.lower() == str(key).lower()][:1]
    )
    return f" (did you mean {close[0]}?)" if close else ""


def _allowed_keys(model: Any, loc: tuple, style: str) -> list[str]:
    """The keys of the model found by walking `loc` from `model`, in the front end's spelling."""
    current = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            current = typing.get_args(current)[0] if typing.get_args(current) else Any
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = field.annotation if field else Any
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [(f.alias or n) if style == "stack" else n for n, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Optional[X] -> X."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    return annotation
