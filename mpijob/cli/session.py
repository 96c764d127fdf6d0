"""Global options (`--kubeconfig`, `--context`, `-n`), turning them into a `Connection`, and turning
failures into the exit-code contract.

The options are accepted both before the command (`mpijob -n x get pods`) and after it
(`mpijob get pods -n x`), like kubectl; the command's own value wins. The connection (and httpx with
it) is imported only when a command connects, so `--help` and usage errors stay quick.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer

from mpijob.cli import output
from mpijob.cli.exitcodes import exit_code

if TYPE_CHECKING:
    from mpijob.client.connection import Connection

KubeconfigOpt = Annotated[
    str | None,
    typer.Option("--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, else the local cluster).",
                 show_default=False),
]
ContextOpt = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.", show_default=False)]
NamespaceOpt = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Namespace (default: the context's, else `default`).", show_default=False),
]


@dataclass
class Globals:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None


def globals_of(ctx: typer.Context) -> Globals:
    root = ctx.find_root()
    if not isinstance(root.obj, Globals):
        root.obj = Globals()
    return root.obj


def namespace_given(ctx: typer.Context, namespace: str | None) -> bool:
    """Whether `-n` was given, before or after the command."""
    return bool(namespace or globals_of(ctx).namespace)


def connect(ctx: typer.Context, kubeconfig: str | None, context: str | None, namespace: str | None) -> Connection:
    """Choose the cluster (starting the local one if needed) and connect to it."""
    from mpijob.client.config import choose_cluster
    from mpijob.client.connection import Connection

    g = globals_of(ctx)
    return Connection(choose_cluster(kubeconfig or g.kubeconfig, context or g.context, namespace or g.namespace))


TRAINJOB_NAMES = ("trainjob", "trainjobs", "tj")  # what the commands accept for the resource word
P = ParamSpec("P")
R = TypeVar("R")


def handles_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Print failures the documented way and exit with the contract's code."""

    @functools.wraps(fn)
    def inner(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            output.info("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:  # `mpijob logs x | head`: the reader has all it wanted
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush does not complain
            raise typer.Exit(0) from None
        except Exception as exc:
            code = exit_code(exc)
            if code is None:
                raise
            output.error(exc)
            raise typer.Exit(int(code)) from None

    return inner
