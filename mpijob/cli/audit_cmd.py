"""`mpijob audit [--user U] [--since 1h] [--verb V] [-o json]`: the local cluster's audit log.

The log is a file of the local cluster's home (`Home.audit_log`, `auditLog` in `mpijob server status
-o json`), read here directly: no API serves a cluster's audit log (kube-apiserver's is a file, or a
webhook, on its own machine), so this command reads the local cluster's only, whatever kubeconfig is
in use.
"""

import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from mpijob.api import names
from mpijob.cli import output
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.flags import parse_duration
from mpijob.cli.session import handles_errors
from mpijob.store.home import Home

COLUMNS = ("TIME", "USER", "VERB", "RESOURCE", "NAMESPACE", "NAME", "CODE")
# kube's request verbs, and the lower-cased methods of non-resource requests (RequestInfo)
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "post", "put")


def _row(ev: dict[str, Any]) -> list[str]:
    from mpijob.api.core.durations import parse_time
    from mpijob.store.audit import username

    when = parse_time(ev.get("requestReceivedTimestamp"))
    ref = ev.get("objectRef") if isinstance(ev.get("objectRef"), dict) else None
    if ref is not None:
        resource = str(ref.get("resource", "")) + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    else:  # a non-resource request: its path
        resource = str(ev.get("requestURI", "")).split("?")[0]
    status = ev["responseStatus"] if isinstance(ev.get("responseStatus"), dict) else {}
    return [when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else "<unknown>", username(ev) or "<none>",
            str(ev.get("verb", "")), resource or "<none>", str((ref or {}).get("namespace") or "<none>"),
            str((ref or {}).get("name") or "<none>"), str(status.get("code", ""))]


@handles_errors
def audit(
    user: Annotated[str | None, typer.Option(
        "--user", help="Only what this user did, and the completion or failure of the TrainJobs they created.",
        show_default=False)] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only events newer than this (30s, 5m, 1h, 2h30m).", show_default=False)] = None,
    verb: Annotated[str | None, typer.Option(
        "--verb", help=f"Only this verb: {', '.join(VERBS)}.", show_default=False)] = None,
    output_format: Annotated[str | None, typer.Option(
        "--output", "-o", help=f"json: the {names.AUDIT_API_VERSION} Events as JSON lines, as the log holds them.",
        show_default=False)] = None,
) -> None:
    """Show the local cluster's audit log: who changed what, who was refused, and when.

    Every change and every refused request (401, 403) is an Event, with its user, verb, object and
    the answer's code. Reads the audit log file of the local cluster in $MPIJOB_HOME (the `auditLog` of `mpijob server
    status -o json`), whichever kubeconfig is in use: a remote cluster's audit log is its API server's
    file. The Events are kube-apiserver's audit.k8s.io/v1 Events at level Metadata (never a body or a
    token); a TrainJob's completion or failure is an update of trainjobs/status by the Trainer
    controller that names the job's creator (annotation mpijob.io/requester), which --user matches.
    """
    from mpijob.client.errors import InvalidArgument
    from mpijob.store import audit as log

    if output_format not in (None, "json"):
        raise UsageError(f"audit --output {output_format!r} is not supported; use json (one Event per line)")
    if verb is not None and verb not in VERBS:
        raise InvalidArgument("--verb", verb, "is not a request verb", f"use one of: {', '.join(VERBS)}")
    start = None
    if since is not None:
        start = datetime.now(UTC) - timedelta(seconds=parse_duration(since, "--since"))
    path = Home.default().audit_log
    if not log.files(path):
        output.info(f"no audit log at {path} yet: the local cluster writes it once it serves a change "
                    "(start it: mpijob server start)")
        return
    events = (ev for ev in log.read(path, since=start) if log.matches(ev, user=user, verb=verb))
    if output_format == "json":
        for ev in events:
            print(json.dumps(ev, separators=(",", ":")))
        return
    rows = [_row(ev) for ev in events]
    if not rows:
        output.info("No audit events found.")
        return
    output.table(COLUMNS, rows)
