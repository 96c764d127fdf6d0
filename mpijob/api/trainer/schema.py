"""Structural schemas for Trainer kinds, generated from the published Python models.

The `kubeflow_trainer_api` pydantic models are the upstream API as shipped to Python users, so their JSON
schema (post-processed to Kubernetes semantics: unknown fields rejected, `null` = unset, quantities and
int-or-string accepted in both JSON forms) is what we check writes against. Built once per kind.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import schema_causes, strip_nulls

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


def structural_causes(kind: str, obj: dict) -> list[Cause]:
    """Every structural problem of `obj` as a kind of `kind`, sorted by field; [] when it conforms."""
    validator = _validator(kind)
    causes: list[Cause] = []
    for err in validator.iter_errors(strip_nulls(obj)):
        if err.validator == "anyOf" and err.context:
            # report the branch that got furthest rather than "not valid under any of the given schemas"
            best = max(err.context, key=lambda e: len(e.absolute_path))
            causes.extend(schema_causes(best))
        else:
            causes.extend(schema_causes(err))
    causes.sort(key=lambda c: c.field)
    return causes
