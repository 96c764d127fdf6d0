"""Structural schemas for Trainer kinds, generated from the published Python models.

The `kubeflow_trainer_api` pydantic models are the upstream API as shipped to Python users, so their JSON
schema (post-processed to Kubernetes semantics: unknown fields rejected, `null` = unset, quantities and
int-or-string accepted in both JSON forms) is what we check writes against. Built once per kind.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, cast

import jsonschema

from mpijob.api.core.errors import Cause

_MODELS = {
    "TrainJob": "TrainerV1alpha1TrainJob",
    "TrainingRuntime": "TrainerV1alpha1TrainingRuntime",
    "ClusterTrainingRuntime": "TrainerV1alpha1ClusterTrainingRuntime",
}
_DROP = ("title", "description", "default")


def kinds() -> tuple[str, ...]:
    return tuple(_MODELS)


def _simplify(node: Any) -> Any:
    """Kubernetes semantics on a pydantic schema: strip docs, collapse Optional, forbid unknown fields."""
    if isinstance(node, list):
        return [_simplify(x) for x in node]
    if not isinstance(node, dict):
        return node
    props = node.get("properties")
    if isinstance(props, dict) and "actual_instance" in props:
        # openapi-generator's oneOf wrapper (Quantity, IntOrString): accept the inner JSON types directly.
        types = [t["type"] for t in props["actual_instance"].get("anyOf", []) if t.get("type") != "null"]
        return {"type": types}
    out = {k: _simplify(v) for k, v in node.items() if k not in _DROP}
    any_of = out.get("anyOf")
    if isinstance(any_of, list):
        rest = [s for s in any_of if s != {"type": "null"}]
        if len(rest) == 1:
            del out["anyOf"]
            out.update(rest[0])
        else:
            out["anyOf"] = rest
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    from kubeflow_trainer_api import models

    model = getattr(models, _MODELS[kind])
    schema = _simplify(model.model_json_schema(by_alias=True))
    if kind == "TrainJob":
        schema["properties"]["status"] = {}  # controllers own status; only spec/metadata are checked
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def strip_nulls(obj: Any) -> Any:
    """`null` means "unset" in Kubernetes JSON; drop it so it never trips a type check."""
    if isinstance(obj, dict):
        return {k: strip_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [strip_nulls(v) for v in obj]
    return obj


def path_of(parts: Iterable[Any]) -> str:
    """`spec.trainer.env[0].name` from a jsonschema path."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def show(value: Any, limit: int = 80) -> str:
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


def _causes(err: jsonschema.ValidationError) -> list[Cause]:
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


def structural_causes(kind: str, obj: dict) -> list[Cause]:
    """Every structural problem of `obj` as a kind of `kind`, sorted by field; [] when it conforms."""
    validator = _validator(kind)
    causes: list[Cause] = []
    for err in validator.iter_errors(strip_nulls(obj)):
        if err.validator == "anyOf" and err.context:
            # report the branch that got furthest rather than "not valid under any of the given schemas"
            best = max(err.context, key=lambda e: len(e.absolute_path))
            causes.extend(_causes(best))
        else:
            causes.extend(_causes(err))
    causes.sort(key=lambda c: c.field)
    return causes
