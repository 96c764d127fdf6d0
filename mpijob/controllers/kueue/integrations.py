"""Kueue's job integrations on the local cluster: how the Kueue controllers reach a Workload's job and its
kind's controller, which holds or starts the job as its Workload says and stops it when Kueue evicts it.

Kueue registers one integration per job kind (`jobframework.RegisterIntegration`) under one generic
reconciler; here each kind's controller is one entry of the registry in `controllers/jobkinds.py`, and
`queueing.py`, `estimates.py` and the manager reach a Workload's job through this module, never by naming a
kind. What each kind's integration knows without the store (its Workload's name, its pod sets, where its user
suspends it) is `mpijob.api.kueue.owners`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpijob.api import Obj
from mpijob.api.kueue import owners
from mpijob.store.objects import Store

if TYPE_CHECKING:
    from mpijob.controllers.jobkinds import JobKinds


def owner_job(store: Store, obj: Obj) -> Obj | None:
    """The stored job (of any registered kind) that owns `obj`, a Workload say; None when it is gone."""
    found = owners.owner(obj)
    if found is None:
        return None
    kind, ref = found
    job = store.try_get(kind.resource, obj["metadata"]["namespace"], ref.get("name", ""))
    return job if job is not None and job["metadata"]["uid"] == ref.get("uid", job["metadata"]["uid"]) else None


class Integrations:
    """Kueue's side of the registry: a Workload's verdicts reach its job's controller."""

    def __init__(self, kinds: JobKinds) -> None:
        self.kinds = kinds

    async def evict(self, job: Obj, message: str) -> None:
        """Kueue evicted the job's Workload: its kind's controller stops it."""
        found = self.kinds.of(job)
        if found is not None:
            await found.evict(job, message)

    def admitted(self, store: Store, wl: Obj) -> None:
        """An admitted Workload's job starts, unless a run of it is under way already."""
        job = owner_job(store, wl)
        found = self.kinds.of(job) if job is not None else None
        if job is not None and found is not None and job["metadata"]["uid"] not in found.runners:
            self.kinds.reconcile(job, found)
