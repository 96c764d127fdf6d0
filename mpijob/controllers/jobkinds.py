"""The kinds of job the local cluster runs: one registry entry per kind, through which the manager and Kueue's
integrations (`kueue/integrations.py`) reach every job, never by naming a kind.

An entry is the kind's controller (`JobController`): its kind (resource, Workload name, pod sets, where its user
suspends it: `api/kueue/owners.py`), how it reconciles a job, evicts it, stops it when it is deleted, adopts or
fails the runs a previous server left, which runs are under way and which pods' changes it follows. Adding a kind
is its controller's module plus one line in `KINDS` (and its `JobKind` in `api/kueue/owners.py` when Kueue is to
queue it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from mpijob.api import Obj
from mpijob.api.core.errors import ApiError
from mpijob.api.kueue.owners import JobKind
from mpijob.controllers.mpioperator.mpijob import MPIJobController
from mpijob.controllers.trainer.launcher import JobContext
from mpijob.controllers.trainer.runner import JobRunner
from mpijob.controllers.trainer.stops import Stop
from mpijob.controllers.trainer.trainjob import TrainJobController
from mpijob.store.objects import Store

log = logging.getLogger(__name__)


class JobController(Protocol):
    """What the manager asks of one kind's controller."""

    kind: JobKind

    @property
    def runners(self) -> dict[str, tuple[JobRunner, asyncio.Task[None]]]:
        """uid → its run under way."""
        ...

    def reconcile(self, job: Obj) -> None:
        """Hold the job while its Workload waits, start it once admitted, keep its status."""
        ...

    def observe(self, job: Obj, added: bool) -> None:
        """After each reconcile of a stored job: whoever else follows this kind hears of it."""
        ...

    def fail(self, job: Obj, message: str) -> None:
        """End the job as failed, in its kind's words (its reconcile could not start it)."""
        ...

    async def evict(self, job: Obj, message: str) -> None:
        """Kueue evicted its Workload: stop it whole; it runs again once re-admitted."""
        ...

    async def stop(self, uid: str, why: Stop) -> None:
        """Stop a run under way and wait until it is torn down."""
        ...

    async def deleted(self, job: Obj) -> None:
        """The job was deleted: its run stopped, its objects and files gone."""
        ...

    def recover(self) -> None:
        """At start: re-adopt the runs a previous server left, or fail their jobs."""
        ...

    def pod_changed(self, pod: Obj) -> None:
        """A pod changed: keep the status of the job of this kind that owns it (others are ignored)."""
        ...


JobControllerType = Callable[[JobContext], JobController]
KINDS: tuple[JobControllerType, ...] = (TrainJobController, MPIJobController)


class JobKinds:
    """The registry: every kind's controller, in the order they recover and reconcile at start."""

    def __init__(self, store: Store, controllers: Sequence[JobController]) -> None:
        self.store = store
        self.controllers = tuple(controllers)

    @classmethod
    def build(cls, ctx: JobContext, kinds: Sequence[JobControllerType] = KINDS) -> JobKinds:
        return cls(ctx.store, [make(ctx) for make in kinds])

    def __iter__(self) -> Iterator[JobController]:
        return iter(self.controllers)

    def of(self, obj: Obj) -> JobController | None:
        """The controller of `obj`'s kind, when `obj` is a job of a registered kind (and version)."""
        for c in self.controllers:
            resource = c.kind.resource
            if obj.get("kind") == resource.kind and obj.get("apiVersion", resource.api_version) == resource.api_version:
                return c
        return None

    def owner(self, obj: Obj) -> tuple[JobController, str] | None:
        """The controller and uid of the job that owns `obj` (a pod), when a registered kind does."""
        for ref in obj["metadata"].get("ownerReferences") or []:
            c = self.of(ref)
            if c is not None and ref.get("uid"):
                return c, ref["uid"]
        return None

    def runs(self) -> list[JobRunner]:
        """Every run under way, of every kind."""
        return [runner for c in self.controllers for runner, _ in list(c.runners.values())]

    def finished(self, c: JobController, job: Obj) -> bool:
        return c.kind.end(job) is not None

    def reconcile(self, job: Obj, c: JobController | None = None) -> None:
        """Reconcile a job of a registered kind; a reconcile that fails fails the job, in its kind's words."""
        c = c or self.of(job)
        if c is None:
            return
        try:
            c.reconcile(job)
        except Exception as e:
            if isinstance(e, ApiError) and e.reason == "Conflict":  # it changed since this event (a progress
                return  # report, say): the event of its newer version reconciles it
            meta = job["metadata"]
            log.exception("reconcile of %s %s failed", c.kind.kind, meta["name"])
            current = self.store.try_get(c.kind.resource, meta["namespace"], meta["name"])
            if current is not None and not self.finished(c, current):
                c.fail(current, f"the local cluster could not start the job: {e}")
