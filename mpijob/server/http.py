"""HTTP helpers shared by the routes: Status responses, Go-style query parsing, body decoding.

kubectl and client-go are strict about a few wire details (booleans parsed like Go's
`strconv.ParseBool`, errors always a `Status` with the HTTP code, Table negotiation through the
`Accept` header), so they live in one place.

Bodies are read as kube-apiserver reads them, and hostile ones are refused before they can hurt:
at most `MAX_REQUEST_BYTES` (`BodyLimit`, 413 before the rest is read, chunked bodies included), then
decoded into plain JSON values only (`decode_body`: 400 for malformed, too deeply nested or
non-finite input, and for YAML whose aliases would expand past what was sent).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import math
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api.core.errors import ApiError, bad_request, method_not_allowed

JSON = "application/json"
# The ASGI scopes that authentication, authorization and audit judge: requests, and WebSocket sessions (kubectl
# exec, port-forward), which the audit middleware gives the method of their opening request, GET
SERVED = frozenset({"http", "websocket"})
PROTOBUF = "application/vnd.kubernetes.protobuf"

_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


def json_response(body: Any, status: int = 200, warnings: list[str] | None = None) -> Response:
    """A JSON answer; `warnings` become `Warning: 299 - "..."` headers, one each, as kube-apiserver sends
    them (kubectl prints each as `Warning: ...`)."""
    response = Response(json.dumps(body, separators=(",", ":")), status_code=status, media_type=JSON)
    for text in warnings or []:
        text = "".join(ch if " " <= ch <= "~" else "?" for ch in text)  # a header holds printable ASCII only
        text = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.append("Warning", f'299 - "{text}"')
    return response


def status_response(err: ApiError) -> Response:
    return json_response(err.to_status(), err.code)


def success_status(name: str, group: str, kind: str, uid: str = "") -> dict[str, Any]:
    """The `Status Success` kube-apiserver answers a DELETE with for most built-in kinds."""
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind}
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def parse_bool(value: str | None, param: str, default: bool = False) -> bool:
    """Booleans as Go's strconv.ParseBool reads them (`true`, `True`, `1`, ...); 400 otherwise."""
    if value is None or value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_request(f"invalid value for query parameter {param}={value!r}: use true or false")


_INT64 = 2**63 - 1


def parse_int(value: str | None, param: str) -> int | None:
    """An integer as Go's strconv.ParseInt(value, 10, 64) reads it (an optional sign and ASCII digits, within
    int64); 400 naming the parameter otherwise."""
    if value is None or value == "":
        return None
    digits = value[1:] if value[:1] in "+-" else value
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19 or abs(int(value)) > _INT64:
        raise bad_request(f"invalid value for query parameter {param}={value!r}: use an integer "
                          f"(digits, at most {_INT64})")
    return int(value)


def parse_resource_version(value: str | None) -> int | None:
    """A `resourceVersion` query parameter: unset, or the digits of a version (kube's ParseUint); 400
    otherwise, before a list or a watch uses it."""
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > 20:
        raise bad_request(f"invalid value for query parameter resourceVersion={value!r}: use the "
                          "metadata.resourceVersion of a list or an object (digits), or 0 for any version")
    return int(value)


# Every method a read-only API group answers, so that a write is told it is read-only rather than 404
ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def read_only(request: Request, group: str) -> None:
    """An aggregated, computed API group (Kueue's visibility, metrics.k8s.io) serves GET only: 405 otherwise."""
    if request.method != "GET":
        raise method_not_allowed(f"the server does not allow {request.method} on {group}: it is read-only")


def wants_table(request: Request) -> bool:
    """kubectl `get` asks for `application/json;as=Table;v=v1;g=meta.k8s.io`."""
    accept = request.headers.get("accept", "")
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


MAX_REQUEST_BYTES = 3 * 1024 * 1024  # kube-apiserver's default --max-request-bytes
MAX_DEPTH = 100  # nesting levels a body may have; real objects use about 20
_EXPANSION_SLACK = 64 * 1024  # what a decoded body may add to its size in bytes (YAML aliases, see `plain`)


class Disconnect:
    """Notices when the client of a long stream (a watch, a followed log) has gone.

    uvicorn drops what is written after a client disconnects without telling the writer, so a stream
    that is idle would otherwise run until its timeout (30 minutes for a watch): a client that opens
    and abandons streams could pile them up. This listens for the ASGI `http.disconnect` message (the
    request has no body left to read) and says so through `gone`; use it as a context manager."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.gone = False
        self._task: asyncio.Task[None] | None = None

    async def _listen(self) -> None:
        while True:
            message = await self.request.receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                return

    async def __aenter__(self) -> Disconnect:
        self._task = asyncio.create_task(self._listen())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


def too_large(limit: int = MAX_REQUEST_BYTES) -> ApiError:
    """413 as kube-apiserver words it, with what to do."""
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}: the request body "
                    f"must be at most {limit} bytes (3 MiB, kube-apiserver's --max-request-bytes); send a "
                    "smaller object (large data belongs in a volume, not in a ConfigMap or Secret)")


class BodyLimit:
    """ASGI middleware: a request body may be at most `limit` bytes. A declared `Content-Length` over it is
    refused (413) before any of the body is read, and a chunked body is cut off once it passes the limit,
    so nothing larger is ever buffered. The check happens when a route reads the body, after
    authentication and authorization, as kube-apiserver's does."""

    def __init__(self, app: Any, limit: int = MAX_REQUEST_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        limit, seen, started = self.limit, 0, False

        async def limited() -> Any:
            nonlocal seen
            if declared.strip().isdigit() and int(declared) > limit:
                raise too_large(limit)
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_large(limit)
            return message

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except ApiError as err:  # raised by our `receive` where no route handler turned it into a Status
            if started or err.code != 413:
                raise
            await status_response(err)(scope, receive, send)


async def read_raw(request: Request) -> bytes:
    """The request body's bytes (at most `MAX_REQUEST_BYTES`, which `BodyLimit` enforces; checked here
    too, for an app without it)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_REQUEST_BYTES:
        raise too_large()
    raw = await request.body()
    if len(raw) > MAX_REQUEST_BYTES:
        raise too_large()
    return raw


async def read_body(request: Request, *, yaml_ok: bool = False) -> Any:
    """The decoded request body; 400 BadRequest naming the problem when it does not parse."""
    raw = await read_raw(request)
    ctype = request.headers.get("content-type", JSON).split(";")[0].strip().lower()
    return decode_body(raw, ctype, yaml_ok=yaml_ok)


def decode_body(raw: bytes, ctype: str, *, yaml_ok: bool = False) -> Any:
    """`raw` as plain JSON values (dict, list, str, int, finite float, bool, None), by its content type."""
    if not raw.strip():
        raise bad_request("the request body is empty: send a JSON object")
    if ctype == PROTOBUF:
        from mpijob.server.protobuf import decode

        return decode(raw)
    if "protobuf" in ctype or "cbor" in ctype:
        raise ApiError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format ({ctype}): send application/json")
    if yaml_ok or ctype.endswith("yaml"):
        try:
            value = yaml.load(raw, Loader=_YamlLoader)  # noqa: S506 — a SafeLoader, see _YamlLoader
        except yaml.YAMLError as exc:
            raise bad_request(f"the request body is not valid YAML: {_one_line(str(exc))}") from None
        except RecursionError:
            raise _too_deep("YAML") from None
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            raise bad_request(f"the request body is not valid YAML: {_one_line(str(exc))}") from None
        return plain(value, len(raw), "YAML")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise _too_deep("JSON") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None
    return plain(value, len(raw), "JSON")


class _YamlLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, except that timestamps stay strings, as Kubernetes' YAML decoder
    (sigs.k8s.io/yaml) leaves them: `date: 2024-01-01` is the string "2024-01-01"."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: send a finite number or a string")


def _too_deep(form: str) -> ApiError:
    return bad_request(f"the request body is not valid {form}: it is nested more than {MAX_DEPTH} levels "
                       "deep; send an object nested as a Kubernetes object is")


def plain(value: Any, size: int, form: str = "JSON") -> Any:
    """`value` (a decoded body of `size` bytes) as plain JSON values, checked without recursion: at most
    `MAX_DEPTH` levels, finite numbers, string keys (YAML's `1:`, `true:`, `null:` become "1", "true",
    "null", as Kubernetes' YAML decoder makes them), dates and binary as strings. YAML aliases are
    expanded, and refused once the body grows past `size` plus a little slack: a "billion laughs" body of
    a few hundred bytes cannot become gigabytes."""
    budget = size + _EXPANSION_SLACK
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while stack:
        node, parent, key, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(form)
        budget -= 1
        if isinstance(node, dict):
            out: Any = {}
            for k, v in node.items():
                k = _key(k, form)
                budget -= len(k)
                stack.append((v, out, k, depth + 1))
        elif isinstance(node, (list, tuple)):
            out = [None] * len(node)
            stack.extend((v, out, i, depth + 1) for i, v in enumerate(node))
        elif isinstance(node, str):
            out, budget = node, budget - len(node)
        elif node is None or isinstance(node, (bool, int)):
            out = node
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise bad_request(f"the request body is not valid {form}: {node} is not a JSON number; send a "
                                  "finite number or a string")
            out = node
        elif isinstance(node, (datetime.date, datetime.datetime)):
            out = node.isoformat()
        elif isinstance(node, bytes):  # YAML !!binary: its base64 text, as a Secret's data carries it
            out = base64.b64encode(node).decode()
        else:
            raise bad_request(f"the request body is not valid {form}: a {type(node).__name__} value (e.g. a "
                              "YAML !!set) has no JSON form; send maps, lists, strings, numbers, booleans, null")
        if budget < 0:
            raise bad_request(f"the request body is not valid {form}: its aliases expand it past {size} bytes "
                              f"plus {_EXPANSION_SLACK}; write the repeated parts out instead of aliasing them")
        parent[key] = out
    return root[0]


def _key(key: Any, form: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)) and (not isinstance(key, float) or math.isfinite(key)):
        return str(key)
    if isinstance(key, (datetime.date, datetime.datetime)):
        return key.isoformat()
    raise bad_request(f"the request body is not valid {form}: a map key must be a string, not {key!r}")


async def read_object(request: Request, *, yaml_ok: bool = False) -> dict[str, Any]:
    body = await read_body(request, yaml_ok=yaml_ok)
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be an object, got {type(body).__name__}")
    return body


def _one_line(text: str) -> str:
    return " ".join(text.split())
