"""The structural check of a Kueue object: its pydantic model's errors as kube-style field causes.

Each pydantic error becomes one `Cause` whose field is the JSON path (`spec.resourceGroups[0].flavors[1]
.name`) and whose message says what was given and what is accepted, the way kube-apiserver words
schema errors (`Unsupported value`, `Required value`, `unknown field`), so kubectl prints them as usual.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import path_of, show, strip_nulls
from mpijob.api.kueue.models import MODELS


def structural_causes(kind: str, obj: dict) -> list[Cause]:
    """Every schema problem of `obj` as a `kind`, sorted by field; [] when it conforms."""
    model = MODELS[kind]
    try:
        model.model_validate(strip_nulls(obj))
    except ValidationError as exc:
        causes = [c for err in exc.errors(include_url=False) for c in _cause(model, err)]
        return sorted(causes, key=lambda c: c.field)
    return []


_TYPES = {
    "int_type": "an integer",
    "string_type": "a string",
    "bool_type": "a boolean (true or false)",
    "list_type": "a list",
    "dict_type": "an object (a mapping of fields)",
    "model_type": "an object (a mapping of fields)",
    "model_attributes_type": "an object (a mapping of fields)",
}


def _cause(model: type[BaseModel], err: Any) -> list[Cause]:
    loc = tuple(err["loc"])
    where, kind, given, ctx = path_of(loc), err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f'; did you mean "{close[0]}"?' if close else ""
        return [Cause(where, f'unknown field "{where}"{hint} (allowed here: {", ".join(allowed)})')]
    if kind == "missing":
        wanted = _describe(_type_at(model, loc))
        return [Cause(where, f"Required value: set {where} ({wanted}); it has no default", "FieldValueRequired")]
    if kind in _TYPES:
        return [Cause(where, f"Invalid value: {show(given)}: must be {_TYPES[kind]}", "FieldValueTypeInvalid")]
    if kind == "literal_error":
        choices = str(ctx.get("expected", "")).replace("'", '"').replace(" or ", ", ")
        return [Cause(where, f"Unsupported value: {show(given)}: supported values: {choices}",
                      "FieldValueNotSupported")]
    if kind == "string_pattern_mismatch":
        dots = "" if "\\." not in str(ctx.get("pattern", "")) else " (and '.' between parts)"
        return [Cause(where, f"Invalid value: {show(given)}: must be a lower-case RFC 1123 name: letters, digits, "
                             f"'-'{dots}, starting and ending with a letter or digit (e.g. 'team-a')")]
    if kind in ("too_long", "string_too_long"):
        limit, unit = ctx.get("max_length"), "characters" if kind.startswith("string") else "items"
        return [Cause(where, f"Too long: must have at most {limit} {unit}; remove some", "FieldValueTooLong")]
    if kind in ("too_short", "string_too_short"):
        limit = ctx.get("min_length")
        unit = "character" if kind.startswith("string") else "item"
        return [Cause(where, f"Required value: must have at least {limit} {unit}{'s' if limit != 1 else ''}",
                      "FieldValueRequired")]
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = ctx.get("ge", ctx.get("le"))
        word = "greater than or equal to" if kind == "greater_than_equal" else "less than or equal to"
        return [Cause(where, f"Invalid value: {show(given)}: must be {word} {bound}")]
    if kind == "value_error":
        return [Cause(where, f"Invalid value: {show(given)}: {ctx.get('error', err['msg'])}")]
    return [Cause(where, f"Invalid value: {show(given)}: {err['msg']}")]


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The camelCase field names of the model found at `loc` (for "allowed here" and "did you mean")."""
    current = _type_at(model, loc)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(f.alias or n for n, f in current.model_fields.items())
    return []


def _describe(tp: Any) -> str:
    """What a required field wants, for "Required value" messages."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "an object with " + ", ".join(sorted(f.alias or n for n, f in tp.model_fields.items()
                                                    if f.is_required()) or ["its fields"])
    if origin is typing.Literal:
        return "one of " + ", ".join(f'"{v}"' for v in typing.get_args(tp))
    if tp is int:
        return "an integer"
    if tp is str:
        return "a string"
    if origin is list:
        return "a list"
    if origin is dict or tp is dict:
        return "an object"
    return 'a value such as 8, "500m" or "64Gi"' if tp is Any else "a value"


def _type_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[-1] if args else Any
        elif isinstance(current, type) and issubclass(current, BaseModel):
            found = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
            current = found.annotation if found else Any
        else:
            args = typing.get_args(current)
            current = args[-1] if args else Any
    return _unwrap(current)


def _unwrap(tp: Any) -> Any:
    """Strip Annotated[...] and `X | None` to reach the type that holds fields or items."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            rest = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = rest[0] if len(rest) == 1 else tp
            if len(rest) != 1:
                return tp
        else:
            return tp
