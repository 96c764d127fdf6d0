"""Kueue's on-demand visibility API: the pending workloads of a ClusterQueue or LocalQueue, in order.

Read-only and computed per request from a scheduler snapshot, as Kueue's visibility server answers
from its in-memory queues rather than from stored objects. Paths, field names, paging (`offset`,
`limit`, default 1000) and 404s follow Kueue's `visibility.kueue.x-k8s.io/v1beta2`:

    GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads
    GET /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import Obj, names
from mpijob.api.core import errors
from mpijob.api.core.resources import lookup
from mpijob.api.kueue.snapshot import Snapshot, Workload
from mpijob.server.http import ANY_METHOD, json_response, parse_int, read_only
from mpijob.server.ports import Controllers
from mpijob.server.state import Cluster
from mpijob.store.objects import Store

Positions = Mapping[str, tuple[int, int]]  # "<ns>/<name>" → (position in ClusterQueue, in LocalQueue)

GROUP = names.KUEUE_VISIBILITY_GROUP
VERSION = names.KUEUE_VERSION
API_VERSION = f"{GROUP}/{VERSION}"
DEFAULT_LIMIT = 1000  # Kueue's DefaultPendingWorkloadsLimit

router = APIRouter()


# -- pure: which workloads, in which order, rendered how ---------------------------------------------


def pending_in_cluster_queue(snap: Snapshot, positions: Positions, cluster_queue: str) -> list[Workload]:
    """The ClusterQueue's pending workloads (those with a position), first in line first."""
    found = [w for w in snap.workloads if w.cluster_queue == cluster_queue and w.key in positions]
    return sorted(found, key=lambda w: positions[w.key][0])


def pending_in_local_queue(snap: Snapshot, positions: Positions, namespace: str, local_queue: str) -> list[Workload]:
    """The LocalQueue's pending workloads, ordered by their position in it."""
    found = [w for w in snap.workloads
             if w.namespace == namespace and w.local_queue == local_queue and w.key in positions]
    return sorted(found, key=lambda w: positions[w.key][1])


def page(items: list[Workload], offset: int, limit: int) -> list[Workload]:
    """Kueue's bounds: negative offset or limit count as 0."""
    offset, limit = max(offset, 0), max(limit, 0)
    return items[offset:offset + limit]


def pending_workload(wl: Workload, position: tuple[int, int], obj: Obj | None = None) -> Obj:
    """One `PendingWorkload`: the Workload's identity (from its stored object when there is one)."""
    meta = (obj or {}).get("metadata") or {}
    out_meta: Obj = {
        "name": meta.get("name") or wl.key.partition("/")[2],
        "namespace": meta.get("namespace") or wl.namespace,
        "creationTimestamp": meta.get("creationTimestamp") or wl.created or None,
    }
    owners = [{k: ref[k] for k in ("apiVersion", "kind", "name", "uid") if k in ref}
              for ref in meta.get("ownerReferences") or []]
    if owners:
        out_meta["ownerReferences"] = owners
    return {
        "metadata": out_meta,
        "priority": wl.priority,
        "localQueueName": wl.local_queue,
        "positionInClusterQueue": position[0],
        "positionInLocalQueue": position[1],
    }


def summary(items: list[Obj]) -> Obj:
    return {"kind": "PendingWorkloadsSummary", "apiVersion": API_VERSION, "metadata": {}, "items": items}


def api_group() -> Obj:
    gv = {"groupVersion": API_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [gv], "preferredVersion": gv}


def api_resource_list() -> Obj:
    def entry(name: str, kind: str, namespaced: bool) -> Obj:
        return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["get"]}

    return {
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": API_VERSION,
        "resources": [
            entry("clusterqueues", "ClusterQueue", False),
            entry("clusterqueues/pendingworkloads", "PendingWorkloadsSummary", False),
            entry("localqueues", "LocalQueue", True),
            entry("localqueues/pendingworkloads", "PendingWorkloadsSummary", True),
        ],
    }


# -- I/O: the snapshot, the stored objects, HTTP ------------------------------------------------------


def compute_positions(store: Store, controllers: Controllers) -> tuple[Snapshot, Positions]:
    """The scheduler's view of the queues now."""
    snap = controllers.snapshot(store)
    return snap, controllers.queue_positions(snap)


def _stored(store: Store, plural: str, namespace: str, name: str) -> Obj | None:
    res = lookup(names.KUEUE_GROUP, names.KUEUE_VERSION, plural)
    return None if res is None else store.try_get(res, namespace, name)


def _render(store: Store, wls: list[Workload], positions: Positions) -> Obj:
    items = []
    for wl in wls:
        ns, _, name = wl.key.partition("/")
        items.append(pending_workload(wl, positions[wl.key], _stored(store, "workloads", ns, name)))
    return summary(items)


def _paging(request: Request) -> tuple[int, int]:
    q = request.query_params
    offset = parse_int(q.get("offset"), "offset")
    limit = parse_int(q.get("limit"), "limit")
    return offset or 0, limit if limit else DEFAULT_LIMIT  # Kueue: limit 0 means the default


def cluster_queue_summary(
    store: Store, name: str, compute: Callable[[Store], tuple[Snapshot, Positions]], offset: int = 0,
    limit: int = DEFAULT_LIMIT,
) -> Obj:
    if (lookup(names.KUEUE_GROUP, names.KUEUE_VERSION, "clusterqueues") is not None
            and _stored(store, "clusterqueues", "", name) is None):
        raise errors.not_found("clusterqueue", name, GROUP)
    snap, positions = compute(store)
    if name not in snap.cluster_queues:
        raise errors.not_found("clusterqueue", name, GROUP)
    return _render(store, page(pending_in_cluster_queue(snap, positions, name), offset, limit), positions)


def local_queue_summary(
    store: Store, namespace: str, name: str, compute: Callable[[Store], tuple[Snapshot, Positions]],
    offset: int = 0, limit: int = DEFAULT_LIMIT,
) -> Obj:
    served = lookup(names.KUEUE_GROUP, names.KUEUE_VERSION, "localqueues") is not None
    if served and _stored(store, "localqueues", namespace, name) is None:
        raise errors.not_found("localqueue", name, GROUP)
    snap, positions = compute(store)
    wls = page(pending_in_local_queue(snap, positions, namespace, name), offset, limit)
    return _render(store, wls, positions)


def _cluster(request: Request) -> Cluster:
    return request.app.state.cluster



@router.api_route(f"/apis/{GROUP}", methods=ANY_METHOD)
async def group_doc(request: Request) -> Response:
    read_only(request, GROUP)
    return json_response(api_group())


@router.api_route(f"/apis/{GROUP}/{VERSION}", methods=ANY_METHOD)
async def version_doc(request: Request) -> Response:
    read_only(request, GROUP)
    return json_response(api_resource_list())


@router.api_route(f"/apis/{GROUP}/{VERSION}/{{rest:path}}", methods=ANY_METHOD)
async def pending_workloads(request: Request, rest: str) -> Response:
    read_only(request, GROUP)
    parts = [p for p in rest.split("/") if p]
    offset, limit = _paging(request)
    cluster = _cluster(request)
    compute = partial(compute_positions, controllers=cluster.controllers)
    if len(parts) == 3 and parts[0] == "clusterqueues" and parts[2] == "pendingworkloads":
        return json_response(cluster_queue_summary(cluster.store, parts[1], compute, offset, limit))
    if len(parts) == 5 and parts[0] == "namespaces" and parts[2] == "localqueues" and parts[4] == "pendingworkloads":
        return json_response(local_queue_summary(cluster.store, parts[1], parts[3], compute, offset, limit))
    raise errors.ApiError(
        404, "NotFound",
        f"the server could not find the requested resource (/apis/{API_VERSION}/{rest}); the visibility API "
        f"serves clusterqueues/NAME/pendingworkloads and namespaces/NS/localqueues/NAME/pendingworkloads",
    )
