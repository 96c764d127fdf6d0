"""HTTP helpers shared by the routes: Status responses, Go-style query parsing, body decoding.

kubectl and client-go are strict about a few wire details (booleans parsed like Go's
`strconv.ParseBool`, errors always a `Status` with the HTTP code, Table negotiation through the
`Accept` header), so they live in one place.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api.errors import ApiError, bad_request

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"

_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


def json_response(body: Any, status: int = 200, warnings: list[str] | None = None) -> Response:
    """A JSON answer; `warnings` become `Warning: 299 - "..."` headers, one each, as kube-apiserver sends
    them (kubectl prints each as `Warning: ...`)."""
    response = Response(json.dumps(body, separators=(",", ":")), status_code=status, media_type=JSON)
    for text in warnings or []:
        text = text.encode("ascii", "replace").decode().replace("\\", "\\\\").replace('"', '\\"')
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


def parse_int(value: str | None, param: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"invalid value for query parameter {param}={value!r}: use an integer") from None


def wants_table(request: Request) -> bool:
    """kubectl `get` asks for `application/json;as=Table;v=v1;g=meta.k8s.io`."""
    accept = request.headers.get("accept", "")
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


async def read_body(request: Request, *, yaml_ok: bool = False) -> Any:
    """The decoded request body; 400 BadRequest naming the problem when it does not parse."""
    raw = await request.body()
    if not raw.strip():
        raise bad_request("the request body is empty: send a JSON object")
    ctype = request.headers.get("content-type", JSON).split(";")[0].strip()
    if ctype == PROTOBUF:
        from mpijob.server.protobuf import decode

        return decode(raw)
    if "protobuf" in ctype or "cbor" in ctype:
        raise ApiError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format ({ctype}): send application/json")
    if yaml_ok or ctype.endswith("yaml"):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise bad_request(f"the request body is not valid YAML: {_one_line(str(exc))}") from None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


async def read_object(request: Request, *, yaml_ok: bool = False) -> dict[str, Any]:
    body = await read_body(request, yaml_ok=yaml_ok)
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be an object, got {type(body).__name__}")
    return body


def _one_line(text: str) -> str:
    return " ".join(text.split())
