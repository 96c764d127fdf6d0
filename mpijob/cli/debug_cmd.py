"""`mpijob debug stacks JOB [-n NS] [-o json]`: every rank's current stack, merged as LLNL's STAT merges them
(docs/debugging.md): identical stacks once, with the ranks that share them as ranges, the odd ones out first.

Read by the local cluster's server, which may trace the ranks, and only for a user who may `kubectl exec` in
the job's namespace (`create` on `pods/exec`); a cluster without that API says so.
"""

from __future__ import annotations

from typing import Annotated

import typer

from mpijob.api import Obj, names
from mpijob.cli import output
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, handles_errors

debug_app = typer.Typer(help="Look inside a running job.", no_args_is_help=True, rich_markup_mode=None)
INDENT = "    "


def render(dump: Obj) -> list[str]:
    """The lines people read: a heading, then each group (its ranks, then its frames, outermost call first,
    where it is now last), then the ranks that could not be read."""
    from mpijob.api.trainer.stacks import frames_of

    meta = dump.get("metadata") or {}
    groups, errors = dump.get("groups") or [], dump.get("errors") or []
    distinct = f"{len(groups)} distinct stack{'s' if len(groups) != 1 else ''}"
    heading = (f"trainjob {meta.get('namespace')}/{meta.get('name')}: {dump.get('ranks')} ranks read in "
               f"{dump.get('seconds')}s, {distinct} (odd ones out first; each from the outermost call down to "
               "where the rank is now)")
    lines = [heading]
    for g in groups:
        pods = ", ".join(g.get("pods") or [])
        lines += ["", f"{g.get('title')} in {pods}"]
        lines += [f"{INDENT}{f.text()}" for f in frames_of(g)]
    if errors:
        lines += ["", f"not read ({len(errors)}):"]
        lines += [f"{INDENT}rank {e.get('rank')} (pod {e.get('pod')}, pid {e.get('pid')}): {e.get('message')}"
                  for e in errors]
    return lines


@debug_app.command("stacks")
@handles_errors
def stacks(
    ctx: typer.Context,
    job: Annotated[str, typer.Argument(help="The running TrainJob.")],
    output_format: Annotated[str | None, typer.Option("--output", "-o", help="json | yaml", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show every rank's current stack, merged: identical stacks once with the ranks that share them (0-6,9),
    the odd ones out first.

    A Python rank is read with py-spy (its Python frames) and eu-stack (the native calls below them), any other
    with eu-stack (or gdb); each rank is paused for a moment only. A stack ends at the MPI call a rank waits in.
    Needs the right to exec into the job's pods (`create` on `pods/exec`); see docs/debugging.md."""
    from mpijob.api.core.errors import ApiError
    from mpijob.client.debug import job_stacks

    output.check_format(output_format, ("json", "yaml"), "debug stacks")
    with connect(ctx, kubeconfig, context, namespace) as conn:
        try:
            found = conn.run(job_stacks(conn.namespace, job))
        except ApiError as e:
            if e.code != 404 or "trainjobs" in e.message:  # the job itself not found: as said
                raise
            raise ApiError(404, "NotFound", "this cluster cannot read its ranks' stacks: the local cluster's server "
                           f"does (`mpijob server start`), {names.DASHBOARD_API}/…/stacks") from None
    if output_format:
        output.dump(found, output_format)
        return
    print("\n".join(render(found)))
