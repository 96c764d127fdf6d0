"""PATCH bodies applied to stored objects: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
the subset of strategic merge patch kubectl sends when it re-applies built-in kinds.

Pure functions over dicts, so the route only chooses by `Content-Type`.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any

from mpijob.api.core.errors import ApiError, bad_request
from mpijob.server.http import MAX_DEPTH

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

# List fields of the core kinds that strategic merge patch merges by a key instead of replacing.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "containerStatuses": "name",
    "ownerReferences": "uid",
    "tolerations": "key",
    "hostAliases": "ip",
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic(group: str) -> Callable[[Any, Any], Any]:
    """Strategic merge for a built-in group's kinds: the core kinds' keyed lists merge by their keys; every
    list of the RBAC and NetworkPolicy kinds is atomic (`+listType=atomic`), replaced whole (a
    NetworkPolicy's `ports` are not a container's)."""
    return strategic_merge_patch if not group else functools.partial(strategic_merge_patch, keys={})


def strategic_merge_patch(target: Any, patch: Any, keys: Mapping[str, str] = MERGE_KEYS) -> Any:
    """Strategic merge: like merge patch, but lists named in `keys` merge item by item and `$patch`
    / `$setElementOrder` / `$retainKeys` / `$deleteFromPrimitiveList` directives are honoured."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in keys and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, keys[key], keys)
        else:
            result[key] = strategic_merge_patch(result.get(key), value, keys)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(current: list[Any], patch: list[Any], key: str, keys: Mapping[str, str]) -> list[Any]:
    out = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
        elif idx is None:
            out.append(strategic_merge_patch({}, item, keys))
        else:
            out[idx] = strategic_merge_patch(out[idx], item, keys)
    return out


MAX_OPERATIONS = 10000  # kube-apiserver's maxJSONPatchOperations
MAX_COPIED = 3 * 1024 * 1024  # what `copy` operations may duplicate in all, as the request body limit


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 add/remove/replace/move/copy/test; a failed `test` or bad path is 422/400. As in kube-apiserver,
    at most `MAX_OPERATIONS` operations (413), and `copy` may duplicate at most `MAX_COPIED` bytes in all (a
    patch copying a field into itself 40 times would otherwise grow it 2⁴⁰ times); the result may be nested
    no deeper than a request body."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    if len(operations) > MAX_OPERATIONS:
        raise ApiError(413, "RequestEntityTooLarge", f"The allowed maximum operations in a JSON patch is "
                       f"{MAX_OPERATIONS}, got {len(operations)}: split the patch into several requests")
    copied = 0
    doc = copy.deepcopy(target)
    for n, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"JSON patch operation {n} needs 'op' and 'path'")
        kind, path = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(_value(op, n)))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(_value(op, n)))
        elif kind in ("move", "copy"):
            if "from" not in op:
                raise bad_request(f"JSON patch operation {n} ({kind}) needs 'from'")
            src = _pointer(op["from"])
            value = _get(doc, src)
            if kind == "move":
                doc, value = _remove(doc, src)
            else:
                copied += _size(value, MAX_COPIED - copied + 1)
                if copied > MAX_COPIED:
                    raise ApiError(413, "RequestEntityTooLarge", f"JSON patch operation {n} (copy from "
                                   f"{op['from']!r}) copies more than {MAX_COPIED} bytes in all: copy less, or "
                                   "send the object itself")
            doc = _add(doc, path, copy.deepcopy(value))
        elif kind == "test":
            if _get(doc, path) != _value(op, n):
                raise ApiError(422, "Invalid", f"JSON patch test operation {n} failed at {op['path']}")
        else:
            raise bad_request(f"JSON patch operation {n}: unknown op {kind!r}; use add, remove, replace, "
                              "move, copy or test")
    if _depth(doc) > MAX_DEPTH:
        raise bad_request(f"the patched object would be nested more than {MAX_DEPTH} levels deep: add the "
                          "values nearer the object's root")
    return doc


def _size(value: Any, stop: int) -> int:
    """About how many bytes `value` is as JSON (1 per value plus string lengths), counting up to `stop`."""
    total, stack = 0, [value]
    while stack and total < stop:
        node = stack.pop()
        total += 1
        if isinstance(node, dict):
            total += sum(len(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            total += len(node)
    return total


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def _value(op: dict[str, Any], n: int) -> Any:
    if "value" not in op:
        raise bad_request(f"JSON patch operation {n} ({op['op']}) needs 'value'")
    return op["value"]


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise bad_request(f"JSON pointer {path!r} must be a string such as \"/metadata/labels/app\"")
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"JSON pointer {path!r} must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, path: list[str]) -> Any:
    return _get(doc, path[:-1])


def _get(doc: Any, path: list[str]) -> Any:
    cur = doc
    for part in path:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise ApiError(422, "Invalid", f"JSON patch path /{'/'.join(path)} does not exist")
    return cur


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise ApiError(422, "Invalid", f"JSON patch index {last!r} is out of range")
    else:
        raise ApiError(422, "Invalid", f"JSON patch path /{'/'.join(path)} has no container to add to")
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        return None, doc
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return doc, parent.pop(int(last))
    raise ApiError(422, "Invalid", f"JSON patch path /{'/'.join(path)} does not exist")
