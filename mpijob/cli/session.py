"""Global options (`--kubeconfig`, `--context`, `-n`) and turning them into a connected `Cluster`.

The options are accepted both before the command (`mpijob -n x get pods`) and after it
(`mpijob get pods -n x`), like kubectl; the command's own value wins.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Optional, ParamSpec, TypeVar

import typer

from mpijob.api.errors import ApiError
from mpijob.cli import output
from mpijob.cli.exitcodes import UsageError, for_exception
from mpijob.client.api import Cluster
from mpijob.client.config import resolve
from mpijob.client.errors import ServerUnavailable, WaitTimeout

KubeconfigOpt = Annotated[
    Optional[str],
    typer.Option("--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, else the local cluster).",
                 show_default=False),
]
ContextOpt = Annotated[Optional[str], typer.Option("--context", help="Kubeconfig context to use.", show_default=False)]
NamespaceOpt = Annotated[
    Optional[str],
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


def connect(ctx: typer.Context, kubeconfig: str | None, context: str | None, namespace: str | None) -> Cluster:
    """Resolve the target cluster (starting the local one if needed) and connect to it."""
    g = globals_of(ctx)
    target = resolve(kubeconfig or g.kubeconfig, context or g.context, namespace or g.namespace)
    return Cluster(target)


TRAINJOB_NAMES = ("trainjob", "trainjobs", "tj")  # what the commands accept for the resource word
P = ParamSpec("P")
R = TypeVar("R")


def handles_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Print API/transport errors the documented way and exit with the contract's code."""

    @functools.wraps(fn)
    def inner(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (ApiError, ServerUnavailable, WaitTimeout, UsageError) as exc:
            output.error(exc)
            raise typer.Exit(int(for_exception(exc))) from None
        except KeyboardInterrupt:
            output.info("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:  # `mpijob logs x | head`: the reader has all it wanted
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush does not complain
            raise typer.Exit(0) from None

    return inner
