"""`mpijob get queues|clusterqueues|localqueues` and `mpijob describe queue NAME`: Kueue queues, their
quota and use, and who waits in which order — through the Kubernetes API only (`mpijob.client.kueue`),
so the same commands work on the local cluster and on a real one with Kueue.

`get` and `describe` are single commands (`get_cmd`, `describe_cmd`); each finds the handler of a kind
in its registry, and the queue kinds' handlers are these. Imported by those commands' modules for
`ALIASES`, so the rest loads only when a queue is shown.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.cli import output

if TYPE_CHECKING:
    from mpijob.cli.get_cmd import GetRequest
    from mpijob.client.connection import Connection
    from mpijob.client.kueue import Kueue

ALIASES = {
    "queues": "queues", "queue": "queues",
    "clusterqueues": "clusterqueues", "clusterqueue": "clusterqueues", "cq": "clusterqueues",
    "localqueues": "localqueues", "localqueue": "localqueues", "lq": "localqueues",
}
SINGULAR = {"clusterqueues": "clusterqueue", "localqueues": "localqueue"}


# -- get ------------------------------------------------------------------------------------------


def get_queues(conn: Connection, req: GetRequest) -> None:
    """`get queues` (ClusterQueues, then the LocalQueues one may see), `clusterqueues`, `localqueues`."""
    from mpijob.client.kueue import Kueue

    kueue, name, kind = Kueue(), req.name, req.kind
    cqs: list[Obj] = []
    lqs: list[Obj] = []
    if kind in ("queues", "clusterqueues"):
        cqs = [conn.run(kueue.get("clusterqueues", name))] if name else conn.run(kueue.list("clusterqueues"))
    if kind == "localqueues":
        if name:
            lqs = [conn.run(kueue.get("localqueues", name, conn.namespace))]
        else:
            lqs = conn.run(kueue.list("localqueues", None if req.all_namespaces else conn.namespace))
    elif kind == "queues":
        if req.all_namespaces or not req.namespace_given:
            lqs = conn.run(kueue.list_visible("localqueues", conn.namespace))
        else:
            lqs = conn.run(kueue.list("localqueues", conn.namespace))
        if name:
            lqs = [lq for lq in lqs if (lq.get("spec") or {}).get("clusterQueue") == name]
    _print(kind, cqs, lqs, req.fmt, single=name is not None, namespace=conn.namespace,
           show_namespace=kind == "queues" or req.all_namespaces)


def _print(kind: str, cqs: list[Obj], lqs: list[Obj], fmt: str | None, single: bool, namespace: str,
           show_namespace: bool) -> None:
    from mpijob.cli import queue_views

    items = cqs + lqs
    if fmt in ("json", "yaml"):
        output.dump(items[0] if single and len(items) == 1 else output.as_list(items), fmt)
        return
    if fmt == "name":
        for obj in items:
            plural = "clusterqueues" if obj.get("kind") == "ClusterQueue" else "localqueues"
            print(f"{SINGULAR[plural]}.{names.KUEUE_GROUP}/{obj['metadata']['name']}")
        return
    if not items:
        where = "" if kind == "clusterqueues" or show_namespace else f" in {namespace} namespace"
        output.info(f"No resources found{where}.")
        return
    wide = fmt == "wide"
    if cqs:
        output.table(queue_views.CQ_COLUMNS + (queue_views.CQ_WIDE if wide else []),
                     [queue_views.cluster_queue_row(cq, wide) for cq in cqs])
    if cqs and lqs:
        sys.stdout.write("\n")
    if lqs:
        columns = queue_views.LQ_COLUMNS if show_namespace else queue_views.LQ_COLUMNS[1:]
        output.table(columns + (queue_views.LQ_WIDE if wide else []),
                     [queue_views.local_queue_row(lq, wide, namespace=show_namespace) for lq in lqs])
    for note in queue_views.inactive_notes(cqs + lqs):  # stderr: the tables stay parseable
        output.info(note)


# -- describe -------------------------------------------------------------------------------------


def _workloads(conn: Connection, kueue: Kueue, items: list[Obj]) -> dict[tuple[str, str], Obj]:
    """The Workloads behind visibility items (for their pending messages), by (namespace, name)."""
    out: dict[tuple[str, str], Obj] = {}
    for ns in sorted({str((i.get("metadata") or {}).get("namespace", "")) for i in items}):
        for wl in conn.run(kueue.list("workloads", ns)):
            out[(ns, wl["metadata"]["name"])] = wl
    return out


def _pending(conn: Connection, kueue: Kueue, lqs: set[tuple[str, str]], **where: str) -> tuple[list[Obj], str]:
    """Positions from the visibility API; when the cluster cannot answer, the Workloads in Kueue's
    order without positions, and a note saying why."""
    from mpijob.cli import queue_views
    from mpijob.client import kueue as kq

    try:
        return conn.run(kq.pending(**where)), ""
    except ApiError as exc:
        if exc.code not in (404, 500, 501, 503):
            raise
        note = f"positions unavailable: {exc.message}"
    namespaces = sorted({ns for ns, _ in lqs})
    workloads = [wl for ns in namespaces for wl in conn.run(kueue.list("workloads", ns))]
    return queue_views.fallback_pending(workloads, lqs), note


def describe_cluster_queue(conn: Connection, name: str) -> str:
    from mpijob.cli import queue_views
    from mpijob.client.kueue import Kueue

    kueue = Kueue()
    cq = conn.run(kueue.get("clusterqueues", name))
    lqs = [lq for lq in conn.run(kueue.list_visible("localqueues", conn.namespace))
           if (lq.get("spec") or {}).get("clusterQueue") == name]
    keys = {(lq["metadata"].get("namespace", ""), lq["metadata"]["name"]) for lq in lqs}
    pending, note = _pending(conn, kueue, keys, cluster_queue=name)
    return queue_views.describe_cluster_queue(cq, lqs, pending, _workloads(conn, kueue, pending), note)


def describe_local_queue(conn: Connection, name: str) -> str:
    from mpijob.cli import queue_views
    from mpijob.client.kueue import Kueue

    kueue = Kueue()
    ns = conn.namespace
    lq = conn.run(kueue.get("localqueues", name, ns))
    cq_name = str((lq.get("spec") or {}).get("clusterQueue", ""))
    try:
        cq: Obj | None = conn.run(kueue.get("clusterqueues", cq_name)) if cq_name else None
    except ApiError as exc:
        if exc.code not in (403, 404):
            raise
        cq = None
    pending, note = _pending(conn, kueue, {(ns, name)}, namespace=ns, local_queue=name)
    return queue_views.describe_local_queue(lq, cq, pending, _workloads(conn, kueue, pending), note)


def _missing_cluster_queue(exc: ApiError, kind: str) -> bool:
    """Whether `describe queue NAME` may fall back to the LocalQueue NAME after this error."""
    from mpijob.client import kueue as kq

    return exc.code == 404 and kind != "clusterqueues" and kq.NOT_INSTALLED not in exc.message


def describe_text(conn: Connection, kind: str, name: str, namespace_given: bool) -> str:
    """`clusterqueue`/`localqueue` as asked; `queue` is the ClusterQueue unless `-n` is given, and
    falls back to the LocalQueue of that name in the current namespace."""
    if kind == "clusterqueues" or (kind == "queues" and not namespace_given):
        try:
            return describe_cluster_queue(conn, name)
        except ApiError as exc:
            if not _missing_cluster_queue(exc, kind):
                raise
        try:
            return describe_local_queue(conn, name)
        except ApiError as exc:
            if exc.code != 404:
                raise
            raise ApiError(
                404, "NotFound", f'no ClusterQueue "{name}" and no LocalQueue "{name}" in namespace '
                f'"{conn.namespace}"; list the queues with `mpijob get queues`', name, names.KUEUE_GROUP, "queue",
            ) from None
    return describe_local_queue(conn, name)


def queue_object(conn: Connection, kind: str, name: str, namespace_given: bool) -> Obj:
    """The object `describe` would describe (`-o json|yaml`), found the way `describe_text` finds it."""
    from mpijob.client.kueue import Kueue

    kueue = Kueue()
    if kind == "clusterqueues" or (kind == "queues" and not namespace_given):
        try:
            return conn.run(kueue.get("clusterqueues", name))
        except ApiError as exc:
            if not _missing_cluster_queue(exc, kind):
                raise
    return conn.run(kueue.get("localqueues", name, conn.namespace))


def describe_queue(conn: Connection, kind: str, name: str, fmt: str | None, namespace_given: bool) -> None:
    """`describe queue|clusterqueue|localqueue NAME` (`-o json|yaml`: the object)."""
    if fmt is not None:
        output.dump(queue_object(conn, kind, name, namespace_given), fmt)
        return
    sys.stdout.write(describe_text(conn, kind, name, namespace_given))
