"""The `paths` of the OpenAPI documents: every operation the server serves for every served kind, named,
parameterised and answered as kube-apiserver publishes them.

Per kind: list (and watch, as the list's `watch` parameter: the `/watch/` paths kube-apiserver still
lists, deprecated, are not served), create, read, replace, patch, delete and deletecollection, the
`status` subresource's read, replace and patch, a namespaced kind's list across all namespaces, and
pods' `log` and the GET of their connect subresources (`exec`, `attach`, `portforward`: a WebSocket
session; plain HTTP is answered with a Status saying so). No deletecollection of namespaces, as in
kube-apiserver.

operationIds are kube-apiserver's (`GetOperationIDAndTagsFromRoute`): the verb, the group without
`.k8s.io` and the version in camel case (`trainer.kubeflow.org` → `TrainerKubeflowOrg`, the core group
`Core`), then `Namespaced` where it applies, the kind and the subresource:
`listTrainerKubeflowOrgV1alpha1NamespacedTrainJob`, `createCoreV1NamespacedPod`,
`deleteCoreV1CollectionNamespacedPod`, `readCoreV1NamespacedPodLog`, `connectCoreV1GetNamespacedPodExec`.

Only the query parameters the server reads are listed, each with how it reads it. Two details are
kubectl's (see the package's docstring): each PATCH operation carries `fieldValidation` itself (kubectl
reads the operation's parameters, not the path's), except, in v2, the Namespace's; and strategic merge
patch is offered nowhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mpijob.api.core.resources import CONNECT_SUBRESOURCES, NAMESPACES, Resource
from mpijob.server.openapi.definitions import (
    DELETE_OPTIONS,
    PATCH,
    STATUS,
    V2_PREFIX,
    kind_definition,
    list_definition,
)

V3_PREFIX = "#/components/schemas/"
JSON = "application/json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
WATCH_STREAM = "application/json;stream=watch"


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # "path" or "query"
    type: str  # "string", "boolean" or "integer"
    description: str


_PARAMS = {p.name: p for p in (
    Param("name", "path", "string", "name of the object"),
    Param("namespace", "path", "string", "object name and auth scope, such as for teams and projects"),
    Param("continue", "query", "string",
          "The opaque token of a previous page's metadata.continue: the next page of the same list, as the "
          "store was at that list's resourceVersion. A token older than the kept history is 410 Expired."),
    Param("fieldSelector", "query", "string",
          "Only objects whose fields match: metadata.name, metadata.namespace and the kind's own selectable "
          "fields, with =, == and !=. Defaults to everything."),
    Param("labelSelector", "query", "string",
          "Only objects whose labels match (=, ==, !=, in, notin, exists, !exists). Defaults to everything."),
    Param("limit", "query", "integer",
          "At most this many items; metadata.continue then names the rest. 0 (the default) is no limit."),
    Param("resourceVersion", "query", "string",
          "For a watch, the version to send changes after (\"\" or \"0\": the current objects first); for a list, "
          "a version that must be valid. Not with continue, except \"0\"."),
    Param("timeoutSeconds", "query", "integer", "How long a watch stays open, in seconds."),
    Param("watch", "query", "boolean",
          "Watch for changes to the described objects and return them as a stream of add, update, and remove "
          "notifications instead of a list."),
    Param("dryRun", "query", "string",
          "When present, the request is checked but not persisted. The only value is All."),
    Param("fieldManager", "query", "string",
          "A name associated with the actor or entity that is making these changes."),
    Param("fieldValidation", "query", "string",
          "What to do with fields the kind does not have: Strict (refuse them), Warn (the default: drop them "
          "with a warning), Ignore (drop them silently). A custom resource's unknown field is always refused."),
    Param("force", "query", "boolean",
          "Force an apply request through conflicts with other field managers. Only for apply patches."),
    Param("container", "query", "string", "The container, when the pod has more than one."),
    Param("follow", "query", "boolean", "Follow the log stream until the container terminates."),
    Param("limitBytes", "query", "integer", "At most this many bytes of log."),
    Param("previous", "query", "boolean",
          "The previous terminated container's log (containers are not restarted here: the same log)."),
    Param("sinceSeconds", "query", "integer", "Only the log of the last this many seconds."),
    Param("tailLines", "query", "integer", "Only the last this many lines of the log."),
    Param("timestamps", "query", "boolean", "Begin every line of the log with an RFC 3339 timestamp."),
    Param("command", "query", "string", "The command to run, one argument per repetition of the parameter."),
    Param("stdin", "query", "boolean", "Redirect the standard input stream of the pod for this call."),
    Param("stdout", "query", "boolean", "Redirect the standard output stream of the pod for this call."),
    Param("stderr", "query", "boolean", "Redirect the standard error stream of the pod for this call."),
    Param("tty", "query", "boolean", "Allocate a terminal for this call."),
    Param("ports", "query", "integer", "The ports to forward, one per repetition of the parameter."),
)}
_LIST = ("continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "timeoutSeconds", "watch")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_LOG = ("container", "follow", "limitBytes", "previous", "sinceSeconds", "tailLines", "timestamps")
_CONNECT = {
    "exec": ("command", "container", "stderr", "stdin", "stdout", "tty"),
    "attach": ("container", "stderr", "stdin", "stdout", "tty"),
    "portforward": ("ports",),
}


def camel(s: str, capitalize: bool) -> str:
    """kube-openapi's `ToValidOperationID`: letters, `_` and (not first) digits kept, each other character
    dropped and the next letter upper-cased (`kueue.x-k8s.io` → `KueueXK8sIo`)."""
    out = []
    upper = capitalize
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i and ch.isdigit()):
            out.append(ch.upper() if upper else ch)
            upper = False
        else:
            upper = True
    return "".join(out)


def _group_words(r: Resource) -> str:
    return (r.group or "core").removesuffix(".k8s.io")


def tag(r: Resource) -> str:
    """kube-apiserver's tag of a group-version's operations: `core_v1`, `trainerKubeflowOrg_v1alpha1`."""
    return f"{camel(_group_words(r), False)}_{camel(r.version, False)}"


def operation_id(verb: str, r: Resource, rest: str) -> str:
    """`verb` + group + version + `rest` (`Namespaced<Kind>`, `Collection<Kind>`, ...), in kube's words."""
    return verb + camel(_group_words(r), True) + camel(r.version, True) + rest


def _prefix(r: Resource) -> str:
    return f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"


def collection_path(r: Resource) -> str:
    scope = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{_prefix(r)}{scope}/{r.plural}"


def item_path(r: Resource) -> str:
    return f"{collection_path(r)}/{{name}}"


@dataclass(frozen=True)
class _Op:
    method: str
    action: str  # x-kubernetes-action
    op_id: str
    description: str
    query: tuple[str, ...]
    responses: Mapping[str, tuple[str, tuple[str, ...]]]  # code -> (definition or "string", content types)
    body: str | None = None  # definition of the request body
    body_types: tuple[str, ...] = (JSON,)
    body_required: bool = True


def _operations(r: Resource) -> Iterator[tuple[str, list[str], _Op]]:
    """`(path, path parameters, operation)` of every operation served for `r`."""
    kind, ns = r.kind, ("Namespaced" if r.namespaced else "")
    obj, lst = kind_definition(r), list_definition(r)
    deleted = obj if (not r.builtin or r.plural in ("pods", "namespaces")) else STATUS  # crud._deleted_response
    scope = ["namespace"] if r.namespaced else []
    ok = {"200": (obj, (JSON,))}
    collection, item = collection_path(r), item_path(r)
    yield collection, scope, _Op("get", "list", operation_id("list", r, ns + kind),
                                 f"list or watch objects of kind {kind}", _LIST,
                                 {"200": (lst, (JSON, WATCH_STREAM))})
    yield collection, scope, _Op("post", "post", operation_id("create", r, ns + kind), f"create a {kind}", _WRITE,
                                 {"201": (obj, (JSON,))}, body=obj)
    if r is not NAMESPACES:
        yield collection, scope, _Op("delete", "deletecollection",
                                     operation_id("delete", r, f"Collection{ns}{kind}"),
                                     f"delete collection of {kind}", ("dryRun", "fieldSelector", "labelSelector"),
                                     {"200": (lst, (JSON,))}, body=DELETE_OPTIONS, body_required=False)
    if r.namespaced:
        yield f"{_prefix(r)}/{r.plural}", [], _Op("get", "list", operation_id("list", r, f"{kind}ForAllNamespaces"),
                                                  f"list or watch objects of kind {kind}", _LIST,
                                                  {"200": (lst, (JSON, WATCH_STREAM))})
    named = [*scope, "name"]
    yield item, named, _Op("get", "get", operation_id("read", r, ns + kind), f"read the specified {kind}", (), ok)
    yield item, named, _Op("put", "put", operation_id("replace", r, ns + kind), f"replace the specified {kind}",
                           _WRITE, ok, body=obj)
    yield item, named, _Op("patch", "patch", operation_id("patch", r, ns + kind),
                           f"partially update the specified {kind}", (*_WRITE, "force"),
                           {**ok, "201": (obj, (JSON,))}, body=PATCH, body_types=PATCH_TYPES)
    yield item, named, _Op("delete", "delete", operation_id("delete", r, ns + kind), f"delete a {kind}", ("dryRun",),
                           {"200": (deleted, (JSON,))}, body=DELETE_OPTIONS, body_required=False)
    if "status" in r.subresources:
        status = f"{item}/status"
        yield status, named, _Op("get", "get", operation_id("read", r, f"{ns}{kind}Status"),
                                 f"read status of the specified {kind}", (), ok)
        yield status, named, _Op("put", "put", operation_id("replace", r, f"{ns}{kind}Status"),
                                 f"replace status of the specified {kind}", _WRITE, ok, body=obj)
        yield status, named, _Op("patch", "patch", operation_id("patch", r, f"{ns}{kind}Status"),
                                 f"partially update status of the specified {kind}", (*_WRITE, "force"),
                                 {**ok, "201": (obj, (JSON,))}, body=PATCH, body_types=PATCH_TYPES)
    if "log" in r.subresources:
        yield f"{item}/log", named, _Op("get", "get", operation_id("read", r, f"{ns}{kind}Log"),
                                        f"read log of the specified {kind}", _LOG,
                                        {"200": ("string", ("text/plain",))})
    for sub in CONNECT_SUBRESOURCES:
        if sub in r.subresources:
            op_id = operation_id("connect", r, f"Get{ns}{kind}{sub.title()}")
            yield f"{item}/{sub}", named, _Op("get", "connect", op_id, f"connect GET requests to {sub} of {kind}",
                                              _CONNECT[sub], {"200": ("string", ("*/*",))})


def paths(resources: list[Resource] | tuple[Resource, ...], *, v2: bool) -> dict[str, dict[str, Any]]:
    """The `paths` of a v2 or v3 document serving `resources`."""
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        for path, path_params, op in _operations(r):
            item = out.setdefault(path, {"parameters": [_param(_PARAMS[p], v2) for p in path_params]})
            item[op.method] = _operation(r, op, v2)
    return out


def _param(p: Param, v2: bool) -> dict[str, Any]:
    typed = {"type": p.type, "uniqueItems": True} if v2 else {"schema": {"type": p.type, "uniqueItems": True}}
    out = {"name": p.name, "in": p.where, "description": p.description, **typed}
    return {**out, "required": True} if p.where == "path" else out


def _schema(definition: str, v2: bool) -> dict[str, Any]:
    if definition == "string":
        return {"type": "string"}
    return {"$ref": (V2_PREFIX if v2 else V3_PREFIX) + definition}


def _operation(r: Resource, op: _Op, v2: bool) -> dict[str, Any]:
    query = [q for q in op.query if not (v2 and q == "fieldValidation" and r is NAMESPACES and op.method == "patch")]
    out: dict[str, Any] = {"description": op.description, "operationId": op.op_id, "tags": [tag(r)]}
    params = [_param(_PARAMS[q], v2) for q in query]
    responses: dict[str, Any] = {}
    for code, (definition, types) in op.responses.items():
        text = {"200": "OK", "201": "Created"}[code]
        if v2:
            responses[code] = {"description": text, "schema": _schema(definition, True)}
        else:
            responses[code] = {"description": text,
                               "content": {t: {"schema": _schema(definition, False)} for t in types}}
    responses["401"] = {"description": "Unauthorized"}
    if v2:
        if op.body is not None:
            params.insert(0, {"name": "body", "in": "body", "required": op.body_required,
                              "schema": _schema(op.body, True)})
            out["consumes"] = list(op.body_types)
        out["produces"] = sorted({t for _, types in op.responses.values() for t in types})
        out["schemes"] = ["https"]
    elif op.body is not None:
        out["requestBody"] = {"content": {t: {"schema": _schema(op.body, False)} for t in op.body_types},
                              "required": op.body_required}
    out["parameters"] = params
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = {"group": r.group, "version": r.version, "kind": r.kind}
    return out
