"""The Kueue controller: runs scheduling cycles over the store and writes their decisions back.

A cycle is `mpijob.api.kueue.scheduler.schedule(build_snapshot(store))` — pure — and this module turns
each decision into what Kueue would write: Workload conditions and admission, Events on the TrainJob,
queue status (the `Active` condition of ClusterQueues and LocalQueues included), and why each pending
workload waits with when it should start (`api/kueue/scheduler/waiting.py`, from `estimates.py`'s reads), in the
`mpijob.io/waiting` and `mpijob.io/estimated-start` annotations every client shows.
Evictions call back into the job's controller (a TrainJob's or an MPIJob's: `integrations.py`), which
stops the whole job. Cycles are coalesced: a
burst of events costs one cycle.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry

from mpijob.api import Obj
from mpijob.api.core import resources
from mpijob.api.core.quantity import from_base_units
from mpijob.api.kueue.adapters import live, stop_policy, workload_name
from mpijob.api.kueue.scheduler import (
    Admit,
    Pending,
    Preempt,
    queue_usage,
    schedule,
    weighted_shares,
)
from mpijob.api.kueue.scheduler import messages as msg
from mpijob.api.kueue.scheduler.admissibility import inactive, local_queue_active
from mpijob.api.kueue.scheduler.waiting import explain
from mpijob.api.kueue.snapshot import Snapshot
from mpijob.api.names import (
    ACTIVE,
    ADMITTED,
    ANNOTATION_CAPACITY,
    EVICTED,
    FINISHED,
    PREEMPTED,
    QUOTA_RESERVED,
    REASON_CLUSTER_QUEUE_STOPPED,
    REASON_LOCAL_QUEUE_STOPPED,
    REASON_PENDING,
    REASON_READY,
    REQUEUED,
)
from mpijob.api.trainer.waiting import Waiting
from mpijob.controllers import conditions as cond
from mpijob.controllers import events
from mpijob.controllers.kueue import estimates
from mpijob.controllers.kueue.integrations import owner_job
from mpijob.controllers.kueue.workloads import build_snapshot, default_objects, stored_version
from mpijob.controllers.metrics.kueue import KueueMetrics
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
COALESCE = 0.005  # seconds a cycle waits for more events to arrive


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


class Queueing:
    def __init__(self, store: Store, evict: Callable[[Obj, str], Awaitable[None]],
                 metrics: KueueMetrics | None = None) -> None:
        self.store = store
        self._evict = evict
        self.metrics = metrics or KueueMetrics(CollectorRegistry())  # Kueue's counters (controllers/metrics)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._said: dict[str, dict[str, str]] = {}  # workload key → why it waits, as last written on it
        self._told: dict[str, str] = {}  # workload key → what held it when its TrainJob was last told (Event)
        # workload key → (reason, message) of the QuotaReserved=False it held at resourceVersion rv, last we saw
        self._held: dict[str, tuple[str, str, int]] = {}
        self.history = estimates.History()  # run times of finished jobs, for the estimates
        self._reports: dict[str, str] = {}  # TrainJob uid → the time of its last progress report

    # -- lifecycle -----------------------------------------------------------------------------

    def ensure_defaults(self, capacity: dict[str, str]) -> None:
        """Create the default flavor and queues; keep the machine-wide queue's quota = capacity."""
        for res, obj in default_objects(capacity):
            meta = obj["metadata"]
            current = self.store.try_get(res, meta.get("namespace", ""), meta["name"])
            if current is None:
                self.store.create(res, obj, meta.get("namespace", ""))
            elif (current["metadata"].get("annotations") or {}).get(ANNOTATION_CAPACITY) == "machine" \
                    and current.get("spec") != obj["spec"]:
                current["spec"] = obj["spec"]
                self.store.update(res, current)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())
        self.kick()

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def kick(self) -> None:
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(COALESCE)
            self._wake.clear()
            try:
                await self.cycle()
            except Exception:
                log.exception("scheduling cycle failed")

    # -- one cycle -----------------------------------------------------------------------------

    async def cycle(self) -> Snapshot:
        snap = build_snapshot(self.store)
        waiting: dict[str, Pending] = {}
        for decision in schedule(snap):
            if isinstance(decision, Admit):
                self._admit(decision)
            elif isinstance(decision, Preempt):
                await self._preempt(decision, snap)
            elif isinstance(decision, Pending):
                self._pending(decision)
                waiting[decision.workload] = decision
        after = build_snapshot(self.store)
        self._queue_status(after)
        self._explain(after, waiting)
        return snap

    def _workload(self, key: str) -> Obj | None:
        ns, name = _split(key)
        return self.store.try_get(resources.WORKLOADS, ns, name)

    def _owner(self, wl: Obj) -> Obj | None:
        """The Workload's job, whatever its kind (`integrations.py`)."""
        return owner_job(self.store, wl)

    def _admit(self, d: Admit) -> None:
        wl = self._workload(d.workload)
        if wl is None or not live(wl):
            return
        self.metrics.admitted(wl, d.cluster_queue, time.time())
        wl.setdefault("status", {})["admission"] = d.assignment.to_api(d.cluster_queue)
        cond.set_condition(wl, QUOTA_RESERVED, True, QUOTA_RESERVED,
                           f"Quota reserved in ClusterQueue {d.cluster_queue}")
        cond.set_condition(wl, ADMITTED, True, ADMITTED, "The workload is admitted")
        for kind in (EVICTED, PREEMPTED):
            if cond.get(wl, kind):
                cond.set_condition(wl, kind, False, QUOTA_RESERVED, "The workload has quota reserved")
        self.store.update(resources.WORKLOADS, wl, status=True)
        self._annotate(d.workload, None)
        if (tj := self._owner(wl)) is not None:
            events.record(self.store, tj, ADMITTED,
                          f"Admitted by ClusterQueue {d.cluster_queue}: quota reserved, the job starts")

    async def _preempt(self, d: Preempt, snap: Snapshot) -> None:
        wl = self._workload(d.workload)
        if wl is None:
            return
        held = wl.setdefault("status", {}).pop("admission", None) or {}
        stopped = d.reason in (REASON_CLUSTER_QUEUE_STOPPED, REASON_LOCAL_QUEUE_STOPPED)  # evicted, not preempted
        why = d.reason if stopped else PREEMPTED
        cond.set_condition(wl, EVICTED, True, why, d.message)
        if not stopped:
            cond.set_condition(wl, PREEMPTED, True, d.reason, d.message)
        cond.set_condition(wl, QUOTA_RESERVED, False, why, d.message)
        cond.set_condition(wl, ADMITTED, False, why, d.message)
        cond.set_condition(wl, REQUEUED, True, why, d.message)
        self.store.update(resources.WORKLOADS, wl, status=True)
        if held:
            self.metrics.evicted(wl, held.get("clusterQueue", ""), why)
        if not stopped:
            by_cq = next((w.cluster_queue for w in snap.workloads if w.key == d.by), "")
            self.metrics.preempted(by_cq, d.reason)
        tj = self._owner(wl)
        if tj is not None:
            by = f"; preempted by workload {d.by}" if d.by else ""
            events.record(self.store, tj, why, f"{d.message}{by}", warning=True)
            await self._evict(tj, d.message)

    def _pending(self, d: Pending) -> None:
        """Why it waits, in its QuotaReserved=False condition. A Workload unchanged since it last held the same
        condition is not read again: each cycle would read every pending one (a thousand: 30 ms) to change none."""
        # An empty message: Kueue did not look at it this cycle (behind a StrictFIFO head); keep the last.
        if not d.message or self._held.get(d.workload) == (d.reason, d.message, stored_version(self.store, d.workload)):
            return
        wl = self._workload(d.workload)
        if wl is None:
            return
        if cond.set_condition(wl, QUOTA_RESERVED, False, d.reason, d.message):
            wl = self.store.update(resources.WORKLOADS, wl, status=True)
        self._held[d.workload] = (d.reason, d.message, int(wl["metadata"]["resourceVersion"]))

    def _explain(self, snap: Snapshot, waiting: dict[str, Pending]) -> None:
        """Why each workload the cycle left pending waits, on it for every client, and in an Event on its
        TrainJob when what holds it changes (quota, a stopped queue, a preemption...: the decision's
        reason), not at each move of the numbers or of its place in line."""
        for key in (self._said.keys() | self._told.keys() | self._held.keys()) - {w.key for w in snap.workloads}:
            self._said.pop(key, None)  # gone or inactive
            self._told.pop(key, None)
            self._held.pop(key, None)
        if not waiting:
            return
        now = time.time()
        for key, why in explain(snap, waiting, estimates.timing(self.store, snap, self.history), now).items():
            self._annotate(key, why, now)
            held = f"{waiting[key].reason}{'/never' if waiting[key].never_fits else ''}"
            if self._told.get(key) != held:
                self._told[key] = held
                if (wl := self._workload(key)) is not None and (tj := self._owner(wl)) is not None:
                    events.record(self.store, tj, REASON_PENDING, why.sentence())

    def _annotate(self, key: str, waiting: Waiting | None, now: float | None = None) -> None:
        """Why the Workload waits (None: it does not), in its annotations, where every client reads it.
        What was last written is remembered, so a cycle that has nothing new to say reads no Workload."""
        now = time.time() if now is None else now
        said = self._said.get(key)
        if said is not None and not estimates.restate({"metadata": {"annotations": dict(said)}}, waiting, now):
            return
        wl = self._workload(key)
        if wl is not None and estimates.restate(wl, waiting, now):
            wl = self.store.update(resources.WORKLOADS, wl)
        if wl is None or waiting is None:
            self._said.pop(key, None)
            self._told.pop(key, None)
        else:
            self._said[key] = estimates.said(wl)

    # -- what the estimates are made of ----------------------------------------------------------

    def trainjob_changed(self, tj: Obj) -> None:
        """A finished job joins the run-time history; a new progress report from a running one may move
        the estimates of the jobs that wait, so it asks for a cycle (only when some wait)."""
        uid = tj["metadata"].get("uid", "")
        if cond.finished(tj):
            self._reports.pop(uid, None)
            self.history.observe(tj, self.store.try_get(resources.WORKLOADS, tj["metadata"]["namespace"],
                                                        workload_name(tj)))
            return
        reported = ((tj.get("status") or {}).get("trainerStatus") or {}).get("lastUpdatedTime")
        if reported and self._reports.get(uid) != reported:
            self._reports[uid] = reported
            if self._said:
                self.kick()

    def workload_changed(self, wl: Obj) -> None:
        """A Workload that is neither active nor finished waits for someone to activate it: say so."""
        if live(wl) or cond.is_true(wl, FINISHED) or cond.is_true(wl, QUOTA_RESERVED):
            return
        self._annotate(f"{wl['metadata']['namespace']}/{wl['metadata']['name']}", estimates.inactive(self._owner(wl)))

    # -- queue status --------------------------------------------------------------------------

    def _queue_status(self, snap: Snapshot) -> None:
        usage = queue_usage(snap)
        shares = weighted_shares(snap)
        for name, cq in snap.cluster_queues.items():
            obj = self.store.try_get(resources.CLUSTER_QUEUES, "", name)
            if obj is None:
                continue
            mine = [w for w in snap.workloads if w.cluster_queue == name]
            admitted = sum(1 for w in mine if w.admission)
            flavors: dict[str, list[Obj]] = {}
            for group in cq.groups:
                for fq in group.flavors:
                    for q in fq.resources:
                        total, borrowed = usage.get(name, {}).get((fq.name, q.name), (0, 0))
                        flavors.setdefault(fq.name, []).append(
                            {"name": q.name, "total": from_base_units(q.name, total),
                             "borrowed": from_base_units(q.name, borrowed)})
            flavor_usage = [{"name": f, "resources": res} for f, res in flavors.items()]
            status = copy.deepcopy(obj.get("status") or {})  # conditions change in place: compare to the old
            status.update(
                pendingWorkloads=len(mine) - admitted,
                reservingWorkloads=admitted,
                admittedWorkloads=admitted,
                flavorsReservation=flavor_usage,
                flavorsUsage=flavor_usage,
                fairSharing={"weightedShare": shares.get(name, 0)},
            )
            new = {**obj, "status": status}
            state = inactive(snap, cq)
            cond.set_condition(new, ACTIVE, state is None, state.reason if state else REASON_READY,
                               state.message if state else msg.CAN_ADMIT)
            if new["status"] != obj.get("status"):
                self.store.update(resources.CLUSTER_QUEUES, new, status=True)
        for lq in self.store.list(resources.LOCAL_QUEUES)[0]:
            ns, name = lq["metadata"]["namespace"], lq["metadata"]["name"]
            mine = [w for w in snap.workloads if w.namespace == ns and w.local_queue == name]
            admitted = sum(1 for w in mine if w.admission)
            status = {**copy.deepcopy(lq.get("status") or {}), "pendingWorkloads": len(mine) - admitted,
                      "reservingWorkloads": admitted, "admittedWorkloads": admitted}
            new = {**lq, "status": status}
            pointed = (lq.get("spec") or {}).get("clusterQueue", "")
            cond.set_condition(new, ACTIVE, *local_queue_active(snap, pointed, stop_policy(lq)))
            if status != lq.get("status"):
                self.store.update(resources.LOCAL_QUEUES, new, status=True)

