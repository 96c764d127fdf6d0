"""`mpijob create -f FILE` and `mpijob delete trainjob NAME`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mpijob.api import errors
from mpijob.api.resources import TRAINJOBS
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    globals_of,
    handles_errors,
)
from mpijob.client import manifests
from mpijob.client.api import Cluster, display_name, resource_for
from mpijob.client.wait import wait_until_gone

Obj = dict[str, Any]

FileOpt = Annotated[list[str], typer.Option("--filename", "-f", help="YAML/JSON manifest (`-` for stdin); repeatable.")]


def load_all(files: list[str]) -> list[Obj]:
    objects: list[Obj] = []
    for f in files:
        objects += manifests.load(f)
    return objects


def _defined_earlier(obj: Obj, earlier: list[Obj]) -> bool:
    """Whether a TrainJob's runtime is created by an earlier document (a dry run could not see it)."""
    if obj.get("kind") != "TrainJob":
        return False
    ref = (obj.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    return any(o.get("kind") == kind and (o.get("metadata") or {}).get("name") == ref.get("name") for o in earlier)


def create_all(cluster: Cluster, objects: list[Obj], explicit_namespace: str | None) -> list[Obj]:
    """Create every object, or none: all are first checked by the server with `dryRun=All`."""
    for obj in objects:
        res = resource_for(obj)
        meta = obj.setdefault("metadata", {})
        ns = meta.get("namespace")
        if res.namespaced and explicit_namespace and ns and ns != explicit_namespace:
            raise errors.ApiError(
                400, "BadRequest", f"the namespace from the provided object {ns!r} does not match the namespace "
                f"{explicit_namespace!r}; pass --namespace={ns} or remove metadata.namespace"
            )
        if res.namespaced and not ns:
            meta["namespace"] = cluster.namespace
        if not res.namespaced:
            meta.pop("namespace", None)
    for i, obj in enumerate(objects):
        if not _defined_earlier(obj, objects[:i]):
            cluster.create(obj, dry_run=True)
    return [cluster.create(obj) for obj in objects]


@handles_errors
def create(
    ctx: typer.Context,
    filename: FileOpt,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Create the objects in FILE (TrainJobs, runtimes, ConfigMaps, …); nothing is created if any is invalid."""
    objects = load_all(filename)
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        created = create_all(cluster, objects, namespace or globals_of(ctx).namespace)
    for obj in created:
        print(f"{display_name(resource_for(obj), obj['metadata']['name'])} created")


@handles_errors
def delete(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjob")],
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    wait: Annotated[bool, typer.Option("--wait", help="Return only once it is gone.")] = False,
    ignore_not_found: Annotated[bool, typer.Option("--ignore-not-found", help="Exit 0 when it does not exist.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Delete a TrainJob; its pods, Secret, ConfigMap and keys go with it."""
    if resource.lower() not in ("trainjob", "trainjobs", "tj"):
        raise errors.ApiError(400, "BadRequest", f"cannot delete {resource!r}; use: mpijob delete trainjob NAME")
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        try:
            cluster.delete_trainjob(name)
        except errors.ApiError as exc:
            if exc.code == 404 and ignore_not_found:
                return
            raise
        if wait:
            wait_until_gone(cluster, name)
    print(f'{TRAINJOBS.singular}.{TRAINJOBS.group} "{name}" deleted')
