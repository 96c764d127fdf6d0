"""Auditing requests: an ASGI middleware that writes kube-apiserver's `audit.k8s.io/v1` Event (level
Metadata, stage `ResponseComplete`) for every mutating request and every denied one (401, 403), and
answers every request with its `Audit-Id` header, as kube-apiserver does.

It runs outside authentication and authorization (it is the outermost middleware `create_app` adds),
so it sees a 401 that never reached a handler, and, once the inner layers ran, the user authentication
put in `scope["user"]`. The verb and `objectRef` are kube's RequestInfo (`api.core.rbac.request_attributes`).
The Event never holds a body or a header: a Secret's data and a bearer token cannot reach the log.
A response body is looked at only to learn a created object's name and a refusal's reason (and, for
a 401/403, its message), never written.

Inner layers may attach facts to a request's Event with `annotate` (the RBAC authorizer:
`authorization.k8s.io/decision` and `…/reason`, as kube-apiserver does).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from mpijob.api import names
from mpijob.api.core import rbac
from mpijob.store import audit

ANNOTATIONS_KEY = "audit_annotations"  # scope key: dict of annotations inner layers add to the Event
DENIED = frozenset({401, 403})
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_CAPTURE = 1024 * 1024  # the most of a response body read for a name or a reason (never stored)
_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_HEADER = names.AUDIT_ID_HEADER.lower().encode()

log = logging.getLogger(__name__)


def annotate(scope: MutableMapping[str, Any], key: str, value: str) -> None:
    """Add an annotation to this request's audit Event (if the request is audited)."""
    scope.setdefault(ANNOTATIONS_KEY, {})[key] = value


def current_user(scope: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """(name, uid, groups) of the user authentication put in `scope["user"]`; ("", "", ()) if none."""
    user = scope.get("user")
    if user is None:
        return "", "", ()
    if isinstance(user, dict):
        name, uid, groups = user.get("username") or user.get("name"), user.get("uid"), user.get("groups")
    else:
        name = getattr(user, "name", None) or getattr(user, "username", None)
        uid, groups = getattr(user, "uid", ""), getattr(user, "groups", ())
    return str(name or ""), str(uid or ""), tuple(str(g) for g in groups or ())


def request_info(method: str, path: str, query: str = "") -> tuple[str, audit.ObjectRef | None]:
    """The verb and, for a resource request, the object reference: kube's RequestInfo, read the one
    way the authorizer reads it (`rbac.request_attributes`), so what is audited is what was judged."""
    a = rbac.request_attributes(rbac.User(""), method, path, query)
    if not a.resource_request:
        return a.verb, None
    return a.verb, audit.ObjectRef(a.resource, a.namespace, a.name, a.api_group, a.api_version, a.subresource)


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


class AuditMiddleware:
    """ASGI middleware writing the audit Events of requests to `path` (see the module's docstring)."""

    def __init__(self, app: Any, path: Path) -> None:
        self.app = app
        self.log = audit.open_log(path)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await self._session({**scope, "method": "GET"}, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        received = audit.timestamp()
        given = _header(scope, _HEADER)
        audit_id = given if _ID.match(given) else str(uuid.uuid4())  # kube keeps a client's Audit-ID
        method = scope["method"]
        answer: dict[str, Any] = {"code": None, "body": bytearray(), "capture": False, "written": False}

        def record(code: int, stage: str = names.AUDIT_STAGE_COMPLETE) -> None:
            if not answer["written"] and (method in MUTATING_METHODS or code in DENIED):
                answer["written"] = True
                try:
                    self._write(scope, audit_id, received, code, stage, bytes(answer["body"]))
                except Exception:  # an Event that cannot be built must not cost the client its answer
                    log.exception("could not audit %s %s", method, scope.get("path", ""))

        async def send_audited(message: Any) -> None:
            if message["type"] == "http.response.start":
                code = answer["code"] = message["status"]
                answer["capture"] = code >= 400 or (method == "POST" and code < 300)
                message = {**message, "headers": [*message.get("headers", []), (_HEADER, audit_id.encode())]}
            elif message["type"] == "http.response.body":
                if answer["capture"]:
                    body = answer["body"]
                    if len(body) + len(message.get("body", b"")) <= MAX_CAPTURE:
                        body += message.get("body", b"")
                    else:
                        answer["capture"] = False
                        body.clear()
                if not message.get("more_body", False):  # written before the answer ends: a client that
                    record(answer["code"])  # has its answer finds its Event
            await send(message)

        try:
            await self.app(scope, receive, send_audited)
        except Exception:
            if answer["code"] is None:  # the handler crashed: the server's error handler answers 500
                record(500, names.AUDIT_STAGE_PANIC)
            raise
        finally:
            if answer["code"] is not None:  # a stream cut short: its Event all the same
                record(answer["code"])

    async def _session(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """A WebSocket session (`kubectl exec`, `port-forward`): audited once it ends, whoever opened it, with
        101 when it was accepted, or the Status code it was refused with."""
        received = audit.timestamp()
        code, written = 500, False

        def record() -> None:
            nonlocal written
            if written:
                return
            written = True
            try:
                self._write(scope, str(uuid.uuid4()), received, code, names.AUDIT_STAGE_COMPLETE, b"")
            except Exception:  # an Event that cannot be built must not break the session's end
                log.exception("could not audit the session %s", scope.get("path", ""))

        async def send_audited(message: Any) -> None:
            nonlocal code
            if message["type"] == "websocket.accept":
                code = 101
            elif message["type"] == "websocket.http.response.start":
                code = message["status"]
            elif message["type"] == "websocket.close" or (  # written first: a client that saw the end finds it
                    message["type"] == "websocket.http.response.body" and not message.get("more_body")):
                record()
            await send(message)

        try:
            await self.app(scope, receive, send_audited)
        finally:
            record()

    def _write(self, scope: dict[str, Any], audit_id: str, received: str, code: int, stage: str,
               body: bytes) -> None:
        method, path = scope["method"], scope.get("path", "")
        verb, ref = request_info(method, path, scope.get("query_string", b"").decode("latin-1"))
        reason = message = ""
        returned = _json(body)
        if code >= 400:
            reason = str(returned.get("reason", "")) if returned.get("kind") == "Status" else ""
            if code in DENIED:  # authentication's and authorization's words, which name no object's data
                message = str(returned.get("message", ""))
        elif verb == "create" and ref is not None and not ref.name:
            meta = returned.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("name"), str):
                ref = audit.ObjectRef(ref.resource, ref.namespace or str(meta.get("namespace") or ""), meta["name"],
                                      ref.api_group, ref.api_version, ref.subresource)
        raw_query = scope.get("query_string", b"").decode("latin-1")
        raw_path = scope.get("raw_path")
        uri_path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else path  # as sent, %-escapes kept
        name, uid, groups = current_user(scope)
        client = scope.get("client")
        ev = audit.event(
            verb=verb, request_uri=uri_path + (f"?{raw_query}" if raw_query else ""),
            user=audit.user_info(name, uid, groups), code=code, received=received, object_ref=ref, audit_id=audit_id,
            source_ips=[client[0]] if client else [], user_agent=_header(scope, b"user-agent"), stage=stage,
            reason=reason, message=message, annotations=scope.get(ANNOTATIONS_KEY))
        self.log.write(ev)


def _json(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
