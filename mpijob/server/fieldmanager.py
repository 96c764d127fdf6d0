"""Field management on every write, as kube-apiserver's handlers do it (the logic: `mpijob.api.core.managed_fields`).

* Each create, update and non-apply patch is recorded as an `Update` by its manager: the `fieldManager` query
  parameter (kubectl always names itself: `kubectl-create`, `kubectl-edit`, ...), else the User-Agent up to
  its first `/`, as kube's `prefixFromUserAgent` (the Python client's writes are `OpenAPI-Generator`'s).
* An apply (`application/apply-patch+yaml`) needs a `fieldManager`; it merges by the kind's shape, refuses
  to change what another manager owns (409 Conflict) unless `force=true`, and removes what it stopped applying.
* A write may replace `managedFields` itself (kubectl's upgrade from client-side apply does, with a JSON
  patch); one that leaves them out keeps the stored ones; `managedFields: []` clears them. A subresource write
  always starts from the stored ones.
* Where a kind has a `status` subresource, the main resource owns everything but `status` and the
  subresource owns only `status`, each entry marked with its `subresource`.

Writes the controllers make straight to the store are not recorded (they are no client's).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from starlette.requests import Request

from mpijob.api import Obj
from mpijob.api.core import errors
from mpijob.api.core import managed_fields as mf
from mpijob.api.core.resources import Resource
from mpijob.server.http import parse_bool
from mpijob.server.patch import MERGE_KEYS
from mpijob.store.objects import now

MAX_MANAGER = 128  # kube's FieldManagerMaxLength, in bytes

# The core kinds' keyed lists: strategic merge patch's keys, except where kube's schema keys a list for apply
# otherwise (`+listMapKey` in k8s.io/api/core/v1: a container port is its port and protocol, TCP unless
# given; tolerations and container statuses are atomic lists).
CORE_LISTS: dict[str, dict[str, Any]] = {
    **{name: {"l": "map", "k": [key]} for name, key in MERGE_KEYS.items()
       if name not in ("tolerations", "containerStatuses")},
    "ports": {"l": "map", "k": ["containerPort", "protocol"], "d": {"protocol": "TCP"}},
}


@cache
def shape(res: Resource) -> mf.Shape:
    """How apply merges `res`: a CRD's list types, the core kinds' keyed lists, or (RBAC, NetworkPolicy)
    atomic lists throughout, as their strategic merge patches treat them."""
    if res.builtin:
        return mf.keyed_lists(CORE_LISTS if not res.group else {})
    return mf.crd_shape(res.group, res.version, res.kind)


def _from_user_agent(agent: str) -> str:
    """The User-Agent up to its first `/`, printable characters only, at most 128 bytes."""
    out = ""
    for char in agent.split("/", maxsplit=1)[0]:
        if not char.isprintable():
            continue
        if len((out + char).encode()) > MAX_MANAGER:
            break
        out += char
    return out


def manager(request: Request, options: str, *, apply: bool = False) -> str:
    """The request's manager, after kube's checks of its `options` (CreateOptions, UpdateOptions, PatchOptions),
    made before anything else: an apply must name one, a name is at most 128 bytes of printable characters,
    `force` is for applies only."""
    q = request.query_params
    given = q.get("fieldManager", "")
    causes: list[errors.Cause] = []
    if options == "PatchOptions" and not apply and "force" in q:
        causes.append(errors.Cause("force", "Forbidden: may not be specified for non-apply patch",
                                   "FieldValueForbidden"))
    if apply and not given:
        causes.append(errors.Cause("fieldManager", "Required value: is required for apply patch",
                                   "FieldValueRequired"))
    if len(given.encode()) > MAX_MANAGER:
        causes.append(errors.Cause("fieldManager", f"Too long: may not be more than {MAX_MANAGER} bytes",
                                   "FieldValueTooLong"))
    position = 0
    for char in given:
        if not char.isprintable():
            causes.append(errors.Cause("fieldManager", f"Invalid value: {json.dumps(given)}: invalid character "
                                                       f"U+{ord(char):04X} (at position {position})"))
        position += len(char.encode())
    if causes:
        raise errors.invalid(options, "", causes, "meta.k8s.io")
    return _name(request)


def _name(request: Request) -> str:
    return request.query_params.get("fieldManager") or _from_user_agent(request.headers.get("user-agent", ""))


def _ignored(res: Resource, subresource: str) -> mf.Ignored:
    """What a write to `subresource` may not own: all but `status` on the status subresource, `status` on the
    main resource of a kind that has one (kube's reset fields)."""
    if subresource == "status":
        return lambda path: path[:1] != (("f", "status"),)
    if "status" in res.subresources:
        return lambda path: path[:1] == (("f", "status"),)
    return lambda _: False


def _stored(obj: Obj | None) -> mf.Managed:
    """The entries an object carries; none when they cannot be read (kube then starts afresh too)."""
    try:
        return mf.decode(((obj or {}).get("metadata") or {}).get("managedFields"))
    except ValueError:
        return {}


def record(obj: Obj, managed: mf.Managed) -> Obj:
    """`obj` with `managed` as its `metadata.managedFields` (none at all when empty, as kube writes it)."""
    meta = obj.setdefault("metadata", {})
    encoded = mf.encode(managed)
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)
    return obj


def track(request: Request, res: Resource, new: Obj, old: Obj | None, subresource: str = "") -> mf.Managed:
    """The entries after a create (`old` None), update or non-apply patch of `new`, recorded as its manager's
    `Update`; `res` is the version the client wrote, the objects as that version shows them."""
    name = _name(request)
    base = _stored(old)
    given = (new.get("metadata") or {}).get("managedFields")
    if not subresource and given is not None:
        if mf.is_reset(given):
            base = {}
        elif mine := _stored(new):
            base = mine
    after = new
    if subresource == "status" and old is not None:  # what the store keeps of a status write
        after = {**old, "status": new.get("status", {})}
    return mf.update(old, after, base, name, res.api_version, shape=shape(res), now=now(), subresource=subresource,
                     ignored=_ignored(res, subresource))


def apply(request: Request, res: Resource, live: Obj | None, config: Obj, subresource: str = "") -> Obj:
    """Server-side apply of `config` by the request's manager over `live` (None when it creates): the merged
    object with its `managedFields`; 409 Conflict when it would change another manager's fields without
    `force=true`."""
    name = _name(request)
    force = parse_bool(request.query_params.get("force"), "force")
    meta = config.get("metadata") or {}
    namespace = meta.get("namespace") or ((live or {}).get("metadata") or {}).get("namespace", "")
    if meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    kind_shape = shape(res)
    if problems := mf.applied_errors(config, kind_shape):
        said = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
        raise errors.bad_request(f"failed to create typed patch object ({namespace}/"
                                 f"{meta.get('name', '')}; {res.group}/{res.version}, Kind={res.kind}): {said}")
    try:
        merged, managed = mf.apply(live, config, _stored(live), name, res.api_version, shape=kind_shape, now=now(),
                                   force=force, subresource=subresource, ignored=_ignored(res, subresource))
    except mf.Conflicts as conflicts:
        raise mf.conflict_error(conflicts) from None
    return record(merged, managed)
