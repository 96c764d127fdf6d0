"""The `mpijob` command: kubectl-style access to TrainJobs, plus the local cluster's lifecycle.

Every cluster command speaks only the Kubernetes API through a kubeconfig (see `mpijob.client`), so
it works the same against the local cluster and a real one.

Quick as kubectl (docs/architecture.md): a command's module is imported only when that command runs
(`Commands`), help is click's plain text as kubectl's is (typer's rich help loads rich's markdown and
traceback modules), typer's option parsing runs without pydantic (`coercion`), and the process ends
without the interpreter's teardown (`Cli`).
"""

import gc
import importlib
import os
import sys
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

from mpijob import __version__
from mpijob.cli import coercion, exitcodes
from mpijob.cli.session import ContextOpt, Globals, KubeconfigOpt, NamespaceOpt

EPILOG = exitcodes.summary()
coercion.install()

# Each command: the module and the attribute that define it (a function, or a Typer app for a group).
COMMANDS = {
    "kubeconfig": ("mpijob.cli.server_cmd", "kubeconfig"),
    "create": ("mpijob.cli.create_cmd", "create"),
    "get": ("mpijob.cli.get_cmd", "get"),
    "describe": ("mpijob.cli.describe_cmd", "describe"),
    "logs": ("mpijob.cli.logs_cmd", "logs"),
    "delete": ("mpijob.cli.create_cmd", "delete"),
    "run": ("mpijob.cli.run_cmd", "run"),
    "suspend": ("mpijob.cli.suspend_cmd", "suspend"),
    "resume": ("mpijob.cli.suspend_cmd", "resume"),
    "wait": ("mpijob.cli.wait_cmd", "wait"),
    "top": ("mpijob.cli.top_cmd", "top"),
    "debug": ("mpijob.cli.debug_cmd", "debug_app"),
    "audit": ("mpijob.cli.audit_cmd", "audit"),
    "history": ("mpijob.cli.history_cmd", "history"),
    "dashboard": ("mpijob.cli.dashboard_cmd", "dashboard"),
    "convert": ("mpijob.cli.convert_cmd", "convert"),
    "server": ("mpijob.cli.server_cmd", "server_app"),
    "user": ("mpijob.cli.user_cmd", "user_app"),
    "platform": ("mpijob.cli.platform_cmd", "platform_app"),
    "doctor": ("mpijob.cli.doctor_cmd", "doctor"),
}


class Commands(TyperGroup):
    """The top-level group: builds a command from its module when it is invoked (or listed)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            obj = getattr(importlib.import_module(module), attr)
            command = typer.main.get_group_from_info(
                TyperInfo(obj, name=cmd_name), pretty_exceptions_short=True, suggest_commands=True,
                rich_markup_mode=None,
            ) if isinstance(obj, typer.Typer) else typer.main.get_command_from_info(
                CommandInfo(name=cmd_name, callback=obj), pretty_exceptions_short=True, rich_markup_mode=None)
            self.commands[cmd_name] = command
        return self.commands.get(cmd_name)


class Cli(typer.Typer):
    """The app; run as the `mpijob` program (called without arguments) it exits with `os._exit` once
    its output is flushed: the interpreter's teardown (freeing the ~400 modules a call loads) would
    cost ~20 ms of every call, and a CLI process has nothing else to clean up. Its few, short-lived
    allocations are not worth a cyclic garbage collection either. Called with arguments (tests,
    programs), it is a plain Typer app. A command that becomes a long-lived process with resources of
    its own (`server run`) sets `teardown` to exit the ordinary way."""

    teardown = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return super().__call__(*args, **kwargs)
        gc.set_threshold(100_000, 50, 50)  # a long `logs -f` or `wait` still collects, rarely
        try:
            super().__call__()
            code: Any = 0
        except SystemExit as exc:
            code = exc.code
        if self.teardown:
            sys.exit(code)
        if isinstance(code, str):
            print(code, file=sys.stderr)
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (BrokenPipeError, ValueError):  # the reader left; nothing more to say
                pass
        os._exit(code or 0)


app = Cli(
    name="mpijob",
    cls=Commands,
    help="MPI TrainJobs (Kubeflow Trainer V2) on a local cluster or on Kubernetes.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
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


if __name__ == "__main__":
    app()
