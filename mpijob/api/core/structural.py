"""Structural schemas as kube-apiserver checks them, whatever the kind (Trainer's, MPI Operator's, OpenShift's,
Kueue's): `null` means unset, a field is named by its path, a value is quoted in JSON, and each schema error
becomes a `Cause` that says what is wrong and how to fix it."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

import jsonschema

from mpijob.api.core.errors import Cause


def strip_nulls(obj: Any) -> Any:
    """`null` means "unset" in Kubernetes JSON; drop it so it never trips a type check."""
    if isinstance(obj, dict):
        return {k: strip_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [strip_nulls(v) for v in obj]
    return obj


def prune_nulls(obj: Any, schema: Mapping[str, Any] | None = None) -> Any:
    """`obj` as kube-apiserver stores it: a field set to `null` is dropped unless its schema says `nullable:
    true` (structural defaulting's pruning of a custom resource; a built-in kind, decoded into Go types, has
    no null field at all: no `schema`). Items of a list are the schema's to judge, null or not."""
    if isinstance(obj, dict):
        props = (schema or {}).get("properties") or {}
        extra = (schema or {}).get("additionalProperties")
        out = {}
        for key, value in obj.items():
            sub = props.get(key) if key in props else extra
            sub = sub if isinstance(sub, Mapping) else None
            if value is not None:
                out[key] = prune_nulls(value, sub)
            elif sub is not None and sub.get("nullable"):
                out[key] = None
        return out
    if isinstance(obj, list):
        items = (schema or {}).get("items")
        return [prune_nulls(v, items if isinstance(items, Mapping) else None) for v in obj]
    return obj


def path_of(parts: Iterable[Any]) -> str:
    """`spec.trainer.env[0].name` from a jsonschema path."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def show(value: Any, limit: int = 80) -> str:
    """A value as an error message quotes it: JSON, cut at `limit` characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_WORDS: dict[str, str] = {
    "integer": "an integer",
    "string": "a string",
    "object": "an object (a mapping of fields)",
    "array": "a list",
    "boolean": "a boolean (true or false)",
    "number": "a number",
}


def _type_words(t: Any) -> str:
    if isinstance(t, list):
        types: list[str] = t
        return " or ".join(_TYPE_WORDS.get(x, x) for x in types)
    return _TYPE_WORDS.get(t, str(t))


def schema_causes(err: jsonschema.ValidationError) -> list[Cause]:
    """One schema error as the Causes kube-apiserver would give: the field, what is wrong, and the fix."""
    where = path_of(err.absolute_path)
    if err.validator == "additionalProperties":
        schema = cast("Mapping[str, Any]", err.schema)  # a mapping where this validator is
        allowed = sorted((schema.get("properties") or {}).keys())
        out = []
        for name in sorted(set(cast("Iterable[str]", err.instance)) - set(allowed)):
            fld = f"{where}.{name}" if where else name
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f'; did you mean "{close[0]}"?' if close else ""
            listed = ", ".join(allowed) if len(allowed) <= 20 else ", ".join(allowed[:20]) + ", ..."
            out.append(Cause(fld, f'unknown field "{fld}"{hint} (allowed here: {listed})'))
        return out
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else str(err.validator_value)
        fld = f"{where}.{missing}" if where else missing
        return [Cause(fld, f"Required value: set {fld}", "FieldValueRequired")]
    if err.validator == "type":
        return [Cause(where, f"Invalid value: {show(err.instance)}: must be {_type_words(err.validator_value)}",
                      "FieldValueTypeInvalid")]
    if err.validator == "enum":
        choices = ", ".join(show(v) for v in cast("Iterable[Any]", err.validator_value))
        return [Cause(where, f"Unsupported value: {show(err.instance)}: supported values: {choices}",
                      "FieldValueNotSupported")]
    return [Cause(where, f"Invalid value: {show(err.instance)}: {err.message}")]
