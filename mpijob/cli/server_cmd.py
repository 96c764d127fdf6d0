"""`mpijob server start|run|stop|status` and `mpijob kubeconfig`: the local cluster's lifecycle."""

import json
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.cli import output
from mpijob.cli.exitcodes import Exit
from mpijob.cli.session import handles_errors
from mpijob.store.home import Home

if TYPE_CHECKING:
    from mpijob.store import supervisor

server_app = typer.Typer(help="Run the local cluster (state in $MPIJOB_HOME).", no_args_is_help=True, rich_markup_mode=None)


LABELS = {"auditLog": "audit log"}  # a JSON key of `status -o json` that is not snake_case → its words


def _print_info(info: "supervisor.ServerInfo") -> None:
    for key, value in info.to_dict().items():
        print(f"{LABELS.get(key, key.replace('_', ' ')) + ':':<14}{value}")


@server_app.command("start")
@handles_errors
def start(
    timeout: Annotated[float, typer.Option(help="Seconds to wait until it is ready.")] = 30,
    capacity: Annotated[str, typer.Option(
        help="Override detected capacity, e.g. nvidia.com/gpu=8,cpu=16,memory=64Gi (any subset).")] = "",
) -> None:
    """Start the local cluster in the background; return once it serves requests."""
    from mpijob.store import supervisor  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    if capacity:
        from mpijob.api.kueue.capacity import parse_capacity

        parse_capacity(capacity)  # refuse a bad value here, before a server is started
    if supervisor.status(home) is None:
        output.info(f"starting local cluster in {home.root}…")
    elif capacity:
        output.info("the local cluster is already running: stop it first to change its capacity")
    try:
        info = supervisor.start(home.ensure(), timeout=timeout, env={"MPIJOB_CAPACITY": capacity} if capacity else None)
    except TimeoutError as exc:
        output.error(exc)
        raise typer.Exit(int(Exit.TIMEOUT)) from None
    except RuntimeError as exc:
        output.error(exc)
        raise typer.Exit(int(Exit.UNAVAILABLE)) from None
    _print_info(info)


@server_app.command("run")
def run(
    capacity: Annotated[str, typer.Option(
        help="Override detected capacity, e.g. nvidia.com/gpu=8,cpu=16,memory=64Gi (any subset).")] = "",
) -> None:
    """Run the local cluster in the foreground until interrupted (Ctrl-C / SIGTERM)."""
    if capacity:
        import os

        from mpijob.api.kueue.capacity import parse_capacity

        parse_capacity(capacity)
        os.environ["MPIJOB_CAPACITY"] = capacity
    from mpijob.cli.main import app
    from mpijob.server import daemon  # the server's own code, loaded only to become the server

    app.teardown = True  # a server ends the ordinary way: its own atexit work included
    daemon.run(Home.default().ensure())


@server_app.command("stop")
def stop(timeout: Annotated[float, typer.Option(help="Seconds before SIGKILL.")] = 30) -> None:
    """Stop the local cluster (jobs keep their records and logs; running ones are ended)."""
    from mpijob.store import supervisor  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    if supervisor.stop(home, timeout=timeout):
        output.info(f"local cluster in {home.root} stopped")
    else:
        output.info(f"local cluster in {home.root} is not running")


@server_app.command("status")
def status(
    output_format: Annotated[str, typer.Option("--output", "-o", help="`json` for machines.")] = "",
) -> None:
    """Print url, pid, kubeconfig, home, sandbox mode, version and audit log; exit 8 when not running.

    The audit log (`auditLog` in JSON) is the file `mpijob audit` reads."""
    from mpijob.store import supervisor  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    info = supervisor.status(home)
    if info is None:
        output.info(f"local cluster in {home.root} is not running (start it: mpijob server start)")
        raise typer.Exit(int(Exit.UNAVAILABLE))
    if output_format == "json":
        print(json.dumps(info.to_dict(), indent=2))
    else:
        _print_info(info)


@handles_errors
def kubeconfig() -> None:
    """Print the local cluster's kubeconfig path (starting the cluster if needed).

    Use it with kubectl: kubectl --kubeconfig "$(mpijob kubeconfig)" get trainjobs
    """
    from mpijob.client.config import local_kubeconfig

    print(local_kubeconfig(start=True))
