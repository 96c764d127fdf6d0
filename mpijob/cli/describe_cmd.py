"""`mpijob describe trainjob NAME`: everything about one job in one screen."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mpijob.api import errors
from mpijob.cli import views
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)


@handles_errors
def describe(
    ctx: typer.Context,
    resource: Annotated[str, typer.Argument(help="trainjob")],
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Spec summary, conditions, jobsStatus, pods and events of a TrainJob."""
    if resource.lower() not in ("trainjob", "trainjobs", "tj"):
        raise errors.ApiError(400, "BadRequest", f"cannot describe {resource!r}; use: mpijob describe trainjob NAME")
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        job = cluster.get_trainjob(name)
        pods = cluster.job_pods(name)
        events = cluster.events_for("TrainJob", name)
        runtime = cluster.runtime_for(job)
        waiting = cluster.waiting_messages().get(job["metadata"]["uid"], "")
    sys.stdout.write(views.describe_trainjob(job, pods, events, runtime, waiting=waiting))
