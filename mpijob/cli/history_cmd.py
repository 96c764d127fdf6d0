"""`mpijob history [-A] [-n NS] [--user U] [--since 7d] [--limit N] [-o json|yaml|wide]`: every job that ran,
with what it used, like Slurm's `sacct`.

Read through the API (mpijob.io's `jobrecords`, docs/history.md), so RBAC decides what a user sees: the
namespaces they may look at, every namespace only for who may list across them. The local cluster keeps
the history; another cluster has no such API, and the command says so.
"""

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from mpijob.api import Obj, names
from mpijob.cli import output
from mpijob.cli.flags import parse_duration
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, handles_errors

COLUMNS = ["NAME", "KIND", "USER", "STATE", "REASON", "NODES", "GPUS", "WAIT", "RUN", "CPU-HOURS", "GPU-HOURS", "AGE"]
WIDE = ["RUNTIME", "PROCS", "SUBMITTED", "STARTED", "FINISHED", "PEAK-MEMORY", "UID"]
DEFAULT_LIMIT = 100


def _seconds(value: object) -> str:
    """A wait or run time: tenths below ten seconds (local jobs are quick), kubectl's durations above."""
    from mpijob.api.core.durations import human_duration

    if not isinstance(value, (int, float)):
        return "-"
    return f"{value:.1f}s" if value < 10 else human_duration(value)


def _hours(value: object) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return "0" if value == 0 else "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _memory(value: object) -> str:
    if not isinstance(value, int):
        return "-"
    return f"{value / 2**30:.1f}Gi" if value >= 2**30 else f"{value / 2**20:.0f}Mi"


def row(record: Obj, wide: bool, all_namespaces: bool, now: datetime | None = None) -> list[str]:
    """One record's cells (`COLUMNS`, then `WIDE`), NAMESPACE first across namespaces."""
    from mpijob.api.core.durations import age

    meta = record.get("metadata") or {}
    cells = [str(meta.get("name", "")), str(record.get("jobKind") or "TrainJob"),
             str(record.get("requester") or "<unknown>"), str(record.get("state", "")),
             str(record.get("failure") or record.get("reason") or "-"), str(record.get("nodes", "")),
             str(record.get("gpus", "")), _seconds(record.get("waitSeconds")), _seconds(record.get("runSeconds")),
             _hours(record.get("cpuHours")), _hours(record.get("gpuHours")), age(record.get("submitted"), now)]
    if wide:
        cells += [str(record.get("runtime") or "-"), str(record.get("procsPerNode", "")),
                  *(str(record.get(k) or "-") for k in ("submitted", "started", "finished")),
                  _memory(record.get("memoryPeakBytes")), str(meta.get("uid", ""))]
    return ([str(meta.get("namespace", ""))] if all_namespaces else []) + cells


@handles_errors
def history(
    ctx: typer.Context,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace's jobs.")] = False,
    user: Annotated[str | None, typer.Option("--user", help="Only the jobs this user created.",
                                                show_default=False)] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only jobs running, waiting or finished in this time (30m, 12h, 7d).",
        show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", help="The newest N jobs (0: all).")] = DEFAULT_LIMIT,
    output_format: Annotated[str | None, typer.Option(
        "--output", "-o", help="json | yaml | wide", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show every job that ran (TrainJobs and MPIJobs), also after it was deleted: who ran it, how big, how
    long it waited and ran, how it ended and why, its CPU-hours, GPU-hours and peak memory (like Slurm's sacct).

    Oldest first, the newest --limit of them. WAIT is submission to start, RUN the time its pods ran
    (every run, when it was suspended or preempted), CPU-HOURS its pods' CPU time, GPU-HOURS its GPUs
    times RUN, REASON the failure's class (docs/troubleshooting.md) or the condition's reason. The
    history is the local cluster's (docs/history.md); RBAC shows each user the namespaces they may read.
    """
    from mpijob.api.core.errors import ApiError
    from mpijob.client.history import list_records

    output.check_format(output_format, ("json", "yaml", "wide"), "history")
    start = None
    if since is not None:
        start = datetime.now(UTC) - timedelta(seconds=parse_duration(since, "--since"))
    with connect(ctx, kubeconfig, context, namespace) as conn:
        where = None if all_namespaces else conn.namespace
        try:
            found = conn.run(list_records(where, user, start, max(limit, 0)))
        except ApiError as e:
            if e.code != 404:
                raise
            raise ApiError(404, "NotFound", f"this cluster keeps no job history ({names.JOB_RECORDS}."
                           f"{names.MPIJOB_GROUP}): the local cluster does, `mpijob server start`") from None
    items = found.get("items") or []
    if output_format in ("json", "yaml"):
        output.dump(found, output_format)
        return
    if not items:
        output.info("No job records found" + ("." if all_namespaces else f" in {where} namespace."))
        return
    wide = output_format == "wide"
    output.table((["NAMESPACE"] if all_namespaces else []) + COLUMNS + (WIDE if wide else []),
                 [row(r, wide, all_namespaces) for r in items])
    if more := (found.get("metadata") or {}).get("remainingItemCount"):
        output.info(f"{more} older job record(s) not shown: --limit 0 shows every one")
