"""What the tables and `describe` show, as plain rows and lines (no I/O, easy to test)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from mpijob.client.phase import ROLE_LABEL, job_phase, pod_status

Obj = dict[str, Any]

TRAINJOB_COLUMNS = ["NAME", "STATE", "NODES", "AGE"]
TRAINJOB_WIDE = ["RUNTIME", "MESSAGE"]
POD_COLUMNS = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
POD_WIDE = ["ROLE", "JOB"]
RUNTIME_COLUMNS = ["NAME", "KIND", "FRAMEWORK", "AGE"]
RUNTIME_WIDE = ["MPI", "PROCS/NODE", "LAUNCHER-AS-NODE"]


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's `HumanDuration`: 45s, 5m30s, 42m, 3h10m, 20h, 3d4h, 40d, 2y10d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    t = parse_time(timestamp)
    if t is None:
        return "<unknown>"
    return human_duration(((now or datetime.now(timezone.utc)) - t).total_seconds())


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


def trainjob_row(
    trainjob: Obj, pods: list[Obj] | None, runtime: Obj | None, wide: bool, now: datetime | None = None,
    waiting: str = "",
) -> list[str]:
    phase, message = job_phase(trainjob, pods, waiting)
    row = [_meta(trainjob).get("name", ""), phase, num_nodes(trainjob, runtime),
           age(_meta(trainjob).get("creationTimestamp"), now)]
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
        row += [labels.get(ROLE_LABEL, "-"), labels.get("jobset.sigs.k8s.io/jobset-name", "-")]
    return row


def runtime_row(runtime: Obj, wide: bool, now: datetime | None = None) -> list[str]:
    labels = _meta(runtime).get("labels") or {}
    row = [_meta(runtime).get("name", ""), runtime.get("kind", ""),
           labels.get("trainer.kubeflow.org/framework", "-"), age(_meta(runtime).get("creationTimestamp"), now)]
    if wide:
        mpi = (((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi")) or {}
        row += [
            str(mpi.get("mpiImplementation", "-")) if mpi else "-",
            str(mpi.get("numProcPerNode", "-")) if mpi else "-",
            str(mpi.get("runLauncherAsNode", False)).lower() if mpi else "-",
        ]
    return row


def _kv(lines: list[str], key: str, value: Any, indent: int = 0) -> None:
    lines.append(f"{' ' * indent}{key + ':':<{max(18 - indent, len(key) + 2)}}{'' if value is None else value}")


def describe_trainjob(
    trainjob: Obj, pods: list[Obj], events: list[Obj], runtime: Obj | None, now: datetime | None = None,
    waiting: str = "",
) -> str:
    """`kubectl describe`-style text: spec summary, conditions, jobsStatus, pods, events."""
    meta, spec, status = _meta(trainjob), trainjob.get("spec") or {}, trainjob.get("status") or {}
    trainer = spec.get("trainer") or {}
    phase, message = job_phase(trainjob, pods, waiting)
    out: list[str] = []
    _kv(out, "Name", meta.get("name"))
    _kv(out, "Namespace", meta.get("namespace"))
    _kv(out, "Labels", ", ".join(f"{k}={v}" for k, v in (meta.get("labels") or {}).items()) or "<none>")
    _kv(out, "Created", f"{meta.get('creationTimestamp')} ({age(meta.get('creationTimestamp'), now)} ago)")
    _kv(out, "State", phase)
    if message:
        _kv(out, "Message", message)
    _kv(out, "Runtime", runtime_ref(trainjob) + ("" if runtime is not None else "  (not found)"))
    out.append("Trainer:")
    _kv(out, "Nodes", num_nodes(trainjob, runtime), 2)
    if "numProcPerNode" in trainer:
        _kv(out, "Procs per node", trainer["numProcPerNode"], 2)
    for key, label in (("image", "Image"), ("command", "Command"), ("args", "Args")):
        if key in trainer:
            value = trainer[key]
            _kv(out, label, " ".join(map(str, value)) if isinstance(value, list) else value, 2)
    if trainer.get("resourcesPerNode"):
        _kv(out, "Resources", trainer["resourcesPerNode"], 2)
    if trainer.get("env"):
        out.append("  Env:")
        for e in trainer["env"]:
            out.append(f"    {e.get('name')}={e.get('value', '<from ' + str(list(e.get('valueFrom', {}))) + '>')}")
    if spec.get("suspend") is not None:
        _kv(out, "Suspend", str(spec["suspend"]).lower())
    out.append("Conditions:")
    conditions = status.get("conditions") or []
    out += _indented_table(
        ["TYPE", "STATUS", "REASON", "LAST TRANSITION", "MESSAGE"],
        [[c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("lastTransitionTime", ""),
          c.get("message", "")] for c in conditions],
    )
    out.append("Jobs Status:")
    out += _indented_table(
        ["NAME", "READY", "SUCCEEDED", "FAILED", "ACTIVE", "SUSPENDED"],
        [[str(j.get(k, "")) for k in ("name", "ready", "succeeded", "failed", "active", "suspended")]
         for j in status.get("jobsStatus") or []],
    )
    out.append("Pods:")
    out += _indented_table(POD_COLUMNS + ["ROLE"], [pod_row(p, True, now)[:-1] for p in pods])
    out.append("Events:")
    out += _indented_table(
        ["LAST SEEN", "TYPE", "REASON", "FROM", "MESSAGE"],
        [[age(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"), now), e.get("type", ""),
          e.get("reason", ""), (e.get("source") or {}).get("component") or e.get("reportingComponent", ""),
          str(e.get("message", "")).strip()] for e in events],
    )
    return "\n".join(out) + "\n"


def _indented_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["  <none>"]
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    lines = []
    for r in [columns, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(r, widths)]
        lines.append(("  " + "   ".join(cells)).rstrip())
    return lines
