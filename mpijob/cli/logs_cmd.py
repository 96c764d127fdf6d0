"""`mpijob logs NAME [--follow] [--pod POD]`: a TrainJob's logs, the launcher's by default."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from mpijob.api import errors
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)
from mpijob.client.api import JOB_LABEL, Cluster
from mpijob.client.phase import job_phase
from mpijob.client.wait import wait_for_launcher


def copy_stream(cluster: Cluster, pod: str, tail: int | None = None, timestamps: bool = False) -> None:
    """Follow one pod's `node` container log onto stdout until the container ends."""
    out = sys.stdout.buffer
    for chunk in cluster.stream_log(pod, tail_lines=tail, timestamps=timestamps):
        out.write(chunk)
        out.flush()


@handles_errors
def logs(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Stream until the container ends.")] = False,
    pod: Annotated[Optional[str], typer.Option("--pod", help="A pod of the job (default: the launcher).",
                                               show_default=False)] = None,
    tail: Annotated[Optional[int], typer.Option("--tail", help="Only the last N lines.", show_default=False)] = None,
    timestamps: Annotated[bool, typer.Option("--timestamps", help="Prefix each line with its time.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Print (or follow) the launcher's log, or one pod's with --pod."""
    with connect(ctx, kubeconfig, context, namespace) as cluster:
        job = cluster.get_trainjob(name)
        if pod is not None:
            target = cluster.get_pod(pod)
            owner = (target["metadata"].get("labels") or {}).get(JOB_LABEL)
            if owner != name:
                raise errors.ApiError(
                    400, "BadRequest", f"pod {pod!r} does not belong to trainjob {name!r} (it belongs to "
                    f"{owner or 'no TrainJob'}); list the job's pods with `mpijob get pods --job {name}`"
                )
            pod_name = pod
        else:
            launcher = cluster.launcher_pod(name)
            if launcher is None and follow:
                launcher = wait_for_launcher(cluster, name)
            if launcher is None:
                phase, message = job_phase(job, cluster.job_pods(name))
                raise errors.ApiError(
                    404, "NotFound", f"trainjob {name!r} has no launcher pod (state: {phase}"
                    f"{': ' + message if message else ''}); use --follow to wait for it, or --pod for a node's log"
                )
            pod_name = launcher["metadata"]["name"]
        if follow:
            copy_stream(cluster, pod_name, tail, timestamps)
        else:
            sys.stdout.write(cluster.read_log(pod_name, tail_lines=tail, timestamps=timestamps))
            sys.stdout.flush()
