"""`mpijob describe trainjob NAME`: everything about one job in one screen (`-o json|yaml`: the object)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from mpijob.cli import output, views
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import (
    TRAINJOB_NAMES,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)

DescribeOutputOpt = Annotated[
    Optional[str], typer.Option("--output", "-o", help="json | yaml: print the object itself instead of the "
                                "summary.", show_default=False)
]


def check_describe_format(fmt: str | None) -> None:
    """`describe` is for people; a machine asks for the object (json/yaml), never a table."""
    if fmt is not None and fmt not in ("json", "yaml"):
        raise UsageError(f"describe --output {fmt!r} is not supported; use json or yaml (or `mpijob get -o {fmt}`)")


@handles_errors
def describe(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjob")],
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    output_format: DescribeOutputOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Spec summary, conditions, jobsStatus, pods and events of a TrainJob."""
    if resource.lower() not in TRAINJOB_NAMES:
        raise UsageError(f"cannot describe {resource!r}; use: mpijob describe trainjob NAME")
    check_describe_format(output_format)
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        job = cluster.get_trainjob(name)
        if output_format is not None:
            output.dump(job, output_format)
            return
        pods = cluster.job_pods(name)
        events = cluster.events_for("TrainJob", name)
        runtime = cluster.runtime_for(job)
        waiting = cluster.waiting_messages().get(job["metadata"]["uid"], "")
    sys.stdout.write(views.describe_trainjob(job, pods, events, runtime, waiting=waiting))
