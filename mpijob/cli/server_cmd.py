"""`mpijob server start|run|stop|status` and `mpijob kubeconfig`: the local cluster's lifecycle."""

import json
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.cli import output
from mpijob.cli.exitcodes import Exit
from mpijob.cli.session import handles_errors
from mpijob.store.home import Home

if TYPE_CHECKING:
    from mpijob.store import server_process

server_app = typer.Typer(help="Run the local cluster (state in $MPIJOB_HOME).", no_args_is_help=True,
                         rich_markup_mode=None)


# a JSON key of `status -o json` that is not snake_case, or reads better in other words → its words
LABELS = {"auditLog": "audit log", "why": "  because"}


def _print_info(info: "server_process.ServerInfo") -> None:
    from mpijob.api.sandbox_mode import GUARANTEES

    for key, value in info.to_dict().items():
        if key == "guarantees":  # what a pod may rely on in this sandbox (docs/sandbox.md), one per line
            for name, holds in value.items():
                print(f"{'':<14}{'yes' if holds else 'no ':<4}{GUARANTEES[name][0] if name in GUARANTEES else name}")
        elif key != "why" or value:
            print(f"{LABELS.get(key, key.replace('_', ' ')) + ':':<14}{value}")


@server_app.command("start")
@handles_errors
def start(
    timeout: Annotated[float, typer.Option(help="Seconds to wait until it is ready.")] = 30,
    capacity: Annotated[str, typer.Option(
        help="Override detected capacity, e.g. nvidia.com/gpu=8,cpu=16,memory=64Gi (any subset).")] = "",
) -> None:
    """Start the local cluster in the background; return once it serves requests."""
    from mpijob.store import server_process  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    if capacity:
        from mpijob.api.kueue.capacity import parse_capacity

        parse_capacity(capacity)  # refuse a bad value here, before a server is started
    if server_process.status(home) is None:
        output.info(f"starting local cluster in {home.root}…")
    elif capacity:
        output.info("the local cluster is already running: stop it first to change its capacity")
    try:
        info = server_process.start(home.ensure(), timeout=timeout,
                                    env={"MPIJOB_CAPACITY": capacity} if capacity else None)
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
def stop(
    timeout: Annotated[float | None, typer.Option(
        help="Seconds before SIGKILL (30; 120 with --drain, which leaves jobs their grace periods).")] = None,
    drain: Annotated[bool, typer.Option(
        "--drain", help="First wait for running jobs to end; stop those still running after --drain-timeout "
                        "(SIGTERM to every rank, then their grace period): they run again at the next start.")] = False,
    drain_timeout: Annotated[float, typer.Option(help="Seconds --drain waits for running jobs.")] = 600,
) -> None:
    """Stop the local cluster. Running jobs run on under their pods' supervisors and are re-adopted at the
    next start (docs/restarts.md), unless --drain."""
    from mpijob.store import server_process  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    running = _running_jobs(home) if server_process.status(home) else []
    if drain and running:
        running = _drain(home, running, drain_timeout)
    if not server_process.stop(home, timeout=timeout or (120 if drain else 30), drain=drain):
        output.info(f"local cluster in {home.root} is not running")
    elif drain and running:
        output.info(f"local cluster in {home.root} stopped; {len(running)} job(s) still running were stopped and "
                    "run again at the next start: " + ", ".join(running))
    elif running and not drain:
        output.info(f"local cluster in {home.root} stopped; {len(running)} running job(s) run on and are "
                    "re-adopted at the next start (mpijob server stop --drain stops them): " + ", ".join(running))
    else:
        output.info(f"local cluster in {home.root} stopped")


def _running_jobs(home: Home) -> list[str]:
    """`<namespace>/<name>` of each job with a running pod, read from the local cluster's API."""
    from mpijob.client.config import choose_cluster
    from mpijob.client.connection import Connection

    conn = Connection(choose_cluster(home.kubeconfig, start=False))
    jobs = set()
    for pod in conn.list_pods(field_selector="status.phase=Running", all_namespaces=True):
        for ref in pod["metadata"].get("ownerReferences") or []:
            jobs.add(f"{pod['metadata']['namespace']}/{ref['name']}")
    return sorted(jobs)


def _drain(home: Home, running: list[str], timeout: float) -> list[str]:
    """Wait until no job runs, saying which still do; those left when `timeout` has passed."""
    import time

    deadline, shown = time.monotonic() + timeout, None
    while running and time.monotonic() < deadline:
        if running != shown:
            output.info(f"waiting for {len(running)} running job(s) to end "
                        f"(up to {deadline - time.monotonic():.0f} s): " + ", ".join(running))
            shown = running
        time.sleep(1)
        running = _running_jobs(home)
    return running


@server_app.command("status")
def status(
    output_format: Annotated[str, typer.Option("--output", "-o", help="`json` for machines.")] = "",
) -> None:
    """Print url, pid, kubeconfig, home, sandbox mode, version and audit log; exit 8 when not running.

    The audit log (`auditLog` in JSON) is the file `mpijob audit` reads."""
    from mpijob.store import server_process  # its imports (ssl, urllib, subprocess) only when used

    home = Home.default()
    info = server_process.status(home)
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
