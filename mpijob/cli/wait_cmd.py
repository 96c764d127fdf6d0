"""`mpijob wait NAME [--for Complete|Failed|Running|Finished] [--timeout 10m]`: block on a TrainJob.

For CI pipelines the exit code is the answer (0 reached · 1 the job failed · timed out → the timeout
code); people on a terminal also get a live line with the phase, queue position and pods ready.
"""

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mpijob.cli import output
from mpijob.cli.exitcodes import Exit
from mpijob.cli.flags import parse_duration
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, handles_errors

if TYPE_CHECKING:
    from mpijob.client.wait import JobState


class LiveLine:
    """A rich status line on stderr when stdout and stderr are a terminal; nothing when piped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._status: Any = None

    def context(self) -> AbstractContextManager[Any]:
        if not (sys.stdout.isatty() and sys.stderr.isatty()):
            return nullcontext()
        self._status = output.stderr().status(f"trainjob {self.name}: waiting")
        return self._status

    @property
    def active(self) -> bool:
        return self._status is not None

    def __call__(self, state: "JobState") -> None:
        from mpijob.cli.views import state_line

        if self._status is not None:
            self._status.update(f"trainjob {self.name}: {state_line(state)}")


@handles_errors
def wait(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    for_: Annotated[str, typer.Option(
        "--for", help="Complete | Failed | Running (the launcher runs) | Finished (Complete or Failed).",
    )] = "Complete",
    timeout: Annotated[str | None, typer.Option(
        "--timeout", help="Give up after this long (30s, 10m, 1h); default: wait forever.", show_default=False,
    )] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Wait until a TrainJob reaches a condition. Exit 0 when it does, the job-failed code when it
    failed (or, with --for Failed, completed), the timeout code when --timeout passes first."""
    from mpijob.api.core.resources import TRAINJOBS
    from mpijob.client.core import display_name
    from mpijob.client.wait import CONDITIONS, wait_for_condition

    want = next((c for c in CONDITIONS if c.lower() == for_.strip().lower()), None)
    if want is None:  # a flag value outside its choices is a usage error, as click reports it
        raise typer.BadParameter(f"{for_!r} is not one of {', '.join(CONDITIONS)}", param_hint="'--for'")
    seconds = parse_duration(timeout) if timeout is not None else None
    with connect(ctx, kubeconfig, context, namespace) as conn:
        conn.get_trainjob(name)  # a missing job is "not found" now, not after the first poll
        live = LiveLine(name)
        with live.context():
            result = conn.run(wait_for_condition(conn.namespace, name, want, timeout=seconds,
                                                 progress=live if live.active else None))
    if result.met:
        print(f"{display_name(TRAINJOBS, name)} condition met", flush=True)  # kubectl wait's line
        return
    detail = f": {result.message}" if result.message else ""
    output.info(f"error: trainjob {name} can no longer reach {want}: it ended {result.phase}{detail}")
    raise typer.Exit(int(Exit.JOB_FAILED))
