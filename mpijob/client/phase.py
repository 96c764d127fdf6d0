"""One derived phase per TrainJob, the same on every surface (docs/architecture.md).

Upstream conditions are the truth; when none is set yet (a job that simply runs has none), the pods
tell how far it got: Queued (no pods) → Starting → Running (launcher running) → Succeeded | Failed.
"""

from __future__ import annotations

from mpijob.api import Obj, names


def true_condition(trainjob: Obj, type_: str) -> Obj | None:
    """The condition of this type when it is True, else None (a False or Unknown one is not set)."""
    for c in (trainjob.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == "True":
            return c
    return None


def terminal_condition(trainjob: Obj) -> Obj | None:
    """The terminal condition (`Complete` or `Failed`) when the job has ended, else None."""
    return true_condition(trainjob, names.FAILED) or true_condition(trainjob, names.COMPLETE)


def is_launcher(pod: Obj) -> bool:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(names.LABEL_RJOB_NAME) == names.LAUNCHER


def job_phase(trainjob: Obj, pods: list[Obj] | None = None, waiting: str = "") -> tuple[str, str]:
    """(phase, message) for display; `pods` are the job's pods when the caller has them, `waiting`
    the queue's reason when its Workload is not admitted yet."""
    if c := true_condition(trainjob, names.FAILED):
        return "Failed", str(c.get("message") or c.get("reason") or "")
    if c := true_condition(trainjob, names.COMPLETE):
        return "Succeeded", str(c.get("message") or "")
    if c := true_condition(trainjob, names.SUSPENDED):
        return "Suspended", str(c.get("message") or "")
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Suspended", "spec.suspend is true"
    if pods is None:
        return "Created", ""
    if not pods:
        return "Queued", waiting or "waiting for pods to be created"
    launcher = [p for p in pods if is_launcher(p)]
    nodes = [p for p in pods if p not in launcher]
    if launcher and pod_phase(launcher[0]) == "Running":
        return "Running", f"launcher {launcher[0]['metadata']['name']} is running"
    ready = sum(1 for p in nodes if pod_ready(p))
    return "Starting", f"{ready}/{len(nodes)} nodes ready"


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def pod_ready(pod: Obj) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all(s.get("ready") for s in statuses)


def pod_status(pod: Obj) -> str:
    """The STATUS column as kubectl shows it: a container's waiting/terminated reason, else the phase."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "terminated" in state:
            t = state["terminated"] or {}
            reason = t.get("reason")
            if reason:
                return str(reason)
            if t.get("signal"):
                return f"Signal:{t['signal']}"
            return f"ExitCode:{t.get('exitCode', '?')}"
        if "waiting" in state and (state["waiting"] or {}).get("reason"):
            return str(state["waiting"]["reason"])
    return str(status.get("reason") or status.get("phase") or "Pending")
