"""`mpijob get KIND [NAME]` with kubectl's output formats: TrainJobs, their pods, the runtimes, and
(from `queue_cmd`) Kueue's queues. Which code shows a kind is one registry, `GETTERS`."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, PODS, TRAINING_RUNTIMES, TRAINJOBS, Resource
from mpijob.cli import output, queue_cmd
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, handles_errors, namespace_given

if TYPE_CHECKING:
    from mpijob.client.connection import Connection

OutputOpt = Annotated[
    str | None, typer.Option("--output", "-o", help="json | yaml | wide | name", show_default=False)
]


@dataclass(frozen=True)
class GetRequest:
    """What `get` was asked for, for the handler of one kind."""

    kind: str
    name: str | None
    fmt: str | None
    selector: str | None = None
    job: str | None = None
    all_namespaces: bool = False
    namespace_given: bool = False


_RESOURCES = {"trainjobs": TRAINJOBS, "pods": PODS}


def _runtime_resource(obj: Obj) -> Resource:
    return CLUSTER_TRAINING_RUNTIMES if obj.get("kind") == CLUSTER_TRAINING_RUNTIMES.kind else TRAINING_RUNTIMES


def fetch(conn: "Connection", req: GetRequest) -> list[Obj]:
    """The objects to show; a named object that does not exist is a 404 `ApiError`."""
    kind, name = req.kind, req.name
    if kind == "trainjobs":
        if name:
            return [conn.get_trainjob(name)]
        return conn.list_trainjobs(label_selector=req.selector, all_namespaces=req.all_namespaces)
    if kind == "pods":
        if name:
            return [conn.get_pod(name)]
        sel = ",".join(s for s in (f"{names.LABEL_JOBSET_NAME}={req.job}" if req.job else "", req.selector or "")
                       if s) or None
        return sorted(conn.list_pods(label_selector=sel, all_namespaces=req.all_namespaces),
                      key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
    found: list[Obj] = []
    if kind in ("runtimes", "trainingruntimes"):
        found += conn.list_runtimes(all_namespaces=req.all_namespaces)
    if kind in ("runtimes", "clustertrainingruntimes"):
        found += conn.list_cluster_runtimes()
    if name:
        found = [r for r in found if r["metadata"]["name"] == name][:1]
        if not found:
            res = CLUSTER_TRAINING_RUNTIMES if kind == "clustertrainingruntimes" else TRAINING_RUNTIMES
            where = "" if kind == "clustertrainingruntimes" else f" in namespace {conn.namespace!r}"
            raise ApiError(404, "NotFound", f'{res.group_resource} "{name}" not found{where}; list them with '
                           "`mpijob get runtimes`")
    return found


def _names(kind: str, items: list[Obj]) -> list[str]:
    from mpijob.client.core import display_name

    return [display_name(_RESOURCES.get(kind) or _runtime_resource(obj), obj["metadata"]["name"]) for obj in items]


def _trainjob_rows(conn: "Connection", items: list[Obj], single: bool, wide: bool,
                   all_namespaces: bool) -> list[list[str]]:
    from mpijob.cli import views

    if single:
        pods = conn.job_pods(items[0]["metadata"]["name"], items[0]["metadata"].get("namespace"))
    else:
        pods = conn.list_pods(label_selector=names.LABEL_JOBSET_NAME, all_namespaces=all_namespaces)
    by_job: dict[tuple[str, str], list[Obj]] = {}
    for p in pods:
        key = (p["metadata"].get("namespace", ""), (p["metadata"].get("labels") or {}).get(names.LABEL_JOBSET_NAME, ""))
        by_job.setdefault(key, []).append(p)
    runtimes: dict[str, Obj | None] = {}
    waiting: dict[str, str] = {}
    if wide:
        from mpijob.client.kueue import waiting_messages

        waiting = conn.run(waiting_messages(conn.namespace, all_namespaces))
    rows = []
    for job in items:
        runtime = None
        if ((job.get("spec") or {}).get("trainer") or {}).get("numNodes") is None:
            ref = views.runtime_ref(job)
            if ref not in runtimes:
                runtimes[ref] = conn.runtime_for(job)
            runtime = runtimes[ref]
        key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
        rows.append(views.trainjob_row(job, by_job.get(key, []), runtime, wide,
                                       waiting=waiting.get(job["metadata"].get("uid", ""), "")))
    return rows


def render(conn: "Connection", req: GetRequest, items: list[Obj]) -> None:
    single, fmt, kind = req.name is not None, req.fmt, req.kind
    if fmt in ("json", "yaml"):
        output.dump(items[0] if single else output.as_list(items), fmt)
        return
    if fmt == "name":
        for line in _names(kind, items):
            print(line)
        return
    if not items:
        where = "" if kind == "clustertrainingruntimes" else f" in {conn.namespace} namespace"
        output.info(f"No resources found{where}.")
        return
    from mpijob.cli import views

    wide = fmt == "wide"
    if kind == "trainjobs":
        output.table(views.TRAINJOB_COLUMNS + (views.TRAINJOB_WIDE if wide else []),
                     _trainjob_rows(conn, items, single, wide, req.all_namespaces))
    elif kind == "pods":
        output.table(views.POD_COLUMNS + (views.POD_WIDE if wide else []), [views.pod_row(p, wide) for p in items])
    else:
        output.table(views.RUNTIME_COLUMNS + (views.RUNTIME_WIDE if wide else []),
                     [views.runtime_row(r, wide) for r in items])


def get_builtin(conn: "Connection", req: GetRequest) -> None:
    """TrainJobs, pods and runtimes."""
    render(conn, req, fetch(conn, req))


Getter = Callable[["Connection", GetRequest], None]

# Every word `get` takes for a kind (kubectl's plurals, singulars and short names) → the kind.
ALIASES = {
    "trainjobs": "trainjobs", "trainjob": "trainjobs", "tj": "trainjobs",
    "pods": "pods", "pod": "pods", "po": "pods",
    "runtimes": "runtimes", "runtime": "runtimes", "rt": "runtimes",
    "clustertrainingruntimes": "clustertrainingruntimes", "clustertrainingruntime": "clustertrainingruntimes",
    "trainingruntimes": "trainingruntimes", "trainingruntime": "trainingruntimes",
    **queue_cmd.ALIASES,
}
# The kind → the code that gets and shows it.
GETTERS: dict[str, Getter] = {
    **dict.fromkeys(("trainjobs", "pods", "runtimes", "clustertrainingruntimes", "trainingruntimes"), get_builtin),
    **dict.fromkeys(set(queue_cmd.ALIASES.values()), queue_cmd.get_queues),
}


def kind_of(resource: str) -> str:
    kind = ALIASES.get(resource.lower())
    if kind is None:
        raise UsageError(f"unknown resource type {resource!r}; use trainjobs, pods, runtimes or queues")
    return kind


@handles_errors
def get(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjobs | pods | runtimes (clustertrainingruntimes, "
                                            "trainingruntimes) | queues (clusterqueues, localqueues)")],
    name: Annotated[str | None, typer.Argument(help="Show only this object.", show_default=False)] = None,
    output_format: OutputOpt = None,
    selector: Annotated[str | None, typer.Option("--selector", "-l", help="Label selector.",
                                                    show_default=False)] = None,
    job: Annotated[str | None, typer.Option("--job", help="Pods: only this TrainJob's.",
                                               show_default=False)] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="List across namespaces.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """List or show TrainJobs, their pods, the training runtimes, or the Kueue queues."""
    output.check_format(output_format)
    kind = kind_of(resource)
    req = GetRequest(kind, name, output_format, selector, job, all_namespaces, namespace_given(ctx, namespace))
    with connect(ctx, kubeconfig, context, namespace) as conn:
        GETTERS[kind](conn, req)
