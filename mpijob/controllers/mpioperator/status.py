"""An MPIJob's status as MPI Operator writes it (`pkg/controller/mpi_job_controller{,_status}.go`):
conditions `Created`, `Suspended`, `Running`, `Succeeded`, `Failed` with its reasons and messages,
`replicaStatuses` per replica type from the pods, `startTime` and `completionTime`. Pure: the caller stores
the result."""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.store.objects import now

CREATED, RUNNING = "Created", "Running"  # MPI Operator's condition types
SUCCEEDED, FAILED, SUSPENDED = names.MPIJOB_SUCCEEDED_CONDITION, names.FAILED, names.SUSPENDED


def condition(job: Obj, kind: str) -> Obj | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def finished(job: Obj) -> bool:
    return any((condition(job, kind) or {}).get("status") == "True" for kind in (SUCCEEDED, FAILED))


def set_condition(job: Obj, kind: str, status: bool, reason: str, message: str) -> bool:
    """MPI Operator's `setCondition`: nothing changes when status and reason are the same; the transition
    time stays when only the reason changes; an end (Succeeded, Failed) turns Running (and an earlier
    Failed) False. True if anything changed."""
    value, at = ("True" if status else "False"), now()
    conditions = job.setdefault("status", {}).setdefault("conditions", [])
    current = condition(job, kind)
    if current and (current.get("status"), current.get("reason")) == (value, reason):
        return False
    new = {"type": kind, "status": value, "lastUpdateTime": at,
           "lastTransitionTime": current["lastTransitionTime"] if current and current.get("status") == value else at,
           "reason": reason, "message": message}
    kept = []
    for c in conditions:
        if c.get("type") == kind:
            continue
        if kind in (SUCCEEDED, FAILED) and c.get("type") in (RUNNING, FAILED):
            c = {**c, "status": "False"}
        kept.append(c)
    job["status"]["conditions"] = [*kept, new]
    return True


def created(job: Obj) -> bool:
    """The first sight of a job: `Created` and its `startTime`. True if anything changed."""
    meta = job["metadata"]
    changed = False
    if not (job.get("status") or {}).get("conditions"):
        changed = set_condition(job, CREATED, True, names.MPIJOB_CREATED,
                                f"MPIJob {meta['namespace']}/{meta['name']} is created.")
    if not job["status"].get("startTime"):
        job["status"]["startTime"] = now()
        changed = True
    return changed


def replica_statuses(pods: list[Obj], succeeded: bool | None = None) -> dict[str, dict[str, int]]:
    """`{Launcher, Worker}: {active, succeeded, failed}` from the pods (`succeeded`: the launcher's end
    once known), zero counts left out as the operator's `omitempty` does."""
    out: dict[str, dict[str, int]] = {}
    for replica, role in ((names.REPLICA_LAUNCHER, names.LAUNCHER), (names.REPLICA_WORKER, names.MPI_ROLE_WORKER)):
        mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(names.LABEL_MPI_JOB_ROLE) == role]
        phases = [(p.get("status") or {}).get("phase") for p in mine]
        counts = {"active": phases.count("Running"), "succeeded": phases.count("Succeeded"),
                  "failed": phases.count("Failed")}
        if replica == names.REPLICA_LAUNCHER and succeeded is not None:
            counts = {"active": 0, "succeeded": int(succeeded), "failed": int(not succeeded)}
        out[replica] = {k: v for k, v in counts.items() if v}
    return out


def observe(job: Obj, pods: list[Obj]) -> bool:
    """Replica counts and `Running` (the launcher and every worker running) from the pods of an unfinished
    job. True if anything changed."""
    meta, status = job["metadata"], job.setdefault("status", {})
    before = status.get("replicaStatuses")
    status["replicaStatuses"] = replica_statuses(pods)
    changed = status["replicaStatuses"] != before
    launcher = status["replicaStatuses"][names.REPLICA_LAUNCHER].get("active", 0)
    workers = [p for p in pods
               if (p["metadata"].get("labels") or {}).get(names.LABEL_MPI_JOB_ROLE) == names.MPI_ROLE_WORKER]
    if launcher and all((p.get("status") or {}).get("phase") == "Running" for p in workers):
        changed |= set_condition(job, RUNNING, True, names.MPIJOB_RUNNING,
                                 f"MPIJob {meta['namespace']}/{meta['name']} is running.")
    return changed


def ended(job: Obj, pods: list[Obj], succeeded: bool, reason: str, message: str) -> None:
    """The job's end: `Succeeded` (MPIJobSucceeded) or `Failed` (`reason`: MPIJobFailed, DeadlineExceeded) with
    `message`, the final counts and `completionTime`; `Running` False, with the operator's words when the job
    ended before it was seen running."""
    meta, status = job["metadata"], job.setdefault("status", {})
    status["replicaStatuses"] = replica_statuses(pods, succeeded)
    status.setdefault("completionTime", now())
    if condition(job, RUNNING) is None:
        set_condition(job, RUNNING, False, names.MPIJOB_RUNNING,
                      f"MPIJob {meta['namespace']}/{meta['name']} is finished but Running condition was never set.")
    if succeeded:
        set_condition(job, SUCCEEDED, True, names.MPIJOB_SUCCEEDED,
                      f"MPIJob {meta['namespace']}/{meta['name']} successfully completed.")
    else:
        set_condition(job, FAILED, True, reason, message)


def suspended(job: Obj, pods: list[Obj]) -> bool:
    """A job held (suspended by its user, or waiting for Kueue to admit it) as MPI Operator shows one whose
    `runPolicy.suspend` is true: `Suspended` True (MPIJobSuspended), `Running` False, the counts of its
    pods. True if `Suspended` turned True now (MPI Operator's Event is due)."""
    meta, status = job["metadata"], job.setdefault("status", {})
    status["replicaStatuses"] = replica_statuses(pods)
    changed = set_condition(job, SUSPENDED, True, names.MPIJOB_SUSPENDED, names.MPIJOB_SUSPENDED_MESSAGE)
    set_condition(job, RUNNING, False, names.MPIJOB_SUSPENDED,
                  f"MPIJob {meta['namespace']}/{meta['name']} is suspended.")
    return changed


def resumed(job: Obj) -> bool:
    """A held job let run: `Suspended` False (MPIJobResumed) and a new `startTime`, as MPI Operator writes
    them, when it was held before. True if that happened now (the Event is due)."""
    if condition(job, SUSPENDED) is None or not set_condition(job, SUSPENDED, False, names.MPIJOB_RESUMED,
                                                               names.MPIJOB_RESUMED_MESSAGE):
        return False
    job["status"]["startTime"] = now()
    running = condition(job, RUNNING)
    if running and (running.get("status"), running.get("reason")) == ("False", names.MPIJOB_SUSPENDED):
        # MPI Operator leaves "is suspended." here until the job runs: beside Suspended False (resumed), a
        # status that says both. It says what the job does now: its pods start.
        meta = job["metadata"]
        set_condition(job, RUNNING, False, names.MPIJOB_RESUMED,
                      f"MPIJob {meta['namespace']}/{meta['name']} is resumed; it is running once its launcher and "
                      "every worker run.")
    return True
