"""`mpijob get queues|clusterqueues|localqueues` and `mpijob describe queue NAME`: Kueue queues, their
quota and use, and who waits in which order — through the Kubernetes API only, so the same commands
work on the local cluster and on a real one with Kueue.

`get` and `describe` are single commands owned by `get_cmd`/`describe_cmd`; `with_queues_get` and
`with_queues_describe` wrap them so the queue kinds are handled here and every other kind there.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from mpijob.api import errors
from mpijob.cli import output, queue_views
from mpijob.cli.describe_cmd import check_describe_format
from mpijob.cli.get_cmd import check_format
from mpijob.cli.session import connect, globals_of, handles_errors
from mpijob.client.api import Cluster

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
PREFERRED_VERSIONS = ("v1beta2", "v1beta1")

KINDS = {
    "queues": "queues", "queue": "queues",
    "clusterqueues": "clusterqueues", "clusterqueue": "clusterqueues", "cq": "clusterqueues",
    "localqueues": "localqueues", "localqueue": "localqueues", "lq": "localqueues",
}
SINGULAR = {"clusterqueues": "clusterqueue", "localqueues": "localqueue"}


def queue_kind(resource: str) -> str | None:
    """`queues`, `clusterqueues` or `localqueues` for a queue resource name or alias, else None."""
    return KINDS.get(resource.lower())


class Kueue:
    """Kueue objects through one connection, at the newest Kueue API version the cluster serves."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._version: str | None = None

    @property
    def version(self) -> str:
        if self._version is None:
            try:
                group = self.cluster.request("GET", f"/apis/{KUEUE}") or {}
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
                raise errors.ApiError(404, "NotFound", f"this cluster does not serve the {KUEUE} API (Kueue is "
                                      f"not installed): there are no queues to show") from None
            served = [v.get("version") for v in group.get("versions") or []]
            self._version = next((v for v in PREFERRED_VERSIONS if v in served),
                                 (group.get("preferredVersion") or {}).get("version") or PREFERRED_VERSIONS[0])
        return self._version

    def _path(self, plural: str, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{KUEUE}/{self.version}"
        path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
        return f"{path}/{name}" if name else path

    def get(self, plural: str, name: str, namespace: str | None = None) -> Obj:
        return self.cluster.request("GET", self._path(plural, namespace, name))  # type: ignore[no-any-return]

    def list(self, plural: str, namespace: str | None = None) -> list[Obj]:
        items = list((self.cluster.request("GET", self._path(plural, namespace)) or {}).get("items") or [])
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def list_visible(self, plural: str, fallback_namespace: str) -> list[Obj]:
        """All namespaces' objects, or only `fallback_namespace`'s when listing across is forbidden."""
        try:
            return self.list(plural)
        except errors.ApiError as exc:
            if exc.code != 403:
                raise
            return self.list(plural, fallback_namespace)

    def pending(self, cluster_queue: str | None = None, namespace: str = "", local_queue: str = "") -> list[Obj]:
        """Visibility API items, first in line first."""
        path = (f"{VISIBILITY}/clusterqueues/{cluster_queue}/pendingworkloads" if cluster_queue
                else f"{VISIBILITY}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads")
        return list((self.cluster.request("GET", path) or {}).get("items") or [])


# -- get ------------------------------------------------------------------------------------------


def run_get(cluster: Cluster, kind: str, name: str | None, fmt: str | None, all_namespaces: bool,
            namespace_given: bool) -> None:
    kueue = Kueue(cluster)
    cqs: list[Obj] = []
    lqs: list[Obj] = []
    if kind in ("queues", "clusterqueues"):
        cqs = [kueue.get("clusterqueues", name)] if name else kueue.list("clusterqueues")
    if kind == "localqueues":
        if name:
            lqs = [kueue.get("localqueues", name, cluster.namespace)]
        else:
            lqs = kueue.list("localqueues", None if all_namespaces else cluster.namespace)
    elif kind == "queues":
        if all_namespaces or not namespace_given:
            lqs = kueue.list_visible("localqueues", cluster.namespace)
        else:
            lqs = kueue.list("localqueues", cluster.namespace)
        if name:
            lqs = [lq for lq in lqs if (lq.get("spec") or {}).get("clusterQueue") == name]
    _print(kind, cqs, lqs, fmt, single=name is not None, cluster=cluster, show_namespace=kind == "queues"
           or all_namespaces)


def _print(kind: str, cqs: list[Obj], lqs: list[Obj], fmt: str | None, single: bool, cluster: Cluster,
           show_namespace: bool) -> None:
    items = cqs + lqs
    if fmt in ("json", "yaml"):
        output.dump(items[0] if single and len(items) == 1 else output.as_list(items), fmt)
        return
    if fmt == "name":
        for obj in items:
            plural = "clusterqueues" if obj.get("kind") == "ClusterQueue" else "localqueues"
            print(f"{SINGULAR[plural]}.{KUEUE}/{obj['metadata']['name']}")
        return
    if not items:
        where = "" if kind == "clusterqueues" or show_namespace else f" in {cluster.namespace} namespace"
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


def _workloads(kueue: Kueue, items: list[Obj]) -> dict[tuple[str, str], Obj]:
    """The Workloads behind visibility items (for their pending messages), by (namespace, name)."""
    out: dict[tuple[str, str], Obj] = {}
    for ns in sorted({str((i.get("metadata") or {}).get("namespace", "")) for i in items}):
        for wl in kueue.list("workloads", ns):
            out[(ns, wl["metadata"]["name"])] = wl
    return out


def _pending(kueue: Kueue, lqs: set[tuple[str, str]], **where: str) -> tuple[list[Obj], str]:
    """Positions from the visibility API; when the cluster cannot answer, the Workloads in Kueue's
    order without positions, and a note saying why."""
    try:
        return kueue.pending(**where), ""
    except errors.ApiError as exc:
        if exc.code not in (404, 500, 501, 503):
            raise
        note = f"positions unavailable: {exc.message}"
    namespaces = sorted({ns for ns, _ in lqs})
    workloads = [wl for ns in namespaces for wl in kueue.list("workloads", ns)]
    return queue_views.fallback_pending(workloads, lqs), note


def describe_cluster_queue(cluster: Cluster, name: str) -> str:
    kueue = Kueue(cluster)
    cq = kueue.get("clusterqueues", name)
    lqs = [lq for lq in kueue.list_visible("localqueues", cluster.namespace)
           if (lq.get("spec") or {}).get("clusterQueue") == name]
    keys = {(lq["metadata"].get("namespace", ""), lq["metadata"]["name"]) for lq in lqs}
    pending, note = _pending(kueue, keys, cluster_queue=name)
    return queue_views.describe_cluster_queue(cq, lqs, pending, _workloads(kueue, pending), note)


def describe_local_queue(cluster: Cluster, name: str) -> str:
    kueue = Kueue(cluster)
    ns = cluster.namespace
    lq = kueue.get("localqueues", name, ns)
    cq_name = str((lq.get("spec") or {}).get("clusterQueue", ""))
    try:
        cq: Obj | None = kueue.get("clusterqueues", cq_name) if cq_name else None
    except errors.ApiError as exc:
        if exc.code not in (403, 404):
            raise
        cq = None
    pending, note = _pending(kueue, {(ns, name)}, namespace=ns, local_queue=name)
    return queue_views.describe_local_queue(lq, cq, pending, _workloads(kueue, pending), note)


def run_describe(cluster: Cluster, kind: str, name: str, namespace_given: bool) -> str:
    """`clusterqueue`/`localqueue` as asked; `queue` is the ClusterQueue unless `-n` is given, and
    falls back to the LocalQueue of that name in the current namespace."""
    if kind == "clusterqueues" or (kind == "queues" and not namespace_given):
        try:
            return describe_cluster_queue(cluster, name)
        except errors.ApiError as exc:
            if exc.code != 404 or kind == "clusterqueues" or "does not serve" in exc.message:
                raise
        try:
            return describe_local_queue(cluster, name)
        except errors.ApiError as exc:
            if exc.code != 404:
                raise
            raise errors.ApiError(
                404, "NotFound", f'no ClusterQueue "{name}" and no LocalQueue "{name}" in namespace '
                f'"{cluster.namespace}"; list the queues with `mpijob get queues`', name, KUEUE, "queue",
            ) from None
    return describe_local_queue(cluster, name)


def queue_object(cluster: Cluster, kind: str, name: str, namespace_given: bool) -> Obj:
    """The object `describe` would describe (`-o json|yaml`), found the way `run_describe` finds it."""
    kueue = Kueue(cluster)
    if kind == "clusterqueues" or (kind == "queues" and not namespace_given):
        try:
            return kueue.get("clusterqueues", name)
        except errors.ApiError as exc:
            if exc.code != 404 or kind == "clusterqueues" or "does not serve" in exc.message:
                raise
    return kueue.get("localqueues", name, cluster.namespace)


# -- wiring into `get` and `describe` -------------------------------------------------------------


def _with_resource_help(
    base: Callable[..., Any], wrapper: Callable[..., Any], help_text: str, doc: str
) -> Callable[..., Any]:
    """The wrapper takes `base`'s parameters; only the `resource` argument's help and the doc change."""
    wrapper.__doc__ = doc
    sig = inspect.signature(base, eval_str=True)
    helps = {"resource": help_text, "name": "The object's name." if "name" in sig.parameters else ""}

    def arg(p: inspect.Parameter) -> inspect.Parameter:
        if p.name not in helps or p.default is not inspect.Parameter.empty:
            return p
        return p.replace(annotation=Annotated[str, typer.Argument(help=helps[p.name])])

    params = [arg(p) for p in sig.parameters.values()]
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


def with_queues_get(base: Callable[..., Any]) -> Callable[..., Any]:
    """`get` that also knows `queues` (ClusterQueues and LocalQueues), `clusterqueues`, `localqueues`."""

    @handles_errors
    def queues(ctx: typer.Context, resource: str, name: str | None = None, output_format: str | None = None,
               all_namespaces: bool = False, kubeconfig: str | None = None, context: str | None = None,
               namespace: str | None = None, **_: Any) -> None:
        check_format(output_format)
        given = bool(namespace or globals_of(ctx).namespace)
        with connect(ctx, kubeconfig, context, namespace) as cluster:
            run_get(cluster, queue_kind(resource) or "queues", name, output_format, all_namespaces, given)

    @functools.wraps(base)
    def get(*args: Any, **kwargs: Any) -> Any:
        if queue_kind(str(kwargs.get("resource", ""))):
            return queues(*args, **kwargs)
        return base(*args, **kwargs)

    return _with_resource_help(base, get, "trainjobs | pods | runtimes (clustertrainingruntimes, trainingruntimes) "
                               "| queues (clusterqueues, localqueues)",
                               "List or show TrainJobs, their pods, the training runtimes, or the Kueue queues.")


def with_queues_describe(base: Callable[..., Any]) -> Callable[..., Any]:
    """`describe` that also knows `queue` / `clusterqueue` / `localqueue`."""

    @handles_errors
    def queue(ctx: typer.Context, resource: str, name: str, output_format: str | None = None,
              kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None,
              **_: Any) -> None:
        check_describe_format(output_format)
        given = bool(namespace or globals_of(ctx).namespace)
        with connect(ctx, kubeconfig, context, namespace) as cluster:
            if output_format is not None:
                output.dump(queue_object(cluster, queue_kind(resource) or "queues", name, given), output_format)
                return
            text = run_describe(cluster, queue_kind(resource) or "queues", name, given)
        sys.stdout.write(text)

    @functools.wraps(base)
    def describe(*args: Any, **kwargs: Any) -> Any:
        if queue_kind(str(kwargs.get("resource", ""))):
            return queue(*args, **kwargs)
        return base(*args, **kwargs)

    return _with_resource_help(base, describe, "trainjob | queue (clusterqueue, localqueue)",
                               "Describe a TrainJob (spec, conditions, pods, events) or a queue (quota, use, "
                               "pending workloads in order and why they wait).")
