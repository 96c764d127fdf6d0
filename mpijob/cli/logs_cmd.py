"""`mpijob logs NAME`: the launcher's and every node's log as one timeline, each line tagged with its pod
(and its MPI rank, for the lines Open MPI tagged).

`--pod` keeps one pod, `--rank` one rank, `--grep` filters, `--since` and `--tail` bound it, `--follow`
merges the live streams and ends when the job ends. The merging itself is `mpijob.client.logs`.
"""

import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.cli import output
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.flags import parse_duration
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    handles_errors,
)

if TYPE_CHECKING:
    from mpijob.client.connection import Connection
    from mpijob.client.logs import Filter, LogLine

COLOURS = (36, 33, 35, 32, 34, 31, 96, 93, 95, 92, 94, 91)  # ANSI foreground colours, one per pod


NO_RANKS = ("no line of this job carries an MPI rank: Open MPI's output tagging was off. The local cluster "
            "turns it on unless trainer.env sets OMPI_MCA_orte_tag_output=0; elsewhere add --tag-output to mpirun "
            "(or OMPI_MCA_orte_tag_output=1 to trainer.env)")


class Printer:
    """`[pod] text` or `[pod rank N] text` lines (optionally with the timestamp); a colour per pod on a
    terminal; with `as_json`, one JSON object per line for scripts. Remembers whether any line it saw
    carried a rank."""

    def __init__(self, prefix: bool, timestamps: bool, colour: bool, as_json: bool = False, live: bool = False) -> None:
        self.prefix, self.timestamps, self.colour, self.as_json = prefix, timestamps, colour, as_json
        self.live = live  # flush each line (a followed log); otherwise write in large blocks
        self._colours: dict[str, int] = {}
        self.saw_rank = False

    def format(self, line: "LogLine") -> str:
        if self.as_json:
            return json.dumps({"time": line.stamp or None, "pod": line.pod, "rank": line.rank, "text": line.text})
        head = ""
        if self.prefix:
            tag = f"[{line.pod}]" if line.rank is None else f"[{line.pod} rank {line.rank}]"
            if self.colour:
                code = self._colours.setdefault(line.pod, COLOURS[len(self._colours) % len(COLOURS)])
                tag = f"\x1b[{code}m{tag}\x1b[0m"
            head = tag + " "
        if self.timestamps and line.stamp:
            head += line.stamp + " "
        return head + line.text

    def write(self, lines: Iterable["LogLine"], keep: "Filter") -> None:
        """Print the lines `keep` keeps: each at once when live, else in large blocks (20,000 lines
        cost one write, not 20,000)."""
        out = sys.stdout
        block: list[str] = []
        for line in lines:
            if line.rank is not None:
                self.saw_rank = True
            if keep(line):
                block.append(self.format(line))
                if self.live or len(block) >= 4096:
                    out.write("\n".join(block) + "\n")
                    block.clear()
                    if self.live:
                        out.flush()
        if block:
            out.write("\n".join(block) + "\n")
        out.flush()


def _pods(conn: "Connection", name: str, pod: str | None) -> list[str]:
    """The job's pods by name, or just `pod` after checking it belongs to the job."""
    from mpijob.api import names
    from mpijob.client.errors import InvalidArgument

    if pod is None:
        return [p["metadata"]["name"] for p in conn.job_pods(name)]
    target = conn.get_pod(pod)
    owner = (target["metadata"].get("labels") or {}).get(names.LABEL_JOBSET_NAME)
    if owner != name:
        raise InvalidArgument("--pod", pod, f"does not belong to trainjob {name!r} (it belongs to "
                              f"{owner or 'no TrainJob'})", f"list the job's pods with `mpijob get pods --job {name}`")
    return [pod]


@handles_errors
def logs(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The TrainJob's name.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Stream until the job ends.")] = False,
    pod: Annotated[str | None, typer.Option("--pod", help="Only this pod of the job (default: every pod).",
                                               show_default=False)] = None,
    rank: Annotated[int | None, typer.Option("--rank", help="Only the lines MPI rank N wrote (Open MPI's "
                                                "output tagging).", show_default=False)] = None,
    grep: Annotated[str | None, typer.Option("--grep", help="Only lines matching this regular expression.",
                                                show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only lines newer than this (30s, 5m, 1h).",
                                                 show_default=False)] = None,
    tail: Annotated[int | None, typer.Option("--tail", help="Only the last N lines (of each pod with --follow).",
                                             show_default=False)] = None,
    timestamps: Annotated[bool, typer.Option("--timestamps", help="Show each line's time.")] = False,
    prefix: Annotated[bool, typer.Option("--prefix/--no-prefix", help="Tag each line with its pod (and rank).")] = True,
    output_format: Annotated[str | None, typer.Option(
        "--output", "-o", help='json: one object per line, {"time", "pod", "rank", "text"} (JSON Lines).',
        show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Print (or follow) the logs of every pod of a TrainJob, merged by time, each line tagged `[pod]`
    (`[pod rank N]` for what rank N printed)."""
    from mpijob.client.errors import InvalidArgument, NoLauncher
    from mpijob.client.logs import Filter, follow_merged, read_merged
    from mpijob.client.phase import job_phase, terminal_condition

    keep = Filter(grep, rank)
    since_seconds = max(1, round(parse_duration(since, "--since"))) if since is not None else None
    if tail is not None and tail < 0:
        raise InvalidArgument("--tail", tail, "is negative", "use 0 or more lines")
    if output_format not in (None, "json"):
        raise UsageError(f"logs --output {output_format!r} is not supported; use json (one object per line)")
    colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    printer = Printer(prefix, timestamps, colour, as_json=output_format == "json", live=follow)
    with connect(ctx, kubeconfig, context, namespace) as conn:
        job = conn.get_trainjob(name)
        pods = _pods(conn, name, pod)
        if not follow:
            if not pods:
                phase, message = job_phase(job, [])
                raise NoLauncher(f"trainjob {name!r} has no pods yet, so no launcher pod (state: {phase}"
                                 f"{': ' + message if message else ''}); use --follow to wait for its logs")
            printer.write(read_merged(conn, pods, tail_lines=tail, since_seconds=since_seconds), keep)
            if rank is not None and not printer.saw_rank:
                output.info(NO_RANKS)
            return

        def list_pods() -> list[str]:
            return pods if pod is not None else [p["metadata"]["name"] for p in conn.job_pods(name)]

        def job_ended() -> bool:
            return terminal_condition(conn.get_trainjob(name)) is not None

        def warn(p: str, exc: BaseException) -> None:
            output.info(f"log stream of {p} ended early: {exc}")

        printer.write(follow_merged(conn, list_pods, job_ended, tail_lines=tail, since_seconds=since_seconds,
                                    on_error=warn), keep)
        if rank is not None and not printer.saw_rank:
            output.info(NO_RANKS)
