"""MPI Operator's MPIJob schema: the upstream CRD's `openAPIV3Schema`, served as it is and checked on every write.

The data (`mpijob_schema.json`) is generated from `kubeflow/mpi-operator`'s CRD by
`tools/gen_openapi_data.py`, never written by hand. Writes are checked the way kube-apiserver checks a
custom resource against a structural schema with `fieldValidation=Strict` (what kubectl sends): types,
enums and required fields, and an unknown field is refused rather than pruned, so a typo in a
manifest is said, not silently dropped. `status` is the controller's and is not checked.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.core.openapi import expand_shared
from mpijob.api.core.structural import schema_causes, strip_nulls

DATA = "mpijob_schema.json"
_DROP = ("description", "default", "format", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
         "x-kubernetes-map-type", "x-kubernetes-int-or-string", "x-kubernetes-validations")


@cache
def served() -> dict[str, Any]:
    """`{"<version>/<Kind>": openAPIV3Schema}`, shared subtrees expanded (as shared objects: read-only)."""
    data = json.loads(resources.files(__package__).joinpath(DATA).read_text(encoding="utf-8"))
    return expand_shared(data)


def _structural(node: Any) -> Any:
    """A CRD schema as JSON Schema with Strict field validation: an object that lists its properties and
    does not preserve unknown fields refuses others."""
    if isinstance(node, list):
        return [_structural(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _structural(v) for k, v in node.items() if k not in _DROP}
    if node.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("x-kubernetes-preserve-unknown-fields", None)
    elif "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = _structural(served()[f"{names.MPI_OPERATOR_VERSION}/{names.MPIJOB_KIND}"])
    schema["properties"]["status"] = {}  # the controller's
    schema["properties"]["metadata"] = {"type": "object"}  # judged by validation._metadata_causes
    return jsonschema.validators.validator_for(schema)(schema)


def structural_causes(obj: dict) -> list[Cause]:
    """Every schema problem of an MPIJob, sorted by field; [] when it conforms."""
    causes: list[Cause] = []
    for err in _validator().iter_errors(strip_nulls(obj)):
        if err.validator == "anyOf" and err.context:  # int-or-string: the branch that got furthest
            causes.extend(schema_causes(max(err.context, key=lambda e: len(e.absolute_path))))
        else:
            causes.extend(schema_causes(err))
    return sorted(causes, key=lambda c: c.field)
