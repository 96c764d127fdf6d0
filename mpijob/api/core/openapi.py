"""Reading served OpenAPI documents: a kind's schema, `$ref`s followed, every field path.

Works on the JSON documents themselves (Swagger 2.0 `definitions` or OpenAPI 3 `components.schemas`),
so tests and clients walk exactly what the server serves, the way `kubectl explain` does: the kind is
found by its `x-kubernetes-group-version-kind`, references (`$ref`, kube's `allOf: [{$ref}]` wrapper)
are followed, list items are transparent (`spec.trainer.env.name`), and the values of a map whose values
are objects with fields are addressed as `*` (`spec.byName.*.name`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

GVK_EXTENSION = "x-kubernetes-group-version-kind"


def crd_definition_name(group: str, version: str, kind: str) -> str:
    """kube-apiserver's name for a custom resource's definition: the group reversed, as its
    `ToRESTFriendlyName("<group>/<version>/<kind>")` gives (`io.x-k8s.kueue.v1beta2.ClusterQueue`)."""
    return ".".join([*reversed(group.split(".")), version, kind])


def schemas(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """The named schemas of a v2 (`definitions`) or v3 (`components.schemas`) document."""
    if "definitions" in document:
        return document["definitions"]
    return document.get("components", {}).get("schemas", {})


def kind_schema(document: Mapping[str, Any], group: str, version: str, kind: str) -> tuple[str, dict[str, Any]] | None:
    """`(name, schema)` of the definition tagged with this group-version-kind, or None."""
    want = {"group": group, "version": version, "kind": kind}
    for name, schema in schemas(document).items():
        if any(gvk == want for gvk in schema.get(GVK_EXTENSION, ())):
            return name, schema
    return None


def ref_name(node: Mapping[str, Any]) -> str | None:
    """The definition a schema node refers to (`$ref`, or kube's single-entry `allOf` wrapper)."""
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf", ())) == 1:
        ref = node["allOf"][0].get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else None


def resolve(document: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` with its reference followed; the node's own keys (its description) win over the target's."""
    name = ref_name(node)
    if name is None:
        return dict(node)
    target = resolve(document, schemas(document)[name])
    own = {k: v for k, v in node.items() if k not in ("$ref", "allOf")}
    return {**target, **own}


def walk(document: Mapping[str, Any], group: str, version: str, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """`(path, resolved schema)` for every field of the kind, depth first in document order.

    A type met again inside itself (a recursive schema) is listed but not entered twice."""
    found = kind_schema(document, group, version, kind)
    if found is None:
        raise KeyError(f"no schema for {group or 'core'}/{version} {kind} in this document")
    name, schema = found
    yield from _fields(document, resolve(document, schema), "", frozenset({name}))


def field_paths(document: Mapping[str, Any], group: str, version: str, kind: str) -> Iterator[str]:
    """Every field path of the kind (`spec`, `spec.trainer`, `spec.trainer.numNodes`, ...)."""
    for path, _ in walk(document, group, version, kind):
        yield path


def _fields(document: Mapping[str, Any], schema: Mapping[str, Any], prefix: str,
            seen: frozenset[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{field}" if prefix else field
        yield path, resolve(document, sub)
        element, refs = _element(document, sub)
        if not refs & seen:
            yield from _fields(document, element, path, seen | refs)


def _element(document: Mapping[str, Any], sub: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """What a field's own fields hang off (itself, its list items, or its map values as `*`), and the
    definitions followed to get there."""
    refs: set[str] = set()

    def follow(node: Mapping[str, Any]) -> dict[str, Any]:
        name = ref_name(node)
        if name:
            refs.add(name)
        return resolve(document, node)

    node = follow(sub)
    while node.get("type") == "array" and isinstance(node.get("items"), dict):
        node = follow(node["items"])
    extra = node.get("additionalProperties")
    if not node.get("properties") and isinstance(extra, dict) and _element(document, extra)[0].get("properties"):
        return {"properties": {"*": extra}}, frozenset(refs)
    return node, frozenset(refs)


def unknown_fields(document: Mapping[str, Any], group: str, version: str, kind: str, obj: Any) -> list[str]:
    """The paths of `obj`'s fields that the kind's schema does not have, as kube-apiserver's strict
    decoding names them (`data`, `spec.containers[0].foo`). Maps take any key; a schema that keeps
    unknown fields (`x-kubernetes-preserve-unknown-fields`) or says nothing of its fields takes anything."""
    return [shown for shown, _ in unknown_field_locations(document, group, version, kind, obj)]


def unknown_field_locations(document: Mapping[str, Any], group: str, version: str, kind: str,
                            obj: Any) -> list[tuple[str, tuple[str | int, ...]]]:
    """`unknown_fields` with where each one is: its keys and indexes from the object's root, which stay
    exact when a key itself holds a `.` or `[` (a key `1.5` is one step, not two)."""
    found = kind_schema(document, group, version, kind)
    if found is None:
        raise KeyError(f"no schema for {group or 'core'}/{version} {kind} in this document")
    return list(_unknown(document, resolve(document, found[1]), obj, "", ()))


def _unknown(document: Mapping[str, Any], schema: Mapping[str, Any], value: Any, where: str,
             steps: tuple[str | int, ...]) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        item = resolve(document, schema["items"])
        for i, element in enumerate(value):
            yield from _unknown(document, item, element, f"{where}[{i}]", (*steps, i))
    elif isinstance(value, dict):
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        for key, sub in value.items():
            at = f"{where}.{key}" if where else key
            if props and key in props:
                yield from _unknown(document, resolve(document, props[key]), sub, at, (*steps, key))
            elif isinstance(extra, dict):
                yield from _unknown(document, resolve(document, extra), sub, at, (*steps, key))
            elif props and key not in ("apiVersion", "kind"):
                yield at, (*steps, key)


def expand_shared(data: Mapping[str, Any]) -> dict[str, Any]:
    """`{"<version>/<Kind>": schema}` from a generated schema file (`tools/gen_openapi_data.py`), whose
    subtrees repeated across kinds are stored once in `shared` and referenced as `{"$shared": index}`;
    each shared subtree is expanded once and reused (read-only)."""
    shared: list[Any] = [None] * len(data["shared"])

    def expand(node: Any) -> Any:
        if isinstance(node, list):
            return [expand(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$shared" in node:
            i = node["$shared"]
            if shared[i] is None:
                shared[i] = expand(data["shared"][i])
            return shared[i]
        return {k: expand(v) for k, v in node.items()}

    return {name: expand(schema) for name, schema in data["schemas"].items()}
