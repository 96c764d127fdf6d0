"""The `mpijob` command: kubectl-style access to TrainJobs, plus the local cluster's lifecycle.

Every cluster command speaks only the Kubernetes API through a kubeconfig (see `mpijob.client`), so
it works the same against the local cluster and a real one.
"""

from __future__ import annotations

import typer

from mpijob import __version__
from mpijob.cli import exitcodes
from mpijob.cli.create_cmd import create, delete
from mpijob.cli.describe_cmd import describe
from mpijob.cli.get_cmd import get
from mpijob.cli.logs_cmd import logs
from mpijob.cli.queue_cmd import with_queues_describe, with_queues_get
from mpijob.cli.run_cmd import run
from mpijob.cli.server_cmd import kubeconfig, server_app
from mpijob.cli.session import ContextOpt, Globals, KubeconfigOpt, NamespaceOpt
from mpijob.cli.suspend_cmd import resume, suspend
from mpijob.cli.wait_cmd import wait

EPILOG = exitcodes.summary()

app = typer.Typer(
    name="mpijob",
    help="MPI TrainJobs (Kubeflow Trainer V2) on a local cluster or on Kubernetes.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"mpijob {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    kubeconfig_path: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    ctx.obj = Globals(kubeconfig_path, context, namespace)


app.add_typer(server_app, name="server")
app.command("kubeconfig")(kubeconfig)
app.command("create")(create)
app.command("get")(with_queues_get(get))
app.command("describe")(with_queues_describe(describe))
app.command("logs")(logs)
app.command("delete")(delete)
app.command("run")(run)
app.command("suspend")(suspend)
app.command("resume")(resume)
app.command("wait")(wait)


if __name__ == "__main__":
    app()
