"""The OpenAPI walker on small documents of both forms: kinds found by GVK, references followed, lists
transparent, map values as `*`, recursion cut."""

from __future__ import annotations

from typing import Any

import pytest
from mpijob.api.core.openapi import crd_definition_name, field_paths, kind_schema, resolve, walk

GVK = {"group": "example.com", "version": "v1", "kind": "Thing"}


def _v2() -> dict[str, Any]:
    return {"definitions": {
        "com.example.v1.Thing": {
            "x-kubernetes-group-version-kind": [GVK], "type": "object",
            "properties": {
                "spec": {"$ref": "#/definitions/Spec", "description": "the spec"},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            },
        },
        "Spec": {"description": "Spec type", "type": "object", "properties": {
            "items": {"type": "array", "items": {"$ref": "#/definitions/Item"}},
            "byName": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Item"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        }},
        "Item": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/definitions/Item"}},  # recursive
        }},
    }}


def _v3(doc: dict[str, Any]) -> dict[str, Any]:
    """The same document as kube's v3 form: component refs, `allOf` around a ref with a description."""
    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: convert(v) for k, v in node.items() if k != "$ref"}
        if "$ref" in node:
            ref = {"$ref": node["$ref"].replace("#/definitions/", "#/components/schemas/")}
            return {"allOf": [ref], **out} if out else ref
        return out
    return {"components": {"schemas": convert(doc["definitions"])}}


@pytest.mark.parametrize("form", [_v2, lambda: _v3(_v2())], ids=["v2", "v3"])
def test_field_paths_follow_references_lists_and_maps(form: Any) -> None:
    doc = form()
    assert list(field_paths(doc, "example.com", "v1", "Thing")) == [
        "spec", "spec.items", "spec.items.name", "spec.items.children",
        "spec.byName", "spec.byName.*", "spec.byName.*.name", "spec.byName.*.children",
        "spec.labels",
        "status", "status.phase",
    ]
    paths = dict(walk(doc, "example.com", "v1", "Thing"))
    assert paths["spec"]["description"] == "the spec"  # the field's own description wins over the type's
    assert paths["spec"]["type"] == "object" and "items" in paths["spec"]["properties"]


def test_kind_lookup_and_resolve() -> None:
    doc = _v3(_v2())
    found = kind_schema(doc, "example.com", "v1", "Thing")
    assert found is not None and found[0] == "com.example.v1.Thing"
    assert kind_schema(doc, "example.com", "v2", "Thing") is None
    assert resolve(doc, {"allOf": [{"$ref": "#/components/schemas/Spec"}]})["description"] == "Spec type"
    with pytest.raises(KeyError):
        list(field_paths(doc, "", "v1", "Pod"))


def test_crd_definition_name_reverses_the_group() -> None:
    assert crd_definition_name("kueue.x-k8s.io", "v1beta2", "ClusterQueue") == "io.x-k8s.kueue.v1beta2.ClusterQueue"
    trainer = crd_definition_name("trainer.kubeflow.org", "v1alpha1", "TrainJob")
    assert trainer == "org.kubeflow.trainer.v1alpha1.TrainJob"
