"""`mpijob describe KIND NAME`: everything about one TrainJob or queue in one screen (`-o json|yaml`:
the object). Which code describes a kind is one registry, `DESCRIBERS`."""

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.cli import output, queue_cmd
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import (
    TRAINJOB_NAMES,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
    namespace_given,
)

if TYPE_CHECKING:
    from mpijob.client.connection import Connection

DescribeOutputOpt = Annotated[
    str | None, typer.Option("--output", "-o", help="json | yaml: print the object itself instead of the "
                                "summary.", show_default=False)
]


def check_describe_format(fmt: str | None) -> None:
    """`describe` is for people; a machine asks for the object (json/yaml), never a table."""
    if fmt is not None and fmt not in ("json", "yaml"):
        raise UsageError(f"describe --output {fmt!r} is not supported; use json or yaml (or `mpijob get -o {fmt}`)")


def describe_trainjob(conn: "Connection", kind: str, name: str, fmt: str | None, namespace_given: bool) -> None:
    """Spec summary, conditions, jobsStatus, pods and events of a TrainJob; on the local cluster, a hint
    when a multi-node job's pods all share the machine (`placement_hint`)."""
    from mpijob.cli import views

    job = conn.get_trainjob(name)
    if fmt is not None:
        output.dump(job, fmt)
        return
    from mpijob.client.kueue import waiting_messages

    pods = conn.job_pods(name)
    events = conn.events_for("TrainJob", name)
    runtime = conn.runtime_for(job)
    waiting = conn.run(waiting_messages(conn.namespace)).get(job["metadata"]["uid"], "")
    sys.stdout.write(views.describe_trainjob(job, pods, events, runtime, waiting=waiting))
    from mpijob.cli.placement_hint import on_local_cluster, one_machine_hint

    if (hint := one_machine_hint(job, pods, runtime)) and conn.run(on_local_cluster()):
        sys.stdout.write(hint + "\n")


Describer = Callable[["Connection", str, str, "str | None", bool], None]

# Every word `describe` takes for a kind → the kind; the kind → the code that describes it.
ALIASES = {**dict.fromkeys(TRAINJOB_NAMES, "trainjobs"), **queue_cmd.ALIASES}
DESCRIBERS: dict[str, Describer] = {
    "trainjobs": describe_trainjob,
    **dict.fromkeys(set(queue_cmd.ALIASES.values()), queue_cmd.describe_queue),
}


@handles_errors
def describe(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjob | queue (clusterqueue, localqueue)")],
    name: Annotated[str, typer.Argument(help="The object's name.")],
    output_format: DescribeOutputOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Describe a TrainJob (spec, conditions, pods, events) or a queue (quota, use, pending workloads in
    order and why they wait)."""
    kind = ALIASES.get(resource.lower())
    if kind is None:
        raise UsageError(f"cannot describe {resource!r}; use: mpijob describe trainjob NAME (or queue NAME)")
    check_describe_format(output_format)
    with connect(ctx, kubeconfig, context, namespace) as conn:
        DESCRIBERS[kind](conn, kind, name, output_format, namespace_given(ctx, namespace))
