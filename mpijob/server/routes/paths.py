"""Parse a resource URL the way kube-apiserver's RequestInfoFactory does.

`/api/v1/namespaces/{ns}/{plural}/{name}/{sub}`, cluster-scoped `/apis/{g}/{v}/{plural}/{name}`,
all-namespace lists, and the special case `/api/v1/namespaces/{name}/status`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import Resource, lookup

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class Target:
    res: Resource
    namespace: str | None  # None: cluster scope or all namespaces
    name: str | None
    subresource: str | None


@dataclass(frozen=True)
class Discovery:
    group: str
    version: str | None


def not_found_path(path: str) -> ApiError:
    return ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")


def parse(prefix: str, rest: str) -> Target | Discovery:
    """`prefix` is "api" or "apis"; `rest` the path after it. Unknown paths are 404 Status."""
    path = f"/{prefix}/{rest}".rstrip("/")
    parts = [p for p in rest.split("/") if p]
    if prefix == "api":
        if not parts:
            return Discovery("", None)
        group, version, parts = "", parts[0], parts[1:]
    else:
        if len(parts) < 2:
            return Discovery(parts[0] if parts else "", None)
        group, version, parts = parts[0], parts[1], parts[2:]
    if not parts:
        return Discovery(group, version)
    namespace: str | None = None
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    if len(parts) > 3:
        raise not_found_path(path)
    res = lookup(group, version, parts[0])
    if res is None:
        raise not_found_path(path)
    name = parts[1] if len(parts) > 1 else None
    sub = parts[2] if len(parts) > 2 else None
    if res.plural == "namespaces":
        return Target(res, None, name, sub)
    if namespace is not None and not res.namespaced:
        raise not_found_path(path)
    if sub is not None and sub not in res.subresources:
        raise not_found_path(path)
    if name is not None and res.namespaced and namespace is None:
        raise not_found_path(path)
    return Target(res, namespace, name, sub)
