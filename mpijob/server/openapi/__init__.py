"""The OpenAPI documents: `/openapi/v2` (Swagger 2.0, JSON or gnostic protobuf) and `/openapi/v3`
(root + one document per group-version), with the real schema of every served kind.

Every operation served for every kind is listed, as kube-apiserver lists it (`operations`). What
kubectl relies on, besides the schemas (`kubectl explain` finds a kind by the
`x-kubernetes-group-version-kind` of its definition):

* v3, per kind, PATCH operations tagged with the kind's group-version-kind that take a
  `fieldValidation` query parameter: finding it, `apply`/`create` leave validation to the server
  (`fieldValidation=Strict`).
* v2, for a kind no v3 document has (an unserved kind): kubectl downloads the protobuf document, finds
  no such kind, falls back to client-side validation (which skips unknown kinds) and then fails with
  its own "no matches for kind". client-go asks for protobuf only and unmarshals whatever comes back
  (JSON fails to parse; a 406 sends it to `/swagger-2.0.0.pb-v1`, gone since 1.14), so that `Accept`
  gets protobuf; anything else gets JSON. The Namespace PATCH there does not list `fieldValidation`:
  if it did, kubectl would take an unknown kind for a CRD and list `customresourcedefinitions`, which
  this server does not serve.
* Neither document offers strategic merge patch, so a re-apply patches as before: a strategic merge
  patch from kubectl's built-in types for core kinds, a JSON merge patch for the others, never one
  built from these schemas (they carry no patch strategies).

Documents are built once and kept serialized.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from mpijob.api.core.resources import ALL
from mpijob.server.openapi import gnostic
from mpijob.server.openapi.definitions import (
    V2_PREFIX,
    closure,
    crd_kinds,
    definitions,
    references,
    v2_structural,
    v3_forms,
)
from mpijob.server.openapi.operations import V3_PREFIX, paths

# kube-openapi's names for the v2 protobuf: kubectl asks with the first, kube-apiserver answers with the second.
PROTOBUF_V2_TYPES = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
                     "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
PROTOBUF_V2 = PROTOBUF_V2_TYPES[1]
KUBERNETES_VERSION = "v1.32.0"  # info.version, as kube-apiserver reports its own version there


def gv_path(group: str, version: str) -> str:
    """`api/v1` or `apis/<group>/<version>`, as the root document keys them."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


@cache
def root() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in ALL:
        key = gv_path(r.group, r.version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}"}
    return {"paths": paths}


def wants_protobuf(accept: str) -> bool:
    """Whether an `Accept` header picks the protobuf form (the first listed of protobuf or JSON wins)."""
    for item in accept.split(","):
        media = item.split(";", 1)[0].strip().lower()
        if media in PROTOBUF_V2_TYPES:
            return True
        if media in ("application/json", "application/*", "*/*"):
            return False
    return False


def document_json(path: str) -> bytes | None:
    """The serialized v3 document at `/openapi/v3/<path>` (`api/v1`, `apis/<group>/<version>`), or None."""
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return group_version_json("", parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return group_version_json(parts[1], parts[2])
    return None


def group_version_json(group: str, version: str) -> bytes | None:
    """The serialized v3 document of a group-version (what the route answers), or None."""
    return _group_version_json(group, version) if gv_path(group, version) in root()["paths"] else None


@cache
def _group_version_json(group: str, version: str) -> bytes:
    resources = [r for r in ALL if r.group == group and r.version == version]
    defs = definitions()
    served = paths(resources, v2=False)
    names = closure(defs, sorted(references(paths(resources, v2=True), {})))
    memo: dict[int, Any] = {}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": served,
        "components": {"schemas": {name: v3_forms().get(name) or _v3(defs[name], memo) for name in sorted(names)}},
    }
    return _dump(doc)


def v2() -> dict[str, Any]:
    """The Swagger 2.0 document (parsed from its cached serialization: callers may modify it)."""
    return json.loads(v2_json())


def v2_shared() -> dict[str, Any]:
    """The Swagger 2.0 document itself, built once: read it, never change it (writes check against it)."""
    return _v2_document()


@cache
def v2_json() -> bytes:
    return _dump(_v2_document())


@cache
def v2_protobuf() -> bytes:
    """The same document as gnostic's `openapi_v2.Document` protobuf, the form kubectl asks for."""
    return gnostic.document(_v2_document())


@cache
def _v2_document() -> dict[str, Any]:
    defs = definitions()
    crds = crd_kinds()
    memo: dict[int, Any] = {}
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths(ALL, v2=True),
        "definitions": {name: v2_structural(defs[name], memo) if name in crds else defs[name]
                        for name in sorted(defs)},
    }


def _dump(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _v3(node: Any, memo: dict[int, Any]) -> Any:
    """A v2 schema in OpenAPI 3 form: component references, and a `$ref` with siblings (its
    description) wrapped in `allOf`, as kube-apiserver's v3 documents have them."""
    if isinstance(node, list):
        return [_v3(v, memo) for v in node]
    if not isinstance(node, dict):
        return node
    if id(node) not in memo:
        out = {k: _v3(v, memo) for k, v in node.items() if k != "$ref"}
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = {"$ref": V3_PREFIX + ref.removeprefix(V2_PREFIX)}
            out = {"allOf": [target], **out} if out else target
        memo[id(node)] = out
    return memo[id(node)]
