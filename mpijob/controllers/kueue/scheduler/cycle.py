"""One scheduling cycle: Kueue's scheduler loop, run to completion over a snapshot.

Kueue takes one head per ClusterQueue per cycle; here a cycle runs such rounds until every queue is
exhausted or blocked, so one call decides everything the current state allows. Within a round the heads
are ordered as Kueue orders them (non-borrowing first, priority, FIFO; with fair sharing, the lowest
dominant resource share first), and each decision is charged to the ledger before the next head is
processed. A preemptor reserves its quota for the rest of the cycle and its victims keep theirs until
they are gone, so nothing is double-booked; it is admitted in a later cycle. A later preemptor plans as
if earlier victims were gone (Kueue's overlap recompute) and never picks them again.

Fair sharing is Kueue-wide configuration. `schedule(snap)` turns it on when any ClusterQueue has a
fairSharing weight other than 1; pass `fair_sharing=True/False` to decide explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpijob.controllers.kueue.scheduler import fairsharing as fs
from mpijob.controllers.kueue.scheduler import messages as msg
from mpijob.controllers.kueue.scheduler.admissibility import blocker, inactive
from mpijob.controllers.kueue.scheduler.decisions import Admit, Decision, Pending, Preempt
from mpijob.controllers.kueue.scheduler.fairsharing import weighted_shares
from mpijob.controllers.kueue.scheduler.flavors import (
    NO_CANDIDATES,
    NO_FIT,
    PREEMPT,
    RECLAIM,
    WAITING_FOR_QUOTA,
    Assigner,
    FlavorResult,
)
from mpijob.controllers.kueue.scheduler.limits import never_fits, queue_usage
from mpijob.controllers.kueue.scheduler.ordering import evicted, pending_by_queue, positions
from mpijob.controllers.kueue.scheduler.preemption import Preemptor, Target
from mpijob.controllers.kueue.scheduler.quota import FR, Ledger, usage_of
from mpijob.controllers.kueue.scheduler.snapshot import ClusterQueue, Snapshot, Workload

__all__ = ["Admit", "Decision", "Pending", "Preempt", "never_fits", "positions", "queue_usage", "schedule",
           "weighted_shares"]

DEFERRED = ("Workload has overlapping preemption targets with another workload, but will fit after these "
            "preemptions complete")


@dataclass
class _Queue:
    cq: ClusterQueue
    pending: list[Workload]
    at: int = 0


@dataclass
class _Entry:
    wl: Workload
    queue: _Queue
    result: FlavorResult | None  # None: a workload of the same shape was already found hopeless
    targets: list[Target]
    version: int  # the ledger version it was computed against


def _shape(wl: Workload) -> tuple:
    return tuple((ps.name, ps.count, tuple(sorted(ps.requests.items()))) for ps in wl.pod_sets)


class _Cycle:
    def __init__(self, snap: Snapshot, fair: bool) -> None:
        self.snap, self.fair = snap, fair
        self.ledger = Ledger(snap)
        admitted: dict[str, list[Workload]] = {}
        for wl in snap.workloads:
            if wl.admission is not None and wl.cluster_queue in snap.cluster_queues:
                admitted.setdefault(wl.cluster_queue, []).append(wl)
        self.admitted = admitted
        # Kueue leaves inactive queues out of its scheduling snapshot: they admit nothing and their
        # workloads are nobody's preemption candidates (their quota and usage still count in the cohort)
        self.inactive = {name for name, cq in snap.cluster_queues.items() if inactive(snap, cq) is not None}
        self.victims: dict[str, Workload] = {}  # chosen this cycle; still hold quota
        candidates = {name: wls for name, wls in admitted.items() if name not in self.inactive}
        self.preemptor = Preemptor(self.ledger, candidates, fair, exclude=self.victims.keys())
        self.version = 0  # bumped whenever the ledger changes
        # (queue, shape, priority) → the Pending of a workload that could neither fit nor preempt.
        # Later ones of the same shape and no higher priority cannot do better in this cycle.
        self.hopeless: dict[tuple, Pending] = {}
        self.out: list[Decision] = []

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> list[Decision]:
        self._drain()
        queues: dict[str, _Queue] = {}
        for name, wls in sorted(pending_by_queue(self.snap).items()):
            cq = self.snap.cluster_queues.get(name) if name else None
            if cq is None or name in self.inactive:
                for wl in wls:  # the whole queue is blocked: LocalQueue/ClusterQueue missing, stopped, inactive
                    reason, message, human = blocker(self.snap, wl) or (msg.PENDING, "", "")
                    self.out.append(Pending(wl.key, message, human, reason=reason))
                continue
            queues[name] = _Queue(cq, wls)
        while queues:
            heads = [e for q in list(queues.values()) if (e := self._head(q, queues)) is not None]
            if not self.fair:
                heads.sort(key=lambda e: (e.result is not None and e.result.borrows, -e.wl.priority,
                                          e.wl.created, e.wl.key))
                for entry in heads:
                    self._process(entry, queues)
                continue
            by_cohort: dict[str, list[_Entry]] = {}
            for entry in sorted(heads, key=lambda e: e.wl.key):
                by_cohort.setdefault(entry.queue.cq.cohort or "", []).append(entry)
            for cohort, entries in sorted(by_cohort.items()):
                while entries:  # shares change with every decision: pick the next head lazily
                    entry = min(entries, key=self._fair_key) if cohort else entries[0]
                    entries.remove(entry)
                    self._process(entry, queues)
        return self.out

    def _fair_key(self, e: _Entry) -> tuple:
        """Kueue's fair-sharing tournament: not borrowing on what it requests first, then the lowest
        share after admission, then priority, then FIFO."""
        usage = e.result.usage if e.result is not None else {}
        drs = fs.share(self.ledger, e.queue.cq.name, usage)
        borrowing_on = any(fr in drs.borrowed for fr, v in usage.items() if v > 0)
        weighted = drs.ratio if drs.zero_weight_borrows else drs.weighted()
        return (borrowing_on, drs.zero_weight_borrows, weighted, -e.wl.priority, e.wl.created, e.wl.key)

    def _drain(self) -> None:
        """HoldAndDrain: evict what a stopped ClusterQueue, or a stopped LocalQueue, has admitted (once)."""
        drained: set[str] = set()
        for name in sorted(self.snap.cluster_queues):
            if self.snap.cluster_queues[name].stop_policy != "HoldAndDrain":
                continue
            for wl in sorted(self.admitted.get(name, []), key=lambda w: w.key):
                if not evicted(wl):
                    self.out.append(Preempt(wl.key, "", "", msg.EVICTED_BY_CQ_STOPPED, msg.CLUSTER_QUEUE_STOPPED))
                    drained.add(wl.key)
        for wl in sorted(self.snap.workloads, key=lambda w: w.key):
            stop = self.snap.local_queue_stops.get((wl.namespace, wl.local_queue))
            if wl.admission is not None and stop == "HoldAndDrain" and wl.key not in drained and not evicted(wl):
                self.out.append(Preempt(wl.key, "", "", msg.EVICTED_BY_LQ_STOPPED, msg.LOCAL_QUEUE_STOPPED))
                if wl.cluster_queue in self.snap.cluster_queues:
                    # its queue may be active: it keeps its quota until gone, and is nobody's preemption target
                    self.victims[wl.key] = wl

    def _head(self, q: _Queue, queues: dict[str, _Queue]) -> _Entry | None:
        while q.at < len(q.pending):
            wl = q.pending[q.at]
            block = blocker(self.snap, wl)
            if block is None:
                return self._nominate(wl, q)
            reason, message, human = block
            self.out.append(Pending(wl.key, message, human, reason=reason))
            q.at += 1  # a namespace mismatch steps aside even in StrictFIFO, as in Kueue
        del queues[q.cq.name]
        return None

    # -- nomination: flavors and preemption targets ------------------------------------------------

    def _nominate(self, wl: Workload, q: _Queue) -> _Entry:
        """Assign flavors as if this cycle's victims were already gone (they are never chosen twice)."""
        if (q.cq.name, _shape(wl), wl.priority) in self.hopeless:
            return _Entry(wl, q, None, [], self.version)
        for v in self.victims.values():
            self.ledger.remove(v.cluster_queue, usage_of(v))
        try:
            cq = q.cq
            result = Assigner(self.ledger, cq, self.snap.flavors, self._oracle(wl, cq), self.fair).assign(wl)
            targets = []
            if result.mode == PREEMPT:
                targets = self.preemptor.targets(wl, cq, result.usage, result.need_preemption)
        finally:
            for v in self.victims.values():
                self.ledger.add(v.cluster_queue, usage_of(v))
        return _Entry(wl, q, result, targets, self.version)

    def _oracle(self, wl: Workload, cq: ClusterQueue):
        def oracle(fr: FR, amount: int) -> tuple[int, int]:
            """Kueue's preemption oracle: could evicting others make `amount` of `fr` fit?"""
            targets = self.preemptor.targets(wl, cq, {fr: amount}, {fr})
            if not targets:
                return NO_CANDIDATES, self.ledger.borrow_height(cq.name, fr, amount)[0]
            for t in targets:
                self.ledger.remove(t.workload.cluster_queue, usage_of(t.workload))
            borrow = self.ledger.borrow_height(cq.name, fr, amount)[0]
            for t in targets:
                self.ledger.add(t.workload.cluster_queue, usage_of(t.workload))
            return (PREEMPT if any(t.workload.cluster_queue == cq.name for t in targets) else RECLAIM), borrow

        return oracle

    # -- one entry ---------------------------------------------------------------------------------

    def _process(self, entry: _Entry, queues: dict[str, _Queue]) -> None:
        q = entry.queue
        if q.cq.name not in queues:
            return
        if entry.version != self.version:  # something was decided since: look again (Kueue's recompute)
            entry = self._nominate(entry.wl, q)
        wl, res = entry.wl, entry.result
        memo = (q.cq.name, _shape(wl), wl.priority)
        if res is None:
            first = self.hopeless[memo]
            self.out.append(Pending(wl.key, first.message, first.human, first.never_fits, first.reason))
            return self._step_aside(q, wl, queues)
        if res.mode == NO_FIT or (res.mode == PREEMPT and not entry.targets):
            never = res.mode == NO_FIT and never_fits(self.snap, wl) is not None
            self.hopeless[memo] = self._pending(entry, never, res.reason if res.mode == NO_FIT else WAITING_FOR_QUOTA)
            return self._step_aside(q, wl, queues)
        self.version += 1
        if entry.targets:
            self.ledger.add(q.cq.name, res.usage)
            self._preempt(entry)
            return self._step_aside(q, wl, queues)
        if not self.ledger.fits(q.cq.name, res.usage):
            # fits only once this cycle's victims are gone: keep the room, admit later
            self.ledger.add(q.cq.name, res.usage)
            self.out.append(Pending(wl.key, DEFERRED, f"Waiting for preempted workloads to stop in ClusterQueue "
                                                      f"{q.cq.name}; it fits once they have",
                                    reason=msg.WAITING_FOR_PREEMPTED))
            return self._step_aside(q, wl, queues)
        self.ledger.add(q.cq.name, res.usage)
        self.out.append(Admit(wl.key, q.cq.name, res.assignment()))
        q.at += 1

    def _preempt(self, entry: _Entry) -> None:
        wl, cq = entry.wl, entry.queue.cq
        path = msg.cq_path(cq.name, cq.cohort)
        for t in entry.targets:
            self.victims[t.workload.key] = t.workload
            if evicted(t.workload):
                continue  # already on its way out: Kueue does not evict twice
            victim_cq = self.snap.cluster_queues[t.workload.cluster_queue]
            text = msg.preempted(wl.uid, getattr(wl, "job_uid", ""), t.reason, path,
                                 msg.cq_path(victim_cq.name, victim_cq.cohort))
            self.out.append(Preempt(t.workload.key, wl.key, wl.uid, t.reason, text))
        n = len(entry.targets)
        assert entry.result is not None
        human = f"Preempting {n} workload(s) to make room in ClusterQueue {cq.name}; starts once they have stopped"
        self.out.append(Pending(wl.key, msg.pending_preemption(entry.result.message, n), human,
                                reason=msg.WAITING_FOR_PREEMPTED))

    def _pending(self, entry: _Entry, never: bool, reason: str) -> Pending:
        res, cq = entry.result, entry.queue.cq
        assert res is not None
        short = res.shortfall
        if short is not None and not short.uncovered:
            human = msg.waiting_for_quota(short.resource, short.requested, short.available, cq.name)
        elif short is not None:
            human = f"ClusterQueue {cq.name} has no quota for {short.resource}"
        else:
            human = res.message
        p = Pending(entry.wl.key, res.message, human, never_fits=never, reason=reason)
        self.out.append(p)
        return p

    def _step_aside(self, q: _Queue, wl: Workload, queues: dict[str, _Queue]) -> None:
        q.at += 1
        if q.cq.strategy != "StrictFIFO":
            return
        for i, behind in enumerate(q.pending[q.at:], start=q.at):
            self.out.append(Pending(behind.key, "", f"Waiting behind {wl.key} in StrictFIFO ClusterQueue "
                                                    f"{q.cq.name} (position {i})"))
        q.at = len(q.pending)
        queues.pop(q.cq.name, None)


def schedule(snap: Snapshot, *, fair_sharing: bool | None = None) -> list[Decision]:
    """One cycle. Admit what fits (all pod sets or nothing), preempt where policies allow, and say why
    everything else waits. Deterministic for a given snapshot."""
    return _Cycle(snap, fs.enabled(snap) if fair_sharing is None else fair_sharing).run()
