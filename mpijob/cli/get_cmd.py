"""`mpijob get trainjobs|pods|runtimes [NAME]` with kubectl's output formats."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from mpijob.api import errors
from mpijob.api.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    PODS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    Resource,
)
from mpijob.cli import output, views
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)
from mpijob.client.api import JOB_LABEL, Cluster, display_name

Obj = dict[str, Any]

ALIASES = {
    "trainjobs": "trainjobs", "trainjob": "trainjobs", "tj": "trainjobs",
    "pods": "pods", "pod": "pods", "po": "pods",
    "runtimes": "runtimes", "runtime": "runtimes", "rt": "runtimes",
    "clustertrainingruntimes": "clustertrainingruntimes", "clustertrainingruntime": "clustertrainingruntimes",
    "trainingruntimes": "trainingruntimes", "trainingruntime": "trainingruntimes",
}
_RESOURCES = {"trainjobs": TRAINJOBS, "pods": PODS}

OutputOpt = Annotated[
    Optional[str], typer.Option("--output", "-o", help="json | yaml | wide | name", show_default=False)
]


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in output.FORMATS:
        raise UsageError(f"--output {fmt!r} is not supported; use one of: {', '.join(output.FORMATS)}")


def kind_of(resource: str) -> str:
    kind = ALIASES.get(resource.lower())
    if kind is None:
        raise UsageError(f"unknown resource type {resource!r}; use trainjobs, pods, runtimes or queues")
    return kind


def _runtime_resource(obj: Obj) -> Resource:
    return CLUSTER_TRAINING_RUNTIMES if obj.get("kind") == "ClusterTrainingRuntime" else TRAINING_RUNTIMES


def fetch(
    cluster: Cluster, kind: str, name: str | None, selector: str | None, all_namespaces: bool, job: str | None
) -> list[Obj]:
    """The objects to show; a named object that does not exist is a 404 `ApiError`."""
    if kind == "trainjobs":
        if name:
            return [cluster.get_trainjob(name)]
        return cluster.list_trainjobs(label_selector=selector, all_namespaces=all_namespaces)
    if kind == "pods":
        if name:
            return [cluster.get_pod(name)]
        sel = ",".join(s for s in (f"{JOB_LABEL}={job}" if job else "", selector or "") if s) or None
        return sorted(cluster.list_pods(label_selector=sel, all_namespaces=all_namespaces),
                      key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
    found: list[Obj] = []
    if kind in ("runtimes", "trainingruntimes"):
        found += cluster.list_runtimes(all_namespaces=all_namespaces)
    if kind in ("runtimes", "clustertrainingruntimes"):
        found += cluster.list_cluster_runtimes()
    if name:
        found = [r for r in found if r["metadata"]["name"] == name][:1]
        if not found:
            res = CLUSTER_TRAINING_RUNTIMES if kind == "clustertrainingruntimes" else TRAINING_RUNTIMES
            where = "" if kind == "clustertrainingruntimes" else f" in namespace {cluster.namespace!r}"
            raise errors.ApiError(
                404, "NotFound", f'{res.group_resource} "{name}" not found{where}; list them with `mpijob get runtimes`'
            )
    return found


def _names(kind: str, items: list[Obj]) -> list[str]:
    out = []
    for obj in items:
        res = _runtime_resource(obj) if kind not in _RESOURCES else _RESOURCES[kind]
        out.append(display_name(res, obj["metadata"]["name"]))
    return out


def render(
    cluster: Cluster, kind: str, items: list[Obj], fmt: str | None, single: bool, all_namespaces: bool = False
) -> None:
    if fmt in ("json", "yaml"):
        output.dump(items[0] if single else output.as_list(items), fmt)
        return
    if fmt == "name":
        for line in _names(kind, items):
            print(line)
        return
    if not items:
        where = "" if kind in ("clustertrainingruntimes",) else f" in {cluster.namespace} namespace"
        output.info(f"No resources found{where}.")
        return
    wide = fmt == "wide"
    if kind == "trainjobs":
        pods = cluster.list_pods(label_selector=JOB_LABEL, all_namespaces=all_namespaces) if not single else cluster.job_pods(
            items[0]["metadata"]["name"], items[0]["metadata"].get("namespace"))
        by_job: dict[tuple[str, str], list[Obj]] = {}
        for p in pods:
            key = (p["metadata"].get("namespace", ""), (p["metadata"].get("labels") or {}).get(JOB_LABEL, ""))
            by_job.setdefault(key, []).append(p)
        runtimes: dict[str, Obj | None] = {}
        waiting = cluster.waiting_messages(all_namespaces=all_namespaces) if wide else {}
        rows = []
        for job in items:
            runtime = None
            if ((job.get("spec") or {}).get("trainer") or {}).get("numNodes") is None:
                ref = views.runtime_ref(job)
                if ref not in runtimes:
                    runtimes[ref] = cluster.runtime_for(job)
                runtime = runtimes[ref]
            key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
            rows.append(views.trainjob_row(job, by_job.get(key, []), runtime, wide,
                                           waiting=waiting.get(job["metadata"].get("uid", ""), "")))
        output.table(views.TRAINJOB_COLUMNS + (views.TRAINJOB_WIDE if wide else []), rows)
    elif kind == "pods":
        output.table(views.POD_COLUMNS + (views.POD_WIDE if wide else []), [views.pod_row(p, wide) for p in items])
    else:
        output.table(views.RUNTIME_COLUMNS + (views.RUNTIME_WIDE if wide else []),
                     [views.runtime_row(r, wide) for r in items])


@handles_errors
def get(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjobs | pods | runtimes (clustertrainingruntimes, "
                                            "trainingruntimes)")],
    name: Annotated[Optional[str], typer.Argument(help="Show only this object.", show_default=False)] = None,
    output_format: OutputOpt = None,
    selector: Annotated[Optional[str], typer.Option("--selector", "-l", help="Label selector.",
                                                    show_default=False)] = None,
    job: Annotated[Optional[str], typer.Option("--job", help="Pods: only this TrainJob's.",
                                               show_default=False)] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="List across namespaces.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """List or show TrainJobs, their pods, or the training runtimes."""
    check_format(output_format)
    kind = kind_of(resource)
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        items = fetch(cluster, kind, name, selector, all_namespaces, job)
        render(cluster, kind, items, output_format, single=name is not None, all_namespaces=all_namespaces)
