"""What the Trainer controller tells the job history (`store/history.py`): a job when first seen, each run's
start, what each run used (its pods' cgroups, read by the runner at teardown), and how the job ended."""

from __future__ import annotations

import time
from pathlib import Path

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time
from mpijob.api.kueue import owners
from mpijob.api.trainer.plan import RunPlan, gpu_count
from mpijob.controllers import conditions as cond
from mpijob.controllers.trainer.runner import JobRunner
from mpijob.controllers.trainer.stops import Outcome
from mpijob.store.audit import requester
from mpijob.store.history import JobRecord, open_history
from mpijob.store.objects import Store


def size(plan: RunPlan) -> tuple[int, int, int]:
    """Nodes, processes per node, and GPUs of all its pods together."""
    return plan.num_nodes, plan.slots, sum(gpu_count(p.resources) for p in plan.pods)


LATE = 0.999  # into its second, where a job seen after its creation's second is stamped


def submitted_at(created: float, seen: float) -> float:
    """When a job was submitted, for the history's order. creationTimestamp has whole seconds, so a job seen
    within its second is stamped when seen (ms later), and one seen later at the end of its second: jobs are
    seen in the order they were created, so one seen late was created after those of its second seen on
    time (stamped at its start, it was listed before them)."""
    return seen if 0 <= seen - created < 1 else created + LATE


def submission(tj: Obj, plan: RunPlan | None) -> JobRecord:
    """A job's record as first seen (a TrainJob, or an MPIJob, which names no runtime): who, what and how big
    (from its run plan when it resolves)."""
    meta, spec = tj["metadata"], tj.get("spec") or {}
    ref = spec.get("runtimeRef") or {}
    runtime = f"{ref.get('kind') or 'ClusterTrainingRuntime'}/{ref.get('name', '')}" if ref else ""
    created, now = parse_time(meta.get("creationTimestamp")), time.time()
    submitted = now if created is None else submitted_at(created.timestamp(), now)
    nodes, procs, gpus = size(plan) if plan else (int((spec.get("trainer") or {}).get("numNodes") or 0), 0, 0)
    return JobRecord(
        uid=meta["uid"], namespace=meta["namespace"], name=meta["name"], requester=requester(tj),
        runtime=runtime, nodes=nodes, procs_per_node=procs, gpus=gpus, submitted=submitted,
        kind=owners.of(tj).kind)


class Accounting:
    def __init__(self, path: Path) -> None:
        self.history = open_history(path)

    def seen(self, tj: Obj, plan: RunPlan | None = None) -> None:
        self.history.submitted(submission(tj, plan))

    def started(self, tj: Obj, workload: Obj, plan: RunPlan) -> None:
        """Its pods are being started, as `plan` says: admitted when its Workload says, started now."""
        admitted = parse_time((cond.get(workload, names.ADMITTED) or {}).get("lastTransitionTime"))
        self.history.started(tj["metadata"]["uid"], admitted.timestamp() if admitted else None, time.time(),
                             *size(plan))

    def run_ended(self, uid: str, runner: JobRunner) -> None:
        """A run is torn down: its time, its pods' CPU seconds together and the largest peak of one pod."""
        cpu = [u.cpu_seconds for u in runner.usage.values() if u.cpu_seconds is not None]
        peaks = [u.memory_peak_bytes for u in runner.usage.values() if u.memory_peak_bytes is not None]
        self.history.stopped(uid, time.time(), sum(cpu) if cpu else None, max(peaks) if peaks else None)

    def finished(self, tj: Obj, outcome: Outcome) -> None:
        self.seen(tj)  # a job that failed before it was planned (its runtime missing) is recorded too
        state = names.COMPLETE if outcome.succeeded else names.FAILED
        self.history.finished(tj["metadata"]["uid"], time.time(), state, outcome.reason, outcome.failure,
                              outcome.message)

    def deleted(self, tj: Obj) -> None:
        self.history.deleted(tj["metadata"]["uid"], time.time(), owners.of(tj).kind)

    def recover(self, store: Store) -> None:
        """At start: every job (TrainJob, MPIJob) is in the history, those that ended before this server kept
        one too (as their conditions tell it); a job recorded as unfinished whose object is gone was deleted
        while no one watched."""
        jobs = [job for kind in owners.KINDS.values() for job in store.list(kind.resource)[0]]
        for tj in jobs:  # an unfinished one is recorded, with its plan, when it is next reconciled
            c = owners.of(tj).end(tj)
            if c is not None:
                self.seen(tj)
                at = parse_time(c.get("lastTransitionTime"))
                state = names.FAILED if c.get("type") == names.FAILED else names.COMPLETE
                self.history.finished(tj["metadata"]["uid"], at.timestamp() if at else time.time(), state,
                                      c.get("reason", ""), "", c.get("message", ""))
        self.history.deleted_unless({tj["metadata"]["uid"] for tj in jobs}, time.time())
