"""Encode a Swagger 2.0 document as gnostic's `openapi_v2.Document` protobuf.

kubectl (client-go's `OpenAPISchema`) asks `/openapi/v2` for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and `proto.Unmarshal`s the body, with no
JSON fallback. Field numbers are those of gnostic's OpenAPIv2.proto; only what this server's documents
use is mapped: the messages below, schema keywords, `x-` extensions (a `NamedAny` whose YAML is JSON,
which YAML reads), and path/query/body parameters. Keys gnostic has no field for are dropped, as
gnostic drops them when it compiles a JSON document.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any

Encoder = Callable[[Any], bytes]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 as two's complement, like Go
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _string(field: int, value: Any) -> bytes:
    return _len(field, str(value).encode()) if value != "" else b""


def _int(field: int, value: Any) -> bytes:
    return _varint(field << 3) + _varint(int(value)) if value else b""


def _bool(field: int, value: Any) -> bytes:
    return _varint(field << 3) + b"\x01" if value is True else b""


def _double(field: int, value: Any) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", float(value)) if value else b""


def _any(value: Any) -> bytes:
    """gnostic's `Any` carrying the value as YAML (field 2); JSON is YAML."""
    return _string(2, json.dumps(value, ensure_ascii=False))


def _strings(field: int, value: Any) -> bytes:
    return b"".join(_len(field, str(v).encode()) for v in ([value] if isinstance(value, str) else value))


def _message(fields: Mapping[str, tuple[int, Any]], extensions: int = 0) -> Encoder:
    """An encoder for a message whose JSON keys map to `(field number, encode(field, value))`."""

    def encode(obj: Any) -> bytes:
        out = []
        for key, value in obj.items():
            spec = fields.get(key)
            if spec is not None:
                out.append(spec[1](spec[0], value))
            elif extensions and key.startswith("x-"):
                out.append(_len(extensions, _string(1, key) + _len(2, _any(value))))
        return b"".join(out)

    return encode


def _sub(encoder: Encoder) -> Callable[[int, Any], bytes]:
    return lambda field, value: _len(field, encoder(value))


def _repeated(encoder: Encoder) -> Callable[[int, Any], bytes]:
    return lambda field, values: b"".join(_len(field, encoder(v)) for v in values)


def _named(encoder: Encoder, field_in_map: int = 1) -> Callable[[int, Any], bytes]:
    """A JSON object as a message of repeated `Named*` pairs (name 1, value 2) at `field_in_map`."""
    def encode(field: int, mapping: Any) -> bytes:
        pairs = b"".join(_len(field_in_map, _string(1, k) + _len(2, encoder(v))) for k, v in mapping.items())
        return _len(field, pairs)
    return encode


def _schema(obj: Any) -> bytes:
    return _SCHEMA(obj)


def _additional(field: int, value: Any) -> bytes:
    """`AdditionalPropertiesItem`: a schema (1) or a boolean (2, present even when false: a oneof)."""
    inner = _len(1, _schema(value)) if isinstance(value, dict) else _varint(2 << 3) + _varint(int(bool(value)))
    return _len(field, inner)


def _type(field: int, value: Any) -> bytes:
    return _len(field, _strings(1, value))


def _items(field: int, value: Any) -> bytes:
    return _len(field, b"".join(_len(1, _schema(v)) for v in (value if isinstance(value, list) else [value])))


_SCHEMA = _message({
    "$ref": (1, _string), "format": (2, _string), "title": (3, _string), "description": (4, _string),
    "default": (5, lambda f, v: _len(f, _any(v))), "multipleOf": (6, _double), "maximum": (7, _double),
    "exclusiveMaximum": (8, _bool), "minimum": (9, _double), "exclusiveMinimum": (10, _bool),
    "maxLength": (11, _int), "minLength": (12, _int), "pattern": (13, _string), "maxItems": (14, _int),
    "minItems": (15, _int), "uniqueItems": (16, _bool), "maxProperties": (17, _int), "minProperties": (18, _int),
    "required": (19, _strings), "enum": (20, lambda f, vs: b"".join(_len(f, _any(v)) for v in vs)),
    "additionalProperties": (21, _additional), "type": (22, _type), "items": (23, _items),
    "allOf": (24, _repeated(_schema)), "properties": (25, _named(_schema)), "discriminator": (26, _string),
    "readOnly": (27, _bool), "example": (30, lambda f, v: _len(f, _any(v))),
}, extensions=31)

# Non-body parameters by `in`: (NonBodyParameter field, the sub-schema's field numbers).
_PARAMETER_FIELDS = {
    "header": (1, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "format": 6, "uniqueItems": 19}, 22),
    "query": (3, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 6, "format": 7, "uniqueItems": 20}, 23),
    "path": (4, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "format": 6, "uniqueItems": 19}, 22),
}
_KINDS: dict[str, Callable[[int, Any], bytes]] = {"required": _bool, "uniqueItems": _bool}


def _parameter(obj: Any) -> bytes:
    """`ParametersItem`: a reference, a body parameter, or a header/query/path parameter."""
    if "$ref" in obj:
        return _len(2, _string(1, obj["$ref"]))
    if obj.get("in") == "body":
        body = _message({"description": (1, _string), "name": (2, _string), "in": (3, _string),
                         "required": (4, _bool), "schema": (5, _sub(_schema))}, extensions=6)(obj)
        return _len(1, _len(1, body))
    where = obj.get("in")
    if where not in _PARAMETER_FIELDS:
        raise ValueError(f"parameter in {where!r} is not encoded")
    field, numbers, extensions = _PARAMETER_FIELDS[where]
    sub = _message({k: (n, _KINDS.get(k, _string)) for k, n in numbers.items()}, extensions)(obj)
    return _len(1, _len(2, _len(field, sub)))


_RESPONSE = _message({"description": (1, _string), "schema": (2, lambda f, v: _len(f, _len(1, _schema(v))))},
                     extensions=5)
_OPERATION = _message({
    "tags": (1, _strings), "summary": (2, _string), "description": (3, _string), "operationId": (5, _string),
    "produces": (6, _strings), "consumes": (7, _strings), "parameters": (8, _repeated(_parameter)),
    "responses": (9, _named(lambda v: _len(1, _RESPONSE(v)))), "schemes": (10, _strings), "deprecated": (11, _bool),
}, extensions=13)
_PATH_ITEM = _message({"$ref": (1, _string), **{verb: (n, _sub(_OPERATION)) for n, verb in enumerate(
    ("get", "put", "post", "delete", "options", "head", "patch"), start=2)},
    "parameters": (9, _repeated(_parameter))}, extensions=10)
_DOCUMENT = _message({
    "swagger": (1, _string),
    "info": (2, _sub(_message({"title": (1, _string), "version": (2, _string), "description": (3, _string)}, 7))),
    "host": (3, _string), "basePath": (4, _string), "schemes": (5, _strings), "consumes": (6, _strings),
    "produces": (7, _strings), "paths": (8, _named(_PATH_ITEM, field_in_map=2)),
    "definitions": (9, _named(_schema)),
}, extensions=16)


def document(doc: Mapping[str, Any]) -> bytes:
    """The protobuf encoding of a Swagger 2.0 document (a dict as the JSON form has it)."""
    return _DOCUMENT(doc)
