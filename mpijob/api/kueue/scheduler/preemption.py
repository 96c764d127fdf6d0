"""Which admitted workloads to evict so a pending one fits — Kueue's classical and fair-sharing
preemption for a flat cohort.

Classical: candidates are ordered (other queues' borrowing workloads before the preemptor's own queue,
lower priority first, most recently admitted first), removed one by one until the preemptor fits, then
added back in reverse while it still fits, so the set kept is minimal. Fair sharing: candidates are taken
from the queue with the highest dominant resource share while the preemptor's share after admission
stays at or below the target's (then Kueue's second rule: below the target's share before).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import IntEnum

from mpijob.api.kueue.ledger import FR, Ledger, Usage, usage_of
from mpijob.api.kueue.scheduler import fairsharing as fs
from mpijob.api.kueue.scheduler.ordering import candidate_key
from mpijob.api.kueue.snapshot import ClusterQueue, PreemptionPolicy, Workload
from mpijob.api.names import (
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
    REASON_IN_COHORT_RECLAMATION,
)


class Variant(IntEnum):
    """Why a candidate may be preempted (Kueue's `preemptionVariant`), which decides its reason."""

    WITHIN_CQ = 0  # same ClusterQueue, allowed by withinClusterQueue
    HIERARCHICAL = 1  # another queue of the cohort, while the preemptor stays within its nominal quota
    WITHOUT_BORROWING = 2  # another queue, reclaimed; the preemptor may not borrow to fit
    WHILE_BORROWING = 3  # another queue, of lower priority, reclaimed while the preemptor borrows


_REASONS = {Variant.WITHIN_CQ: REASON_IN_CLUSTER_QUEUE, Variant.HIERARCHICAL: REASON_IN_COHORT_RECLAMATION,
            Variant.WITHOUT_BORROWING: REASON_IN_COHORT_RECLAMATION,
            Variant.WHILE_BORROWING: REASON_IN_COHORT_RECLAIM_WHILE_BORROWING}


@dataclass(frozen=True)
class Target:
    workload: Workload
    reason: str


def satisfies(policy: PreemptionPolicy, preemptor: Workload, candidate: Workload) -> bool:
    lower = preemptor.priority > candidate.priority
    if policy == PreemptionPolicy.LOWER_PRIORITY:
        return lower
    if policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return lower or (preemptor.priority == candidate.priority and preemptor.created < candidate.created)
    return policy == PreemptionPolicy.ANY


def uses(wl: Workload, frs: set[FR]) -> bool:
    if wl.admission is None:
        return False
    if any(fr in frs for fr in wl.admission.usage):
        return True
    return any((f, res) in frs for per_ps in wl.admission.flavors.values() for res, f in per_ps.items())


class Preemptor:
    """Finds targets against the cycle's ledger; `admitted` maps a queue to its evictable workloads."""

    def __init__(self, ledger: Ledger, admitted: dict[str, list[Workload]], fair_sharing: bool,
                 exclude: AbstractSet[str] | None = None) -> None:
        self.ledger, self.fair_sharing = ledger, fair_sharing
        self._admitted = admitted
        self.exclude = exclude if exclude is not None else set()  # already chosen as victims this cycle
        self._candidates: dict[tuple, tuple[list[tuple[Workload, Variant]], bool, bool]] = {}

    def forget(self) -> None:
        """The ledger or the victims changed: candidate lists remembered so far no longer hold."""
        self._candidates.clear()

    def evictable(self, cq: str) -> list[Workload]:
        return [w for w in self._admitted.get(cq, []) if w.key not in self.exclude]

    def targets(self, wl: Workload, cq: ClusterQueue, usage: Usage, need: set[FR], alike: tuple | None = None
                ) -> list[Target]:
        """The workloads to evict so `usage` fits in `cq`, or [] when that is not possible. `alike`
        names what of `wl` the candidates depend on (its priority, and for LowerOrNewerEqualPriority
        which equal ones are newer): preemptors alike share candidate lists until `forget()`."""
        if not need:
            return []
        if self.fair_sharing:
            return self._fair(wl, cq, usage, need)
        return self._classical(wl, cq, usage, need, alike)

    # -- classical -------------------------------------------------------------------------------

    def _variant(self, wl: Workload, cq: ClusterQueue, cand: Workload, need: set[FR], advantage: bool
                 ) -> Variant | None:
        if not uses(cand, need):
            return None
        same = cand.cluster_queue == cq.name
        if not satisfies(cq.within_cluster_queue if same else cq.reclaim_within_cohort, wl, cand):
            return None
        if same:
            return Variant.WITHIN_CQ
        if advantage:
            return Variant.HIERARCHICAL
        if cq.borrow_within_cohort == PreemptionPolicy.NEVER:
            return Variant.WITHOUT_BORROWING
        threshold = cq.borrow_max_priority
        if cand.priority >= wl.priority or (threshold is not None and cand.priority > threshold):
            return Variant.WITHOUT_BORROWING
        return Variant.WHILE_BORROWING

    def _classical(self, wl: Workload, cq: ClusterQueue, usage: Usage, need: set[FR], alike: tuple | None
                   ) -> list[Target]:
        led = self.ledger
        advantage = bool(cq.cohort) and all(led.used(cq.name, fr) + v <= led.nominal[cq.name].get(fr, 0)
                                            for fr, v in usage.items())
        key = None if alike is None else (alike, cq.name, tuple(sorted(need)), advantage)
        found = self._candidates.get(key) if key is not None else None
        if found is None:
            found = self._ordered(wl, cq, need, advantage)
            if key is not None:
                self._candidates[key] = found
        ordered, has_hier, has_prio = found
        forbidden = cq.borrow_within_cohort == PreemptionPolicy.NEVER
        under_nominal = all(led.nominal[cq.name].get(fr, 0) > led.used(cq.name, fr) for fr in need)
        if (not has_hier and not has_prio) or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not has_hier:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            chosen: list[tuple[Workload, Variant]] = []
            for cand, variant in ordered:
                if not self._valid(cq, cand, variant, need, allow_borrowing):
                    continue
                led.remove(cand.cluster_queue, usage_of(cand))
                chosen.append((cand, variant))
                if led.fits(cq.name, usage, allow_borrowing):
                    chosen = self._fill_back(cq, usage, chosen, allow_borrowing)
                    self._restore([c for c, _ in chosen])
                    return [Target(c, _REASONS[v]) for c, v in chosen]
            self._restore([c for c, _ in chosen])
        return []

    def _ordered(self, wl: Workload, cq: ClusterQueue, need: set[FR], advantage: bool
                 ) -> tuple[list[tuple[Workload, Variant]], bool, bool]:
        """Kueue's candidates in the order it tries them: other queues' (reclaiming within nominal
        quota first), then the preemptor's own; and whether there are any of each cohort kind."""
        led = self.ledger
        same: list[tuple[Workload, Variant]] = []
        if cq.within_cluster_queue != PreemptionPolicy.NEVER:
            for cand in self.evictable(cq.name):
                v = self._variant(wl, cq, cand, need, False)
                if v is not None:
                    same.append((cand, v))
        hier: list[tuple[Workload, Variant]] = []
        prio: list[tuple[Workload, Variant]] = []
        if cq.cohort and cq.reclaim_within_cohort != PreemptionPolicy.NEVER:
            bucket = hier if advantage else prio
            for other in led.members[cq.cohort]:
                if other == cq.name or led.within_nominal(other, need):
                    continue
                for cand in self.evictable(other):
                    v = self._variant(wl, cq, cand, need, advantage)
                    if v is not None:
                        bucket.append((cand, v))
        for lst in (same, hier, prio):
            lst.sort(key=lambda c: candidate_key(c[0], cq.name))
        return hier + prio + same, bool(hier), bool(prio)

    def _valid(self, cq: ClusterQueue, cand: Workload, variant: Variant, need: set[FR], allow_borrowing: bool
               ) -> bool:
        if cand.cluster_queue == cq.name:
            return True
        if allow_borrowing and variant == Variant.WITHOUT_BORROWING:
            return False
        return not self.ledger.within_nominal(cand.cluster_queue, need)

    def _fill_back(self, cq: ClusterQueue, usage: Usage, chosen: list, allow_borrowing: bool) -> list:
        """Add victims back, newest choice first, while the preemptor still fits (Kueue's order)."""
        led = self.ledger
        for i in range(len(chosen) - 2, -1, -1):
            cand = chosen[i][0]
            led.add(cand.cluster_queue, usage_of(cand))
            if led.fits(cq.name, usage, allow_borrowing):
                chosen[i] = chosen[-1]
                chosen.pop()
            else:
                led.remove(cand.cluster_queue, usage_of(cand))
        return chosen

    def _restore(self, victims: list[Workload]) -> None:
        for cand in victims:
            self.ledger.add(cand.cluster_queue, usage_of(cand))

    # -- fair sharing ----------------------------------------------------------------------------

    def _fair(self, wl: Workload, cq: ClusterQueue, usage: Usage, need: set[FR]) -> list[Target]:
        led = self.ledger
        cands: list[Workload] = []
        if cq.within_cluster_queue != PreemptionPolicy.NEVER:
            cands += [c for c in self.evictable(cq.name)
                      if satisfies(cq.within_cluster_queue, wl, c) and uses(c, need)]
        if cq.cohort and cq.reclaim_within_cohort != PreemptionPolicy.NEVER:
            for other in led.members[cq.cohort]:
                if other == cq.name or not any(led.borrowing(other, fr) for fr in need):
                    continue
                cands += [c for c in self.evictable(other)
                          if satisfies(cq.reclaim_within_cohort, wl, c) and uses(c, need)]
        if not cands:
            return []
        cands.sort(key=lambda c: candidate_key(c, cq.name))
        led.add(cq.name, usage)  # shares are computed with the preemptor admitted
        fits, chosen, retry = self._fair_first(wl, cq, usage, need, cands)
        if not fits and retry:
            fits, chosen = self._fair_second(cq, usage, retry, chosen)
        led.remove(cq.name, usage)
        if not fits:
            self._restore([t.workload for t in chosen])
            return []
        pairs = self._fill_back(cq, usage, [(t.workload, t.reason) for t in chosen], True)
        self._restore([c for c, _ in pairs])
        return [Target(c, r) for c, r in pairs]

    def _fits_fair(self, cq: ClusterQueue, usage: Usage) -> bool:
        self.ledger.remove(cq.name, usage)
        ok = self.ledger.fits(cq.name, usage)
        self.ledger.add(cq.name, usage)
        return ok

    def _next_queue(self, cq: ClusterQueue, per_queue: dict[str, list[Workload]], pruned: set[str]) -> str | None:
        """The queue with the highest share among those still borrowing (the preemptor's own always
        counts), ties by their first candidate's order."""
        best, best_drs = None, fs.NEGATIVE
        members = self.ledger.members[cq.cohort] if cq.cohort else [cq.name]
        for name in members:
            if name in pruned:
                continue
            drs = fs.share(self.ledger, name)
            if (not drs.borrowing and name != cq.name) or not per_queue.get(name):
                pruned.add(name)
                continue
            c = fs.compare(drs, best_drs)
            if c > 0 or (c == 0 and best is not None and candidate_key(per_queue[name][0], cq.name)
                         < candidate_key(per_queue[best][0], cq.name)):
                best, best_drs = name, drs
        return best

    def _fair_first(self, wl: Workload, cq: ClusterQueue, usage: Usage, need: set[FR], cands: list[Workload]
                    ) -> tuple[bool, list[Target], list[Workload]]:
        led = self.ledger
        per_queue: dict[str, list[Workload]] = {}
        for c in cands:
            per_queue.setdefault(c.cluster_queue, []).append(c)
        chosen: list[Target] = []
        retry: list[Workload] = []
        pruned: set[str] = set()
        within_nominal = not any(led.borrowing(cq.name, fr) for fr in need)
        while True:
            target = self._next_queue(cq, per_queue, pruned)
            if target is None:
                return False, chosen, retry
            queue = per_queue[target]
            if target == cq.name or within_nominal:
                cand = queue.pop(0)
                led.remove(target, usage_of(cand))
                chosen.append(Target(cand, REASON_IN_CLUSTER_QUEUE if target == cq.name
                                     else REASON_IN_COHORT_RECLAMATION))
                if self._fits_fair(cq, usage):
                    return True, chosen, []
                continue
            preemptor_share, target_old = fs.share(led, cq.name), fs.share(led, target)
            if preemptor_share.weighted() == float("inf") and target_old.weighted() != float("inf"):
                retry += queue
                queue.clear()
                continue
            while queue:
                cand = queue.pop(0)
                led.remove(target, usage_of(cand))
                target_new = fs.share(led, target)
                if fs.compare(preemptor_share, target_new) <= 0:  # LessThanOrEqualToFinalShare
                    chosen.append(Target(cand, REASON_IN_COHORT_FAIR_SHARING))
                    if self._fits_fair(cq, usage):
                        return True, chosen, []
                    break
                led.add(target, usage_of(cand))
                retry.append(cand)

    def _fair_second(self, cq: ClusterQueue, usage: Usage, retry: list[Workload], chosen: list[Target]
                     ) -> tuple[bool, list[Target]]:
        led = self.ledger
        per_queue: dict[str, list[Workload]] = {}
        for c in retry:
            per_queue.setdefault(c.cluster_queue, []).append(c)
        pruned: set[str] = set()
        while True:
            target = self._next_queue(cq, per_queue, pruned)
            if target is None:
                return False, chosen
            cand = per_queue[target].pop(0)
            if fs.compare(fs.share(led, cq.name), fs.share(led, target)) < 0:  # LessThanInitialShare
                led.remove(target, usage_of(cand))
                chosen.append(Target(cand, REASON_IN_COHORT_FAIR_SHARING))
                if self._fits_fair(cq, usage):
                    return True, chosen
            pruned.add(target)
