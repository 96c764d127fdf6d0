"""The minimal OpenAPI v3 documents kubectl needs for `apply`/`create` with default validation.

kubectl looks, per group-version, for a PATCH operation tagged with the kind's
`x-kubernetes-group-version-kind` that takes a `fieldValidation` query parameter; finding it, it
leaves validation to the server (`fieldValidation=Strict`). Strategic merge patch is not
advertised, so kubectl does not try to build one from schemas this document does not carry.
"""

from __future__ import annotations

from typing import Any

from mpijob.api.resources import ALL, Resource

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def gv_path(group: str, version: str) -> str:
    """`api/v1` or `apis/<group>/<version>`, as the root document keys them."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def root() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in ALL:
        key = gv_path(r.group, r.version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}"}
    return {"paths": paths}


def group_version(group: str, version: str) -> dict[str, Any] | None:
    """The document for one group-version, or None when it is not served."""
    resources = [r for r in ALL if r.group == group and r.version == version]
    if not resources:
        return None
    paths: dict[str, Any] = {}
    for r in resources:
        paths[_item_path(r)] = {"patch": _patch_operation(r)}
    title = "Kubernetes" if not group else group
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _item_path(r: Resource) -> str:
    prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
    scope = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{prefix}{scope}/{r.plural}/{{name}}"


def _patch_operation(r: Resource) -> dict[str, Any]:
    params = [
        {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
        {"name": "force", "in": "query", "schema": {"type": "boolean"}},
    ]
    if r.namespaced:
        params.insert(1, {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
    return {
        "operationId": f"patch{r.kind}",
        "parameters": params,
        "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in PATCH_TYPES}, "required": True},
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    }
