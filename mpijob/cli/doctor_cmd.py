"""`mpijob doctor [-f JOB.yaml] [-n NS] [--context C] [-o json]`: pre-flight checks of the cluster and a job,
each PASS / WARN / FAIL with its finding and fix (`mpijob.client.doctor`; docs/doctor.md).

Exit 0 when nothing fails (warnings allowed), the job-failed code (1) when a check fails (the job would
not run, or would fail), the server-unavailable code when the API server cannot be reached, the forbidden
code when it refuses the credentials.
"""

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.api import Obj
from mpijob.cli import output
from mpijob.cli.exitcodes import Exit, UsageError
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, globals_of, handles_errors

if TYPE_CHECKING:
    from mpijob.client.doctor import Check

JobFileOpt = Annotated[str | None, typer.Option(
    "--filename", "-f", help="The TrainJob to check (YAML/JSON, `-` for stdin); default: a job on the bundled "
    "runtime mpi-distributed, without a queue label.", show_default=False)]
DoctorOutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o", help="json: {job, namespace, checks: [{name, status, finding, fix}], summary}.",
    show_default=False)]
WIDTH = 16  # the check-name column


def job_from(path: str) -> Obj:
    """The first TrainJob of a manifest file; InvalidArgument when it has none."""
    from mpijob.api.core.resources import TRAINJOBS
    from mpijob.client import manifests
    from mpijob.client.errors import InvalidArgument

    for obj in manifests.load(path):
        if obj.get("kind") == TRAINJOBS.kind:
            return obj
    raise InvalidArgument("--filename", path, "holds no TrainJob", "pass a file with a TrainJob (kind: TrainJob)")


def summary(checks: "list[Check]") -> dict[str, int]:
    from mpijob.client.doctor import Status

    return {s.value.lower(): sum(c.status is s for c in checks) for s in Status}


def render(checks: "list[Check]", heading: str) -> str:
    """The text report: a heading, one line per check (and its fix), then the count of each verdict."""
    lines = [heading, ""]
    for c in checks:
        lines.append(f"{c.status.value:<6}{c.name:<{WIDTH}}{c.finding}")
        if c.fix:
            lines.append(f"{'':<{6 + WIDTH}}fix: {c.fix}")
    counts = summary(checks)
    said = ", ".join(f"{n} {word}" for word, n in (("passed", counts["pass"]), ("warned", counts["warn"]),
                                                   ("failed", counts["fail"]), ("skipped", counts["skip"])) if n)
    lines += ["", f"{len(checks)} checks: {said}"]
    return "\n".join(lines) + "\n"


@handles_errors
def doctor(
    ctx: typer.Context,
    filename: JobFileOpt = None,
    output_format: DoctorOutputOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Check that a job can run here: the API server, Trainer, JobSet and Kueue, the runtime, your right
    to create TrainJobs, the LocalQueue and quota, Istio, NetworkPolicies, Nodes, slots per GPU.

    Each check prints PASS, WARN or FAIL with what it found and, when something is wrong, the fix. Exit 0
    when nothing fails (warnings allowed), 1 when a check fails, 8 when the API server cannot be reached
    (5 when it refuses the credentials)."""
    from mpijob.client.doctor import Facts, Status, default_job, diagnose

    if output_format not in (None, "json"):
        raise UsageError(f"doctor --output {output_format!r} is not supported; use json")
    job = job_from(filename) if filename else None
    given_ns = namespace or globals_of(ctx).namespace
    job_ns = ((job or {}).get("metadata") or {}).get("namespace")
    if job_ns and given_ns and job_ns != given_ns:
        from mpijob.client.errors import InvalidArgument

        raise InvalidArgument("--namespace", given_ns, f"does not match the job's metadata.namespace {job_ns!r}",
                              "drop -n, or the namespace in the file")
    with connect(ctx, kubeconfig, context, job_ns or namespace) as conn:
        ns = conn.namespace
        facts = Facts(ns, job or default_job(ns), given=job is not None, server=conn.url)
        checks = conn.run(diagnose(facts))
    name = str((facts.job.get("metadata") or {}).get("name") or "")
    if output_format == "json":
        body = {"job": name, "namespace": ns, "file": filename or "", "server": facts.server,
                "checks": [c.to_json() for c in checks], "summary": summary(checks)}
        sys.stdout.write(json.dumps(body, indent=4) + "\n")
    else:
        what = f"TrainJob {name} ({filename})" if job is not None else \
            "a default TrainJob (runtime mpi-distributed, no queue label; -f JOB.yaml checks yours)"
        sys.stdout.write(render(checks, f"Checking {what} in namespace {ns} on {facts.server}"))
    sys.stdout.flush()
    if checks and checks[0].status is Status.FAIL:
        from mpijob.client.doctor.cluster import REFUSED

        raise typer.Exit(int(Exit.FORBIDDEN if REFUSED in checks[0].finding else Exit.UNAVAILABLE))
    if any(c.status is Status.FAIL for c in checks):
        output.info("doctor: a check failed; apply its fix before running the job")
        raise typer.Exit(int(Exit.JOB_FAILED))
