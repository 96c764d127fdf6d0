"""Kueue's job integrations on the local cluster: one registry of the kinds of job the Kueue controllers
manage, each with how its controller holds or starts it as its Workload says and how it is stopped.

Kueue registers one integration per job kind (`jobframework.RegisterIntegration`) under one generic
reconciler; here the Trainer controller (TrainJobs) and the MPI Operator controller (MPIJobs) register
theirs with the manager, and `queueing.py`, `estimates.py` and the manager reach a Workload's job through
this module, never by naming a kind. What each kind's integration knows without the store (its Workload's
name, its pod sets, where its user suspends it) is `mpijob.api.kueue.owners`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mpijob.api import Obj
from mpijob.api.kueue import owners
from mpijob.api.kueue.owners import JobKind
from mpijob.store.objects import Store


@dataclass(frozen=True)
class Integration:
    kind: JobKind  # its resource, Workload name, pod sets and its user's suspend field
    reconcile: Callable[[Obj], None]  # holds the job while its Workload waits, starts it once admitted
    evict: Callable[[Obj, str], Awaitable[None]]  # stops it whole when Kueue evicts its Workload
    running: Callable[[str], bool]  # whether the job of this uid has a run under way


def owner_job(store: Store, obj: Obj) -> Obj | None:
    """The stored job (of any registered kind) that owns `obj`, a Workload say; None when it is gone."""
    found = owners.owner(obj)
    if found is None:
        return None
    kind, ref = found
    job = store.try_get(kind.resource, obj["metadata"]["namespace"], ref.get("name", ""))
    return job if job is not None and job["metadata"]["uid"] == ref.get("uid", job["metadata"]["uid"]) else None


class Integrations:
    """The registry: kind → its Integration."""

    def __init__(self, *registered: Integration) -> None:
        self.by_kind = {i.kind.kind: i for i in registered}

    def of(self, job: Obj) -> Integration | None:
        return self.by_kind.get(owners.of(job).kind)

    async def evict(self, job: Obj, message: str) -> None:
        """Kueue evicted the job's Workload: its kind's controller stops it."""
        found = self.of(job)
        if found is not None:
            await found.evict(job, message)

    def admitted(self, store: Store, wl: Obj) -> None:
        """An admitted Workload's job starts, unless a run of it is under way already."""
        job = owner_job(store, wl)
        found = self.of(job) if job is not None else None
        if job is not None and found is not None and not found.running(job["metadata"]["uid"]):
            found.reconcile(job)

    def all_jobs(self, store: Store) -> list[tuple[Integration, Obj]]:
        return [(i, job) for i in self.by_kind.values() for job in store.list(i.kind.resource)[0]]
