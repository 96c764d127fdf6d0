"""`mpijob suspend|resume trainjob NAME`: flip `spec.suspend`, the one switch users have over a job.

A merge patch of `spec.suspend` is exactly what `kubectl patch --type=merge` sends, so it behaves the
same on a real cluster: suspending stops the job and frees its quota, resuming puts it back in its
queue (Kueue admits it again before it runs).
"""

from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.cli.exitcodes import UsageError
from mpijob.cli.session import (
    TRAINJOB_NAMES,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)

if TYPE_CHECKING:
    from mpijob.client.connection import Connection

PAST = {"suspend": "suspended", "resume": "resumed"}


def set_suspend(conn: "Connection", name: str, suspend: bool) -> None:
    """Merge-patch `spec.suspend` of a TrainJob in the connection's namespace (404 when it is missing)."""
    from mpijob.client import core

    conn.run(core.set_suspend(conn.namespace, name, suspend))


def _run(ctx: typer.Context, verb: str, resource: str, name: str, suspend: bool,
         kubeconfig: str | None, context: str | None, namespace: str | None) -> None:
    if resource.lower() not in TRAINJOB_NAMES:
        raise UsageError(f"cannot {verb} {resource!r}: only TrainJobs can be "
                         f"{PAST[verb]}; use: mpijob {verb} trainjob NAME")
    from mpijob.api.core.resources import TRAINJOBS
    from mpijob.client.core import display_name

    with connect(ctx, kubeconfig, context, namespace) as conn:
        set_suspend(conn, name, suspend)
    print(f"{display_name(TRAINJOBS, name)} {PAST[verb]}")


ResourceArg = Annotated[str, typer.Argument(help="trainjob")]
NameArg = Annotated[str, typer.Argument(help="The TrainJob's name.")]


@handles_errors
def suspend(
    ctx: typer.Context,
    resource: ResourceArg,
    name: NameArg,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Stop a TrainJob and free its resources (spec.suspend=true); `resume` puts it back in its queue."""
    _run(ctx, "suspend", resource, name, True, kubeconfig, context, namespace)


@handles_errors
def resume(
    ctx: typer.Context,
    resource: ResourceArg,
    name: NameArg,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Requeue a suspended TrainJob (spec.suspend=false); it runs again once admitted."""
    _run(ctx, "resume", resource, name, False, kubeconfig, context, namespace)
