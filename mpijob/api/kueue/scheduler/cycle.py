"""One scheduling cycle: Kueue's scheduler loop, run to completion over a snapshot.

Kueue takes one head per ClusterQueue per cycle; here a cycle runs such rounds until every queue is
exhausted or blocked, so one call decides everything the current state allows. Within a round the heads
are ordered as Kueue orders them (non-borrowing first, priority, FIFO; with fair sharing, the lowest
dominant resource share first), and each decision is charged to the ledger before the next head is
processed. A preemptor reserves its quota for the rest of the cycle and its victims keep theirs until
they are gone, so nothing is double-booked; it is admitted in a later cycle. A later preemptor plans as
if earlier victims were gone (Kueue's overlap recompute) and never picks them again.

Like Kueue, a cycle does not recompute what did not change. Between two decisions the quota ledger is
fixed (its `version`), so what a workload's nomination depends on — its pod sets, its priority, and,
under `LowerOrNewerEqualPriority`, which equal-priority workloads are newer — decides it: a shape that
could neither fit nor preempt stays hopeless for the cycle, and the preemption oracle's answers are
reused until the next decision. Thousands of pending workloads of a few shapes cost a few assignments.

Fair sharing is Kueue-wide configuration. `schedule(snap)` turns it on when any ClusterQueue has a
fairSharing weight other than 1; pass `fair_sharing=True/False` to decide explicitly.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from enum import Enum, auto

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.fit import never_fits
from mpijob.api.kueue.flavors import Assigner, FlavorResult, Mode, Oracle
from mpijob.api.kueue.ledger import FR, Ledger, Usage, usage_of
from mpijob.api.kueue.scheduler import fairsharing as fs
from mpijob.api.kueue.scheduler.admissibility import Blockers
from mpijob.api.kueue.scheduler.decisions import Admit, Decision, Pending, Preempt
from mpijob.api.kueue.scheduler.fairsharing import weighted_shares
from mpijob.api.kueue.scheduler.limits import queue_usage
from mpijob.api.kueue.scheduler.ordering import pending_by_queue, positions
from mpijob.api.kueue.scheduler.preemption import Preemptor, Target
from mpijob.api.kueue.snapshot import (
    ClusterQueue,
    PreemptionPolicy,
    QueueingStrategy,
    Snapshot,
    StopPolicy,
    Workload,
)
from mpijob.api.names import (
    REASON_CLUSTER_QUEUE_STOPPED,
    REASON_LOCAL_QUEUE_STOPPED,
    REASON_PENDING,
    REASON_WAITING_FOR_PREEMPTED,
    REASON_WAITING_FOR_QUOTA,
)

__all__ = ["Admit", "Decision", "Pending", "Preempt", "never_fits", "positions", "queue_usage", "schedule",
           "weighted_shares"]


@dataclass
class _Queue:
    cq: ClusterQueue
    pending: list[Workload]
    at: int = 0


class _Status(Enum):
    """What a head's nomination found."""

    NOMINATED = auto()  # flavors assigned (and preemption targets found) against the ledger at `version`
    HOPELESS = auto()  # one of the same queue, shape and priority could neither fit nor preempt this cycle


@dataclass
class _Entry:
    wl: Workload
    queue: _Queue
    status: _Status
    result: FlavorResult | None  # set when NOMINATED
    targets: list[Target]
    version: int  # the ledger version it was nominated against; stale once a decision changed it


class _Cycle:
    def __init__(self, snap: Snapshot, fair: bool) -> None:
        self.snap, self.fair = snap, fair
        self.ledger = Ledger(snap)  # what is charged: admissions, preemptors' reservations, victims until gone
        self.plan = Ledger(snap)  # the same without this cycle's victims: what nominations plan against
        self.blockers = Blockers(snap)
        admitted: dict[str, list[Workload]] = {}
        for wl in snap.workloads:
            if wl.admission is not None and wl.cluster_queue in snap.cluster_queues:
                admitted.setdefault(wl.cluster_queue, []).append(wl)
        self.admitted = admitted
        # Kueue leaves inactive queues out of its scheduling snapshot: they admit nothing and their
        # workloads are nobody's preemption candidates (their quota and usage still count in the cohort)
        self.inactive = {name for name, cq in snap.cluster_queues.items() if self.blockers.inactive(cq) is not None}
        self.victims: dict[str, Workload] = {}  # chosen this cycle; still hold quota (see _add_victim)
        candidates = {name: wls for name, wls in admitted.items() if name not in self.inactive}
        self.preemptor = Preemptor(self.plan, candidates, fair, exclude=self.victims.keys())
        self.version = 0  # bumped whenever a decision changes the ledger or the victims
        # (queue, shape, priority) → the Pending of a workload that could neither fit nor preempt.
        # Later ones of the same shape and no higher priority cannot do better in this cycle.
        self.hopeless: dict[tuple, Pending] = {}
        self._oracle_answers: dict[tuple, tuple[Mode, int]] = {}  # valid for `_answers_version` only
        self._targets: dict[tuple, list[Target]] = {}
        self._fits: dict[tuple, dict] = {}  # (queue, preemptor key) → Assigner answers
        self._answers_version = 0
        self._created: dict[tuple[str, int], list[str]] = {}  # (queue, priority) → admitted creation times
        self._empty_ledger: Ledger | None = None
        self.out: list[Decision] = []

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> list[Decision]:
        self._drain()
        queues: dict[str, _Queue] = {}
        for name, wls in sorted(pending_by_queue(self.snap).items()):
            cq = self.snap.cluster_queues.get(name) if name else None
            if cq is None or name in self.inactive:
                for wl in wls:  # the whole queue is blocked: LocalQueue/ClusterQueue missing, stopped, inactive
                    reason, message, human = self.blockers(wl) or (REASON_PENDING, "", "")
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
        """HoldAndDrain: evict what a stopped ClusterQueue, or a stopped LocalQueue, has admitted."""
        drained: set[str] = set()
        for name in sorted(self.snap.cluster_queues):
            if self.snap.cluster_queues[name].stop_policy != StopPolicy.HOLD_AND_DRAIN:
                continue
            for wl in sorted(self.admitted.get(name, []), key=lambda w: w.key):
                self.out.append(Preempt(wl.key, "", "", REASON_CLUSTER_QUEUE_STOPPED, msg.CLUSTER_QUEUE_STOPPED))
                drained.add(wl.key)
        for wl in sorted(self.snap.workloads, key=lambda w: w.key):
            stop = self.snap.local_queue_stops.get((wl.namespace, wl.local_queue))
            if wl.admission is not None and stop == StopPolicy.HOLD_AND_DRAIN and wl.key not in drained:
                self.out.append(Preempt(wl.key, "", "", REASON_LOCAL_QUEUE_STOPPED, msg.LOCAL_QUEUE_STOPPED))
                if wl.cluster_queue in self.snap.cluster_queues:
                    # its queue may be active: it keeps its quota until gone, and is nobody's preemption target
                    self._add_victim(wl)

    def _head(self, q: _Queue, queues: dict[str, _Queue]) -> _Entry | None:
        best_effort = q.cq.strategy != QueueingStrategy.STRICT_FIFO
        while q.at < len(q.pending):
            wl = q.pending[q.at]
            block = self.blockers(wl)
            if block is None:
                first = self.hopeless.get((q.cq.name, wl.shape, wl.priority)) if best_effort else None
                if first is None:
                    return self._nominate(wl, q)
                # it would step aside without touching the ledger: say so now, not in a round of its own
                self.out.append(Pending(wl.key, first.message, first.human, first.never_fits, first.reason))
                q.at += 1
                continue
            reason, message, human = block
            self.out.append(Pending(wl.key, message, human, reason=reason))
            q.at += 1  # a namespace mismatch steps aside even in StrictFIFO, as in Kueue
        del queues[q.cq.name]
        return None

    # -- the two ledgers -----------------------------------------------------------------------------

    def _add_victim(self, wl: Workload) -> None:
        """A victim keeps its quota until it is gone, but later nominations plan as if it were gone
        already (Kueue's overlap recompute) and never pick it again."""
        self.victims[wl.key] = wl
        self.plan.remove(wl.cluster_queue, usage_of(wl))

    def _charge(self, cq: str, usage: Usage) -> None:
        self.ledger.add(cq, usage)
        self.plan.add(cq, usage)

    def _preemptor_key(self, wl: Workload, cq: ClusterQueue) -> tuple:
        """What of `wl` its preemption targets depend on: its priority, and under
        LowerOrNewerEqualPriority which of the equal-priority admitted workloads are newer."""
        if cq.reclaim_within_cohort == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
            return (wl.priority, wl.created)  # not a value Kueue allows there; no sharing
        if cq.within_cluster_queue != PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
            return (wl.priority, 0)
        created = self._created.get((cq.name, wl.priority))
        if created is None:
            created = sorted(w.created for w in self.admitted.get(cq.name, []) if w.priority == wl.priority)
            self._created[(cq.name, wl.priority)] = created
        return (wl.priority, bisect_right(created, wl.created))

    def _answers(self) -> None:
        """Forget oracle answers and targets computed against an older ledger."""
        if self._answers_version != self.version:
            self._oracle_answers.clear()
            self._targets.clear()
            self._fits.clear()
            self.preemptor.forget()
            self._answers_version = self.version

    def _find_targets(self, wl: Workload, cq: ClusterQueue, usage: Usage, need: set[FR]) -> list[Target]:
        self._answers()
        alike = self._preemptor_key(wl, cq)
        key = (cq.name, alike, tuple(sorted(usage.items())), tuple(sorted(need)))
        found = self._targets.get(key)
        if found is None:
            found = self._targets[key] = self.preemptor.targets(wl, cq, usage, need, alike)
        return found

    # -- nomination: flavors and preemption targets ------------------------------------------------

    def _nominate(self, wl: Workload, q: _Queue) -> _Entry:
        """Assign flavors as if this cycle's victims were already gone (they are never chosen twice)."""
        if (q.cq.name, wl.shape, wl.priority) in self.hopeless:
            return _Entry(wl, q, _Status.HOPELESS, None, [], self.version)
        cq = q.cq
        self._answers()
        fits = self._fits.setdefault((cq.name, self._preemptor_key(wl, cq)), {})
        result = Assigner(self.plan, cq, self.snap.flavors, self._oracle(wl, cq), self.fair, fits).assign(wl)
        targets = []
        if result.mode == Mode.PREEMPT:
            targets = self._find_targets(wl, cq, result.usage, result.need_preemption)
        return _Entry(wl, q, _Status.NOMINATED, result, targets, self.version)

    def _oracle(self, wl: Workload, cq: ClusterQueue) -> Oracle:
        def oracle(fr: FR, amount: int) -> tuple[Mode, int]:
            """Kueue's preemption oracle: could evicting others make `amount` of `fr` fit?"""
            self._answers()
            key = (cq.name, self._preemptor_key(wl, cq), fr, amount)
            answer = self._oracle_answers.get(key)
            if answer is None:
                answer = self._oracle_answers[key] = self._ask_oracle(wl, cq, fr, amount)
            return answer

        return oracle

    def _ask_oracle(self, wl: Workload, cq: ClusterQueue, fr: FR, amount: int) -> tuple[Mode, int]:
        targets = self._find_targets(wl, cq, {fr: amount}, {fr})
        if not targets:
            return Mode.NO_CANDIDATES, self.plan.borrow_height(cq.name, fr, amount)[0]
        for t in targets:
            self.plan.remove(t.workload.cluster_queue, usage_of(t.workload))
        borrow = self.plan.borrow_height(cq.name, fr, amount)[0]
        for t in targets:
            self.plan.add(t.workload.cluster_queue, usage_of(t.workload))
        return (Mode.PREEMPT if any(t.workload.cluster_queue == cq.name for t in targets) else Mode.RECLAIM), borrow

    # -- one entry ---------------------------------------------------------------------------------

    def _process(self, entry: _Entry, queues: dict[str, _Queue]) -> None:
        q = entry.queue
        if q.cq.name not in queues:
            return
        if entry.version != self.version:  # something was decided since: look again (Kueue's recompute)
            entry = self._nominate(entry.wl, q)
        wl, res = entry.wl, entry.result
        memo = (q.cq.name, wl.shape, wl.priority)
        if entry.status is _Status.HOPELESS:
            first = self.hopeless[memo]
            self.out.append(Pending(wl.key, first.message, first.human, first.never_fits, first.reason))
            return self._step_aside(q, wl, queues)
        assert res is not None
        if res.mode == Mode.NO_FIT or (res.mode == Mode.PREEMPT and not entry.targets):
            never = res.mode == Mode.NO_FIT and self._never_fits(wl)
            reason = res.reason if res.mode == Mode.NO_FIT else REASON_WAITING_FOR_QUOTA
            self.hopeless[memo] = self._pending(entry, never, reason)
            return self._step_aside(q, wl, queues)
        self.version += 1
        if entry.targets:
            self._charge(q.cq.name, res.usage)
            self._preempt(entry)
            return self._step_aside(q, wl, queues)
        if not self.ledger.fits(q.cq.name, res.usage):
            # fits only once this cycle's victims are gone: keep the room, admit later
            self._charge(q.cq.name, res.usage)
            self.out.append(Pending(wl.key, msg.DEFERRED, f"Waiting for preempted workloads to stop in ClusterQueue "
                                                          f"{q.cq.name}; it fits once they have",
                                    reason=REASON_WAITING_FOR_PREEMPTED))
            return self._step_aside(q, wl, queues)
        self._charge(q.cq.name, res.usage)
        self.out.append(Admit(wl.key, q.cq.name, res.assignment(wl)))
        q.at += 1

    def _never_fits(self, wl: Workload) -> bool:
        if self._empty_ledger is None:
            self._empty_ledger = Ledger(replace(self.snap, workloads=()))
        return never_fits(self.snap, wl, self._empty_ledger) is not None

    def _preempt(self, entry: _Entry) -> None:
        wl, cq = entry.wl, entry.queue.cq
        path = msg.cq_path(cq.name, cq.cohort)
        for t in entry.targets:
            self._add_victim(t.workload)
            victim_cq = self.snap.cluster_queues[t.workload.cluster_queue]
            text = msg.preempted(wl.uid, wl.job_uid, t.reason, path, msg.cq_path(victim_cq.name, victim_cq.cohort))
            self.out.append(Preempt(t.workload.key, wl.key, wl.uid, t.reason, text))
        n = len(entry.targets)
        assert entry.result is not None
        human = f"Preempting {n} workload(s) to make room in ClusterQueue {cq.name}; starts once they have stopped"
        self.out.append(Pending(wl.key, msg.pending_preemption(entry.result.message, n), human,
                                reason=REASON_WAITING_FOR_PREEMPTED))

    def _pending(self, entry: _Entry, never: bool, reason: str) -> Pending:
        res, cq = entry.result, entry.queue.cq
        assert res is not None
        short = res.shortfall
        if short is not None and not short.uncovered:
            human = msg.waiting_for_quota(short.resource, entry.wl.total(short.resource), short.available, cq.name)
        elif short is not None:
            human = f"ClusterQueue {cq.name} has no quota for {short.resource}"
        else:
            human = res.message
        p = Pending(entry.wl.key, res.message, human, never_fits=never, reason=reason)
        self.out.append(p)
        return p

    def _step_aside(self, q: _Queue, wl: Workload, queues: dict[str, _Queue]) -> None:
        q.at += 1
        if q.cq.strategy != QueueingStrategy.STRICT_FIFO:
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
