"""Generic REST verbs for every served resource: list, get, create, update, patch, delete, plus the
`status` subresource. Kind-specific behaviour belongs in `mpijob.api.core.validation`, not here.

A resource served at an older version (Kueue v1beta1) is stored at its storage version: bodies are
converted up (`to_storage`) before admission, and every object sent back is converted down
(`from_storage`, in `_render` and the list/delete answers); store calls always take the storage resource.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import Obj, names
from mpijob.api.core import bare_pods, errors, tables
from mpijob.api.core.resources import (
    CONNECT_SUBRESOURCES,
    MPIJOBS,
    NAMESPACES,
    PODS,
    TRAINJOBS,
    Resource,
    served_versions,
    storage,
)
from mpijob.api.core.selectors import parse_fields, parse_labels
from mpijob.api.kueue.conversion import from_storage, to_storage
from mpijob.server import admission, authz, bootstrap, fieldmanager, patch
from mpijob.server.audit import current_user
from mpijob.server.http import (
    json_response,
    parse_bool,
    parse_int,
    parse_resource_version,
    read_body,
    read_object,
    success_status,
    wants_table,
)
from mpijob.server.routes import connect, logs, watch
from mpijob.server.routes.paths import Target
from mpijob.server.state import Cluster
from mpijob.store.objects import now

PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kubeflow-system"})


async def handle(request: Request, cluster: Cluster, t: Target) -> Response:
    method = request.method
    if t.subresource in CONNECT_SUBRESOURCES:  # a session is a WebSocket (app.py); this is HTTP, or SPDY's upgrade
        assert t.name is not None
        connect.check(cluster, t.namespace or "", t.name, t.subresource, request.query_params)
        raise connect.spdy_refusal(t.subresource)
    if t.subresource == "log":
        if method != "GET":
            raise errors.method_not_allowed(f"the server does not allow {method} on pods/log")
        return await logs.serve(request, cluster, t)
    if t.name is None:
        if method == "GET":
            return await list_objects(request, cluster, t)
        if method == "POST":
            return await create(request, cluster, t)
        if method == "DELETE":
            return await delete_collection(request, cluster, t)
    elif method == "GET":
        return get(request, cluster, t)
    elif method == "PUT":
        return await update(request, cluster, t)
    elif method == "PATCH":
        return await patch_object(request, cluster, t)
    elif method == "DELETE":
        return await delete(request, cluster, t)
    raise errors.method_not_allowed(f"the server does not allow this method on the requested resource ({method})")


def _dry_run(request: Request) -> bool:
    values = request.query_params.getlist("dryRun")
    for v in values:
        if v != "All":
            raise errors.bad_request(f"invalid dryRun value {v!r}: the only supported value is All")
    return bool(values)


def _render(request: Request, res: Resource, obj: Obj, status: int = 200, warnings: list[str] | None = None
            ) -> Response:
    obj = from_storage(res, obj)
    if wants_table(request):
        include = request.query_params.get("includeObject", "Metadata")
        return json_response(tables.table(res, [obj], obj["metadata"].get("resourceVersion", ""),
                                          include_object=include), status, warnings)
    return json_response(obj, status, warnings)


async def list_objects(request: Request, cluster: Cluster, t: Target) -> Response:
    """A list, or a watch with `watch=true`; `limit`/`continue` page a list as kube does (not a watch)."""
    q = request.query_params
    labels, fields = parse_labels(q.get("labelSelector")), parse_fields(q.get("fieldSelector"))
    parse_resource_version(q.get("resourceVersion"))
    limit = parse_int(q.get("limit"), "limit") or 0
    if limit < 0:
        raise errors.bad_request(f"invalid value for query parameter limit={q['limit']!r}: use 0 or more")
    if parse_bool(q.get("watch"), "watch"):
        return watch.stream(request, cluster, t.res, t.namespace, labels, fields,
                            since=q.get("resourceVersion"),
                            timeout=parse_int(q.get("timeoutSeconds"), "timeoutSeconds"),
                            table=wants_table(request), include_object=q.get("includeObject", "Metadata"))
    token = q.get("continue", "")
    if token and q.get("resourceVersion", "") not in ("", "0"):  # kube lets "0" through: clients send it
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    page = cluster.store.list_page(t.res, t.namespace, labels, fields, limit=limit, token=token)
    items = [from_storage(t.res, o) for o in page.items]
    meta: Obj = {"resourceVersion": page.resource_version}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    if wants_table(request):
        table = tables.table(t.res, items, page.resource_version, include_object=q.get("includeObject", "Metadata"))
        return json_response({**table, "metadata": meta})
    return json_response({"kind": f"{t.res.kind}List", "apiVersion": t.res.api_version,
                          "metadata": meta, "items": items})


def get(request: Request, cluster: Cluster, t: Target) -> Response:
    assert t.name is not None
    return _render(request, t.res, cluster.store.get(t.res, t.namespace or "", t.name))


def _require_namespace(cluster: Cluster, res: Resource, namespace: str) -> None:
    if res.namespaced and cluster.store.try_get(NAMESPACES, "", namespace) is None:
        raise errors.not_found("namespaces", namespace)


def _fresh(res: Resource, obj: Obj) -> Obj:
    """What a create keeps of a client's object: no server-owned metadata, status per kind."""
    meta = obj["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
        meta.pop(key, None)
    if res.group and "status" in res.subresources:
        obj.pop("status", None)  # custom resources with a status subresource start without one
    if res is NAMESPACES:
        obj["status"] = {"phase": "Active"}
    return obj


def _requester(request: Request, res: Resource, obj: Obj, old: Obj | None) -> None:
    """A TrainJob's `names.ANNOTATION_REQUESTER` belongs to the server: at creation it is the
    authenticated user, whatever the client sent; afterwards it keeps its stored value (restored
    silently, as kube-apiserver restores `metadata.creationTimestamp`, so `kubectl replace` of a
    manifest without it still works), so no client can forge or rewrite who created a job."""
    if res.key not in (TRAINJOBS.key, MPIJOBS.key):  # an MPIJob's pods are admitted for its creator too
        return
    meta = obj["metadata"]
    annotations = {} if meta.get("annotations") is None else meta["annotations"]
    if not isinstance(annotations, dict):
        return  # not a map: admission refuses the object
    if old is None:
        value = current_user(request.scope)[0]
    else:
        value = (old["metadata"].get("annotations") or {}).get(names.ANNOTATION_REQUESTER, "")
    annotations.pop(names.ANNOTATION_REQUESTER, None)
    if value:
        annotations[names.ANNOTATION_REQUESTER] = value
    if annotations or "annotations" in meta:
        meta["annotations"] = annotations


async def create(request: Request, cluster: Cluster, t: Target, body: Obj | None = None, applied: bool = False
                 ) -> Response:
    """Create; `applied` when `body` is the result of an apply, whose `managedFields` are already set."""
    res = t.res
    if res.namespaced and t.namespace is None:
        raise errors.method_not_allowed(f"{res.plural} are namespaced: POST to .../namespaces/<ns>/{res.plural}")
    obj = body if body is not None else await read_object(request)
    if not applied:
        fieldmanager.manager(request, "CreateOptions")
    admission.check_type(res, obj)
    admission.check_namespace(res, obj, t.namespace)
    admission.generate_name(obj)
    name = admission.check_name(obj)
    ns = obj["metadata"].get("namespace", "")
    _require_namespace(cluster, res, ns)
    stored, obj = to_storage(res, obj)
    dropped = admission.unknown_fields(res, obj, request.query_params.get("fieldValidation"))
    _requester(request, stored, obj, None)
    admission.uid_ranges(cluster.store, stored, obj, None)
    obj = admission.admit(stored, _fresh(stored, obj), None)
    if not applied:
        fieldmanager.record(obj, fieldmanager.track(request, res, from_storage(res, obj), None))
    admission.check_references(cluster.store, stored, obj, authz.user_of(request.scope), cluster.sandbox_mode,
                               cluster.controllers)
    authz.check_escalation(cluster.store, request.scope, stored, obj)
    if cluster.store.try_get(stored, ns, name) is not None:
        raise errors.already_exists(res.plural, name, res.group)
    warnings = dropped + admission.warnings(stored, obj, None, cluster.sandbox_mode, cluster.controllers)
    if _dry_run(request):
        meta = obj["metadata"]
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
        return _render(request, res, obj, 201, warnings)
    created = cluster.store.create(stored, obj, ns)
    if stored is NAMESPACES:  # kube's controllers: its `default` ServiceAccount, `kube-root-ca.crt`
        bootstrap.namespace_defaults(cluster.store, name, cluster.home.ca_pem())
    return _render(request, res, created, 201, warnings)


def _write(request: Request, cluster: Cluster, res: Resource, client_res: Resource, new: Obj, old: Obj,
           status: bool, applied: bool = False) -> Response:
    """Admit and store an update (answered in the client's version `client_res`, with kube's warnings), its
    `managedFields` recorded unless an apply (`applied`) set them; finish a pending deletion once its last
    finalizer is gone."""
    dropped = admission.unknown_fields(client_res, new, request.query_params.get("fieldValidation"))
    _requester(request, res, new, old)
    admission.uid_ranges(cluster.store, res, new, old)
    new = admission.admit(res, new, old)
    if not applied:
        fieldmanager.record(new, fieldmanager.track(request, client_res, from_storage(client_res, new),
                                                    from_storage(client_res, old), "status" if status else ""))
    authz.check_escalation(cluster.store, request.scope, res, new)
    warned = [] if status else admission.warnings(res, new, old, cluster.sandbox_mode, cluster.controllers)
    warnings = dropped + warned
    if _dry_run(request):
        return _render(request, client_res, new, warnings=warnings)
    stored = cluster.store.update(res, new, status=status, managed_fields=True)
    meta = stored["metadata"]
    if meta.get("deletionTimestamp") and not meta.get("finalizers"):
        stored = cluster.store.delete(res, meta.get("namespace", ""), meta["name"])
    return _render(request, client_res, stored, warnings=warnings)


async def update(request: Request, cluster: Cluster, t: Target) -> Response:
    assert t.name is not None
    res = t.res
    obj = await read_object(request)
    fieldmanager.manager(request, "UpdateOptions")
    admission.check_type(res, obj)
    admission.check_namespace(res, obj, t.namespace)
    admission.check_name(obj, t.name)
    stored, obj = to_storage(res, obj)
    old = cluster.store.get(stored, t.namespace or "", t.name)
    return _write(request, cluster, stored, res, obj, old, t.subresource == "status")


def _keep_identity(res: Resource, patched: Any, old: Obj) -> Obj:
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    meta = patched.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("the patch removed metadata")
    for key in ("name", "namespace"):
        if meta.get(key) != old["metadata"].get(key):
            raise errors.bad_request(f"metadata.{key} cannot be changed by a patch "
                                     f"({old['metadata'].get(key)!r} → {meta.get(key)!r})")
    patched["apiVersion"], patched["kind"] = res.api_version, res.kind
    return patched


async def patch_object(request: Request, cluster: Cluster, t: Target) -> Response:
    assert t.name is not None
    res, ns = t.res, t.namespace or ""
    ctype = request.headers.get("content-type", "").split(";")[0].strip()
    if ctype == patch.APPLY:
        return await _apply(request, cluster, t)
    appliers: dict[str, Callable[[Any, Any], Any]] = {patch.MERGE: patch.merge_patch,
                                                      patch.JSON_PATCH: patch.json_patch}
    if res.builtin:  # strategic merge needs Go struct tags: built-in kinds only, as in kube
        appliers[patch.STRATEGIC] = patch.strategic(res.group)
    if ctype not in appliers:
        raise errors.ApiError(415, "UnsupportedMediaType",
                              f"the body of the request was in an unknown format - accepted media types "
                              f"include: {', '.join([*appliers, patch.APPLY])}")
    body = await read_body(request)
    fieldmanager.manager(request, "PatchOptions")
    old = cluster.store.get(res, ns, t.name)
    seen = from_storage(res, old)  # a patch applies to the object as the client's version shows it
    stored, new = to_storage(res, _keep_identity(res, appliers[ctype](seen, body), seen))
    return _write(request, cluster, stored, res, new, old, t.subresource == "status")


async def _apply(request: Request, cluster: Cluster, t: Target) -> Response:
    """Server-side apply (`fieldmanager.apply`): creates the object when missing, else merges the applied
    configuration in by field ownership."""
    assert t.name is not None
    res, ns = t.res, t.namespace or ""
    applied = await read_object(request, yaml_ok=True)
    fieldmanager.manager(request, "PatchOptions", apply=True)
    admission.check_type(res, applied)
    admission.check_namespace(res, applied, t.namespace)
    admission.check_name(applied, t.name)
    old = cluster.store.try_get(res, ns, t.name)
    if old is None:
        if t.subresource == "status":
            raise errors.not_found(res.plural, t.name, res.group)
        return await create(request, cluster, t, body=fieldmanager.apply(request, res, None, applied), applied=True)
    applied["metadata"].pop("resourceVersion", None)
    seen = from_storage(res, old)
    merged = fieldmanager.apply(request, res, seen, applied, t.subresource or "")
    stored, new = to_storage(res, _keep_identity(res, merged, seen))
    return _write(request, cluster, stored, res, new, old, t.subresource == "status", applied=True)


async def _delete_options(request: Request) -> Obj:
    raw = await request.body()
    if not raw.strip():
        return {}
    body = await read_body(request)
    return body if isinstance(body, dict) else {}


def _check_preconditions(res: Resource, obj: Obj, options: Obj) -> None:
    pre = options.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise errors.bad_request(f"DeleteOptions.preconditions must be an object such as "
                                 f'{{"uid": "...", "resourceVersion": "..."}}, not {pre!r}')
    meta = obj["metadata"]
    for key in ("uid", "resourceVersion"):
        if pre.get(key) and pre[key] != meta.get(key):
            raise errors.conflict(res.plural, meta["name"],
                                  f"Precondition failed: {key} in precondition: {pre[key]}, {key} in object "
                                  f"meta: {meta.get(key)}", res.group)


def _delete_one(request: Request, cluster: Cluster, res: Resource, ns: str, name: str, options: Obj) -> Obj:
    """Delete (or mark) one object; returns it as stored: callers convert it for the client."""
    res = storage(res)
    obj = cluster.store.get(res, ns, name)
    _check_preconditions(res, obj, options)
    if res is NAMESPACES and name in PROTECTED_NAMESPACES:
        raise errors.forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
    dry = _dry_run(request) or options.get("dryRun") == ["All"]
    meta = obj["metadata"]
    if res is PODS and cluster.manager is not None and not dry and (grace := bare_pods.deletion_grace(obj, options)):
        return cluster.store.mark_deleting(res, ns, name, grace)  # its kubelet stops it, then deletes it
    if meta.get("finalizers"):
        if dry or meta.get("deletionTimestamp"):
            return obj
        return cluster.store.mark_deleting(res, ns, name)
    if dry:
        return obj
    if res is NAMESPACES:
        for other in served_versions():
            if other.namespaced:
                for item in cluster.store.list(other, name)[0]:
                    cluster.store.delete(other, name, item["metadata"]["name"])
    return cluster.store.delete(res, ns, name)


def _deleted_response(res: Resource, obj: Obj) -> Obj:
    """Custom resources and pods answer with the object; other built-in kinds with Status Success."""
    if not res.builtin or res.plural in ("pods", "namespaces") or obj["metadata"].get("deletionTimestamp"):
        return obj
    meta = obj["metadata"]
    return success_status(meta["name"], res.group, res.plural, meta.get("uid", ""))


async def delete(request: Request, cluster: Cluster, t: Target) -> Response:
    assert t.name is not None
    if t.subresource:
        raise errors.method_not_allowed(f"DELETE is not allowed on {t.res.plural}/{t.subresource}")
    options = await _delete_options(request)
    obj = _delete_one(request, cluster, t.res, t.namespace or "", t.name, options)
    return json_response(_deleted_response(t.res, from_storage(t.res, obj)))


async def delete_collection(request: Request, cluster: Cluster, t: Target) -> Response:
    q = request.query_params
    options = await _delete_options(request)
    items, _rv = cluster.store.list(t.res, t.namespace, parse_labels(q.get("labelSelector")),
                                    parse_fields(q.get("fieldSelector")))
    deleted = []
    for item in items:
        meta = item["metadata"]
        if t.res is NAMESPACES and meta["name"] in PROTECTED_NAMESPACES:
            continue
        deleted.append(from_storage(t.res, _delete_one(request, cluster, t.res, meta.get("namespace", ""),
                                                       meta["name"], options)))
    return json_response({"kind": f"{t.res.kind}List", "apiVersion": t.res.api_version,
                          "metadata": {"resourceVersion": cluster.store.resource_version}, "items": deleted})
