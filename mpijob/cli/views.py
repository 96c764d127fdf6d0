"""What the tables and `describe` show, as plain rows and lines (no I/O, easy to test)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mpijob.api import Obj, names
from mpijob.api.core.durations import age, human_duration
from mpijob.api.trainer.progress import Progress, progress_of
from mpijob.cli.output import indented_table, kv
from mpijob.client.phase import job_phase, pod_status

if TYPE_CHECKING:
    from mpijob.client.wait import JobState

TRAINJOB_COLUMNS = ["NAME", "STATE", "NODES", "PROGRESS", "ETA", "AGE"]
TRAINJOB_WIDE = ["RUNTIME", "MESSAGE"]
POD_COLUMNS = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
POD_WIDE = ["ROLE", "JOB"]
RUNTIME_COLUMNS = ["NAME", "KIND", "FRAMEWORK", "AGE"]
RUNTIME_WIDE = ["MPI", "PROCS/NODE", "LAUNCHER-AS-NODE"]


def state_line(state: JobState) -> str:
    """A job's progress in one line: `Queued · position 1 in queue team · 0/2 pods ready · why`."""
    parts = [state.phase]
    if state.position is not None:
        parts.append(f"position {state.position} in queue {state.queue}")
    if state.pods_total:
        parts.append(f"{state.pods_ready}/{state.pods_total} pods ready")
    if state.message:
        parts.append(state.message)
    return " · ".join(parts)


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def num_nodes(trainjob: Obj, runtime: Obj | None = None) -> str:
    """`trainer.numNodes`, else the runtime's `mlPolicy.numNodes`, else `-`."""
    n = ((trainjob.get("spec") or {}).get("trainer") or {}).get("numNodes")
    if n is None and runtime is not None:
        n = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("numNodes")
    return "-" if n is None else str(n)


def runtime_ref(trainjob: Obj) -> str:
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return f"{ref.get('kind') or 'ClusterTrainingRuntime'}/{ref.get('name', '')}"


def progress_cells(progress: Progress | None, phase: str, now: datetime | None = None) -> tuple[str, str]:
    """PROGRESS and ETA as the job's program last reported them (`status.trainerStatus`): the percentage,
    and the time left counted down from the report (only while the job has not ended); `-` when unknown."""
    if progress is None:
        return "-", "-"
    pct = "-" if progress.percentage is None else f"{progress.percentage}%"
    left = progress.remaining_at(now or datetime.now(UTC))
    return pct, "-" if left is None or phase in ("Succeeded", "Failed") else human_duration(left)


def trainjob_row(
    trainjob: Obj, pods: list[Obj] | None, runtime: Obj | None, wide: bool, now: datetime | None = None,
    waiting: str = "",
) -> list[str]:
    phase, message = job_phase(trainjob, pods, waiting)
    row = [_meta(trainjob).get("name", ""), phase, num_nodes(trainjob, runtime),
           *progress_cells(progress_of(trainjob), phase, now), age(_meta(trainjob).get("creationTimestamp"), now)]
    if wide:
        row += [runtime_ref(trainjob), message.replace("\n", " ")]
    return row


def pod_row(pod: Obj, wide: bool, now: datetime | None = None) -> list[str]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    containers = (pod.get("spec") or {}).get("containers") or statuses
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    row = [_meta(pod).get("name", ""), f"{ready}/{len(containers)}", pod_status(pod), str(restarts),
           age(_meta(pod).get("creationTimestamp"), now)]
    if wide:
        labels = _meta(pod).get("labels") or {}
        row += [labels.get(names.LABEL_RJOB_NAME, "-"), labels.get(names.LABEL_JOBSET_NAME, "-")]
    return row


def runtime_row(runtime: Obj, wide: bool, now: datetime | None = None) -> list[str]:
    labels = _meta(runtime).get("labels") or {}
    row = [_meta(runtime).get("name", ""), runtime.get("kind", ""),
           labels.get(names.LABEL_FRAMEWORK, "-"), age(_meta(runtime).get("creationTimestamp"), now)]
    if wide:
        mpi = (((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi")) or {}
        row += [
            str(mpi.get("mpiImplementation", "-")) if mpi else "-",
            str(mpi.get("numProcPerNode", "-")) if mpi else "-",
            str(mpi.get("runLauncherAsNode", False)).lower() if mpi else "-",
        ]
    return row


def describe_trainjob(
    trainjob: Obj, pods: list[Obj], events: list[Obj], runtime: Obj | None, now: datetime | None = None,
    waiting: str = "",
) -> str:
    """`kubectl describe`-style text: spec summary, conditions, jobsStatus, pods, events."""
    meta, spec, status = _meta(trainjob), trainjob.get("spec") or {}, trainjob.get("status") or {}
    trainer = spec.get("trainer") or {}
    phase, message = job_phase(trainjob, pods, waiting)
    out: list[str] = []
    kv(out, "Name", meta.get("name"))
    kv(out, "Namespace", meta.get("namespace"))
    kv(out, "Labels", ", ".join(f"{k}={v}" for k, v in (meta.get("labels") or {}).items()) or "<none>")
    kv(out, "Created", f"{meta.get('creationTimestamp')} ({age(meta.get('creationTimestamp'), now)} ago)")
    kv(out, "State", phase)
    if message:
        kv(out, "Message", message)
    if (progress := progress_of(trainjob)) is not None:
        pct, eta = progress_cells(progress, phase, now)
        kv(out, "Progress", f"{pct}, ETA {eta} (reported {age(progress.updated.isoformat(), now)} ago)")
        if progress.metrics:
            kv(out, "Metrics", ", ".join(f"{k}={v}" for k, v in progress.metrics.items()), 2)
    kv(out, "Runtime", runtime_ref(trainjob) + ("" if runtime is not None else "  (not found)"))
    out.append("Trainer:")
    kv(out, "Nodes", num_nodes(trainjob, runtime), 2)
    if "numProcPerNode" in trainer:
        kv(out, "Procs per node", trainer["numProcPerNode"], 2)
    for key, label in (("image", "Image"), ("command", "Command"), ("args", "Args")):
        if key in trainer:
            value = trainer[key]
            kv(out, label, " ".join(map(str, value)) if isinstance(value, list) else value, 2)
    if trainer.get("resourcesPerNode"):
        kv(out, "Resources", trainer["resourcesPerNode"], 2)
    if trainer.get("env"):
        out.append("  Env:")
        for e in trainer["env"]:
            out.append(f"    {e.get('name')}={e.get('value', '<from ' + str(list(e.get('valueFrom', {}))) + '>')}")
    if spec.get("suspend") is not None:
        kv(out, "Suspend", str(spec["suspend"]).lower())
    out.append("Conditions:")
    conditions = status.get("conditions") or []
    out += indented_table(
        ["TYPE", "STATUS", "REASON", "LAST TRANSITION", "MESSAGE"],
        [[c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("lastTransitionTime", ""),
          c.get("message", "")] for c in conditions],
    )
    out.append("Jobs Status:")
    out += indented_table(
        ["NAME", "READY", "SUCCEEDED", "FAILED", "ACTIVE", "SUSPENDED"],
        [[str(j.get(k, "")) for k in ("name", "ready", "succeeded", "failed", "active", "suspended")]
         for j in status.get("jobsStatus") or []],
    )
    out.append("Pods:")
    out += indented_table([*POD_COLUMNS, "ROLE"], [pod_row(p, True, now)[:-1] for p in pods])
    out.append("Events:")
    out += indented_table(
        ["LAST SEEN", "TYPE", "REASON", "FROM", "MESSAGE"],
        [[age(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"), now), e.get("type", ""),
          e.get("reason", ""), (e.get("source") or {}).get("component") or e.get("reportingComponent", ""),
          str(e.get("message", "")).strip()] for e in events],
    )
    return "\n".join(out) + "\n"
