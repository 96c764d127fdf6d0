"""`mpijob create -f FILE`, `mpijob create trainjob NAME … -- COMMAND`, `mpijob delete trainjob NAME`."""

# No `from __future__ import annotations` in the command modules: typer would evaluate every string
# annotation again on each run. What only a command's body needs is imported there (docs/architecture.md:
# a CLI call loads what it uses).

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mpijob.api import Obj, names
from mpijob.cli import output
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import (
    TRAINJOB_NAMES,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    globals_of,
    handles_errors,
)
from mpijob.client.builder import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from mpijob.client.connection import Connection

CREATE_FORMATS = ("json", "yaml", "name")
FLAGS = {"num_nodes": "--nodes", "num_proc_per_node": "--procs-per-node"}  # builder keyword → CLI flag

OptFileOpt = Annotated[list[str] | None, typer.Option(
    "--filename", "-f", help="YAML/JSON manifest (`-` for stdin); repeatable.", show_default=False)]
CreateOutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o", help="json | yaml: {name, namespace, status} (with --dry-run: the whole object) | name",
    show_default=False)]


WordsArg = Annotated[list[str] | None, typer.Argument(
    help="`trainjob NAME -- COMMAND ARGS…` to build the TrainJob from the flags below instead of -f.",
    metavar="trainjob NAME -- COMMAND ARGS…", show_default=False)]
NodesOpt = Annotated[int | None, typer.Option(
    "--nodes", help="trainer.numNodes (default: the runtime's).", show_default=False)]
ProcsOpt = Annotated[int | None, typer.Option(
    "--procs-per-node", help="trainer.numProcPerNode: MPI slots per node (default: the runtime's).",
    show_default=False)]
GpusOpt = Annotated[int | None, typer.Option(
    "--gpus", help="nvidia.com/gpu per node (resourcesPerNode.limits).", show_default=False)]
CpuOpt = Annotated[str | None, typer.Option(
    "--cpu", help="CPU per node, a quantity: 4, 500m (resourcesPerNode.limits.cpu).", show_default=False)]
MemoryOpt = Annotated[str | None, typer.Option(
    "--memory", help="Memory per node, a quantity: 8Gi (resourcesPerNode.limits.memory).", show_default=False)]
EnvOpt = Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V into trainer.env; repeatable.",
                                                     show_default=False)]
QueueOpt = Annotated[str | None, typer.Option(
    "--queue", help=f"LocalQueue (label {names.LABEL_QUEUE_NAME}).", show_default=False)]
PriorityOpt = Annotated[str | None, typer.Option(
    "--priority", help=f"WorkloadPriorityClass (label {names.LABEL_PRIORITY_CLASS}).", show_default=False)]
RuntimeOpt = Annotated[str, typer.Option("--runtime", help="ClusterTrainingRuntime to run on.")]
ImageOpt = Annotated[str | None, typer.Option(
    "--image", help="trainer.image (recorded on the local cluster, pulled on Kubernetes).", show_default=False)]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Have the server validate and default the objects "
                                         "(dryRun=All) without creating them.")]


def load_all(files: list[str]) -> list[Obj]:
    from mpijob.client import manifests

    objects: list[Obj] = []
    for f in files:
        objects += manifests.load(f)
    return objects


def imperative_trainjob(words: list[str], verb: str = "create", **fields: Any) -> Obj:
    """`trainjob NAME COMMAND ARGS…` plus the flags' values as the TrainJob `builder` makes."""
    usage = f"mpijob {verb} trainjob NAME [flags] -- COMMAND ARGS…"
    if words[0].lower() not in TRAINJOB_NAMES:
        raise UsageError(f"cannot {verb} {words[0]!r} from flags; use: {usage} (or -f FILE)")
    if len(words) < 2:
        raise UsageError(f"missing the TrainJob's name; use: {usage}")
    from mpijob.client import builder

    return builder.build_trainjob(words[1], command=words[2:] or None, **fields)


def objects_to_create(filename: list[str] | None, words: list[str] | None, verb: str = "create",
                      **fields: Any) -> list[Obj]:
    """The objects of `-f FILE…`, or the one TrainJob of the imperative form; never both."""
    flags = [FLAGS.get(k, f"--{k.replace('_', '-')}") for k, v in fields.items()
             if v not in (None, [], DEFAULT_RUNTIME)]
    if filename and words:
        raise UsageError("give either -f FILE or `trainjob NAME … -- COMMAND`, not both")
    if filename:
        if flags:
            raise UsageError(f"{', '.join(flags)} cannot be combined with -f (they build a TrainJob from flags); "
                             "edit the file instead")
        return load_all(filename)
    if not words:
        raise UsageError(f"nothing to {verb}; use -f FILE, or: mpijob {verb} trainjob NAME [flags] -- COMMAND ARGS…")
    return [imperative_trainjob(words, verb, **fields)]


def _defined_earlier(obj: Obj, earlier: list[Obj]) -> bool:
    """Whether a TrainJob's runtime is created by an earlier document (a dry run could not see it)."""
    if obj.get("kind") != "TrainJob":
        return False
    ref = (obj.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    return any(o.get("kind") == kind and (o.get("metadata") or {}).get("name") == ref.get("name") for o in earlier)


def create_all(conn: "Connection", objects: list[Obj], explicit_namespace: str | None,
               dry_run: bool = False) -> list[Obj]:
    """Create every object, or none: all are first checked by the server with `dryRun=All`; with
    `dry_run` that check is all that happens, and its answers (defaulted objects) are returned."""
    from mpijob.client.core import resource_for
    from mpijob.client.errors import InvalidArgument

    for obj in objects:
        res = resource_for(obj)
        meta = obj.setdefault("metadata", {})
        ns = meta.get("namespace")
        if res.namespaced and explicit_namespace and ns and ns != explicit_namespace:
            raise InvalidArgument("--namespace", explicit_namespace, f"does not match the namespace {ns!r} of the "
                                  "provided object", f"pass --namespace={ns} or remove metadata.namespace")
        if res.namespaced and not ns:
            meta["namespace"] = conn.namespace
        if not res.namespaced:
            meta.pop("namespace", None)
    checked = [obj if _defined_earlier(obj, objects[:i]) else conn.create(obj, dry_run=True)
               for i, obj in enumerate(objects)]
    if dry_run:
        return checked
    return [conn.create(obj) for obj in objects]


def summary(obj: Obj) -> Obj:
    """What `-o json|yaml` prints for a created object: a TrainJob's name, namespace and phase."""
    from mpijob.client.phase import job_phase

    meta = obj.get("metadata") or {}
    if obj.get("kind") == "TrainJob":
        return {"name": meta.get("name"), "namespace": meta.get("namespace", ""), "status": job_phase(obj, [])[0]}
    return {"kind": obj.get("kind"), "name": meta.get("name"), "namespace": meta.get("namespace", ""),
            "status": "Created"}


def print_created(objects: list[Obj], fmt: str | None, dry_run: bool) -> None:
    """One object: a JSON/YAML object; several: a list (a `List` of whole objects for --dry-run)."""
    from mpijob.client.core import display_name, resource_for

    if fmt in ("json", "yaml"):
        if dry_run:
            output.dump(objects[0] if len(objects) == 1 else output.as_list(objects), fmt)
        else:
            docs = [summary(o) for o in objects]
            output.dump(docs[0] if len(docs) == 1 else docs, fmt)
        return
    for obj in objects:
        name = display_name(resource_for(obj), obj["metadata"]["name"])
        print(name if fmt == "name" else f"{name} created" + (" (server dry run)" if dry_run else ""))


def check_create_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in CREATE_FORMATS:
        raise UsageError(f"--output {fmt!r} is not supported here; use one of: {', '.join(CREATE_FORMATS)}")


@handles_errors
def create(
    ctx: typer.Context,
    words: WordsArg = None,
    filename: OptFileOpt = None,
    nodes: NodesOpt = None,
    procs_per_node: ProcsOpt = None,
    gpus: GpusOpt = None,
    cpu: CpuOpt = None,
    memory: MemoryOpt = None,
    env: EnvOpt = None,
    queue: QueueOpt = None,
    priority: PriorityOpt = None,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    image: ImageOpt = None,
    dry_run: DryRunOpt = False,
    output_format: CreateOutputOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Create the objects in FILE (nothing is created if any is invalid), or one TrainJob from flags:
    `mpijob create trainjob NAME --nodes 4 --gpus 1 -- mpirun python train.py`."""
    check_create_format(output_format)
    objects = objects_to_create(filename, words, num_nodes=nodes, num_proc_per_node=procs_per_node, gpus=gpus,
                                cpu=cpu, memory=memory, env=env, queue=queue, priority=priority,
                                runtime=runtime, image=image)
    with connect(ctx, kubeconfig, context, namespace) as conn:
        created = create_all(conn, objects, namespace or globals_of(ctx).namespace, dry_run=dry_run)
    print_created(created, output_format, dry_run)


@handles_errors
def delete(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjob")],
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    wait: Annotated[bool, typer.Option("--wait", help="Return only once it is gone.")] = False,
    ignore_not_found: Annotated[bool, typer.Option("--ignore-not-found",
                                                   help="Exit 0 when it does not exist.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Delete a TrainJob; its pods, Secret, ConfigMap and keys go with it."""
    if resource.lower() not in TRAINJOB_NAMES:
        raise UsageError(f"cannot delete {resource!r}; use: mpijob delete trainjob NAME")
    from mpijob.api.core.errors import ApiError
    from mpijob.api.core.resources import TRAINJOBS
    from mpijob.client.wait import wait_until_gone

    with connect(ctx, kubeconfig, context, namespace) as conn:
        try:
            conn.delete_trainjob(name)
        except ApiError as exc:
            if exc.code == 404 and ignore_not_found:
                return
            raise
        if wait:
            conn.run(wait_until_gone(conn.namespace, name))
    print(f'{TRAINJOBS.singular}.{TRAINJOBS.group} "{name}" deleted')
