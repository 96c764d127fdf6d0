"""Decode the Kubernetes protobuf bodies kubectl's typed clients send for a few built-in kinds.

`kubectl create namespace|configmap|secret|serviceaccount|quota` POSTs `application/vnd.kubernetes.protobuf` and
does not fall back to JSON, so the server reads those kinds' wire format (the `k8s\\0` envelope around a
`runtime.Unknown`) into the same dicts JSON gives. Other kinds answer 415.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from mpijob.api.core.errors import ApiError, bad_request

MAGIC = b"k8s\x00"

# field number -> (json name, type). Types: str, bytes, bool, map (str->str), bmap (str->bytes), qmap
# (str->resource.Quantity, a message whose field 1 is its string), strs (repeated str), a nested schema
# dict, or [schema] for repeated messages.
OWNER_REF = {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"), 5: ("apiVersion", "str"),
             6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
OBJECT_META = {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"), 11: ("labels", "map"),
               12: ("annotations", "map"), 13: ("ownerReferences", [OWNER_REF]), 14: ("finalizers", "strs")}
SCHEMAS: dict[str, dict[int, tuple[str, Any]]] = {
    "ConfigMap": {1: ("metadata", OBJECT_META), 2: ("data", "map"), 3: ("binaryData", "bmap"),
                  4: ("immutable", "bool")},
    "Secret": {1: ("metadata", OBJECT_META), 2: ("data", "bmap"), 3: ("type", "str"), 4: ("stringData", "map"),
               5: ("immutable", "bool")},
    "Namespace": {1: ("metadata", OBJECT_META), 2: ("spec", {1: ("finalizers", "strs")})},
    "ServiceAccount": {1: ("metadata", OBJECT_META), 4: ("automountServiceAccountToken", "bool")},
    "ResourceQuota": {1: ("metadata", OBJECT_META), 2: ("spec", {1: ("hard", "qmap"), 2: ("scopes", "strs")})},
}
_TYPE_META = {1: ("apiVersion", "str"), 2: ("kind", "str")}
_UNKNOWN = {1: ("typeMeta", _TYPE_META), 2: ("raw", "bytes")}


def decode(body: bytes) -> dict[str, Any]:
    """The object in a protobuf request body, as JSON would have carried it."""
    if not body.startswith(MAGIC):
        raise bad_request("the protobuf body does not start with the Kubernetes 'k8s\\0' prefix")
    envelope = _message(body[len(MAGIC):], _UNKNOWN)
    type_meta = envelope.get("typeMeta", {})
    kind = type_meta.get("kind", "")
    schema = SCHEMAS.get(kind)
    if schema is None:
        raise ApiError(415, "UnsupportedMediaType",
                       f"protobuf bodies are accepted only for {', '.join(SCHEMAS)}, not {kind or 'this kind'}: "
                       "send application/json")
    obj = _message(envelope.get("raw", b""), schema)
    return {"apiVersion": type_meta.get("apiVersion", "v1"), "kind": kind, **obj}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise bad_request("truncated protobuf body")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    pos = 0
    value: int | bytes
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire in (1, 2, 5):
            length = 8 if wire == 1 else 4 if wire == 5 else None
            if length is None:
                length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise bad_request(f"truncated protobuf body: field {number} needs {length} bytes, "
                                  f"{len(buf) - pos} remain")
            value, pos = buf[pos:pos + length], pos + length
        else:
            raise bad_request(f"unsupported protobuf wire type {wire} (field {number})")
        yield number, wire, value


def _text(value: bytes, field: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise bad_request(f"the protobuf field {field} is not UTF-8 text ({exc.reason} at byte {exc.start}): "
                          "send strings as UTF-8") from None


def _message(buf: bytes, schema: dict[int, tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire, value in _fields(buf):
        if number not in schema:
            continue  # server-set or unused fields (uid, timestamps, managedFields...)
        name, typ = schema[number]
        if (wire == 0) != (typ == "bool"):  # a bool is a varint; every other field here is length-delimited
            raise bad_request(f"the protobuf field {name} (number {number}) has wire type {wire}, not "
                              f"{0 if typ == 'bool' else 2}: the body is not a Kubernetes object of this kind")
        if typ == "str":
            if value:  # proto2 sends unset strings as ""; JSON omits them
                out[name] = _text(value, name)
        elif typ == "bytes":
            out[name] = value
        elif typ == "bool":
            out[name] = bool(value)
        elif typ == "strs":
            out.setdefault(name, []).append(_text(value, name))
        elif typ in ("map", "bmap", "qmap"):
            entry = {}
            for n, w, v in _fields(value):
                if w != 2:
                    raise bad_request(f"the protobuf field {name} has a map entry with wire type {w}, not 2: "
                                      "the body is not a Kubernetes object of this kind")
                entry[n] = v
            raw = entry.get(2, b"")
            if typ == "qmap":
                raw = _message(raw, {1: ("string", "str")}).get("string", "").encode()
            out.setdefault(name, {})[_text(entry.get(1, b""), f"{name} key")] = (
                base64.b64encode(raw).decode() if typ == "bmap" else _text(raw, name)
            )
        elif isinstance(typ, list):
            out.setdefault(name, []).append(_message(value, typ[0]))
        else:
            out[name] = _message(value, typ)
    return out
