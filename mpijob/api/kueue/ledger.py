"""Kueue's quota ledger: nominal quota, limits and usage per ClusterQueue and cohort (the scheduler's
cycle keeps one, and `fit.never_fits` asks an empty one).

Mirrors Kueue's resource nodes for a flat cohort (ClusterQueue → cohort): a queue keeps
`nominal - lendingLimit` to itself ("local" quota), lends the rest to its cohort, and borrows from the
cohort up to `borrowingLimit`. Usage past the local quota is charged to the cohort. Mutable on purpose:
a cycle adds each admission so later decisions in the same cycle see it.
"""

from __future__ import annotations

from collections.abc import Iterable

from mpijob.api.kueue.snapshot import Snapshot, Workload

FR = tuple[str, str]  # (flavor, resource)
Usage = dict[FR, int]


class Ledger:
    def __init__(self, snap: Snapshot) -> None:
        self.queues = snap.cluster_queues
        self.nominal: dict[str, dict[FR, int]] = {}
        self.borrow_limit: dict[str, dict[FR, int | None]] = {}
        self.local: dict[str, dict[FR, int]] = {}
        self.usage: dict[str, dict[FR, int]] = {}
        self.cohort_quota: dict[str, dict[FR, int]] = {}
        self.cohort_usage: dict[str, dict[FR, int]] = {}
        self.members: dict[str, list[str]] = {}
        for name in sorted(self.queues):
            cq = self.queues[name]
            nominal, blimit, local = {}, {}, {}
            for group in cq.groups:
                for fq in group.flavors:
                    for rq in fq.resources:
                        fr = (fq.name, rq.name)
                        nominal[fr] = rq.nominal
                        blimit[fr] = rq.borrowing_limit
                        local[fr] = max(0, rq.nominal - rq.lending_limit) if rq.lending_limit is not None else 0
            self.nominal[name], self.borrow_limit[name], self.local[name] = nominal, blimit, local
            self.usage[name] = {}
            if cq.cohort:
                self.members.setdefault(cq.cohort, []).append(name)
                cquota = self.cohort_quota.setdefault(cq.cohort, {})
                self.cohort_usage.setdefault(cq.cohort, {})
                for fr, n in nominal.items():
                    cquota[fr] = cquota.get(fr, 0) + n - local[fr]
        # what each cohort can lend, per resource over all flavors (fair sharing divides by it)
        self.lendable: dict[str, dict[str, int]] = {}
        for cohort, quota in self.cohort_quota.items():
            per = self.lendable.setdefault(cohort, {})
            for (_, res), q in quota.items():
                per[res] = per.get(res, 0) + q
        for wl in snap.workloads:
            if wl.admission is not None and wl.cluster_queue in self.queues:
                self.add(wl.cluster_queue, wl.admission.usage)

    def cohort(self, cq: str) -> str | None:
        return self.queues[cq].cohort

    # -- reading ---------------------------------------------------------------------------------

    def used(self, cq: str, fr: FR) -> int:
        return self.usage[cq].get(fr, 0)

    def local_available(self, cq: str, fr: FR) -> int:
        return max(0, self.local[cq].get(fr, 0) - self.used(cq, fr))

    def available(self, cq: str, fr: FR) -> int:
        """What `cq` can still take of `fr` now: its own unused quota plus what the cohort can lend it."""
        cohort = self.cohort(cq)
        if not cohort:
            return self.nominal[cq].get(fr, 0) - self.used(cq, fr)
        parent = self.cohort_quota[cohort].get(fr, 0) - self.cohort_usage[cohort].get(fr, 0)
        limit = self.borrow_limit[cq].get(fr)
        if limit is not None:
            local = self.local[cq].get(fr, 0)
            stored = self.nominal[cq].get(fr, 0) - local
            used_in_parent = max(0, self.used(cq, fr) - local)
            parent = min(stored - used_in_parent + limit, parent)
        return self.local_available(cq, fr) + parent

    def potential(self, cq: str, fr: FR) -> int:
        """The most `cq` could ever hold of `fr`: nominal plus everything it may borrow."""
        cohort = self.cohort(cq)
        if not cohort:
            return self.nominal[cq].get(fr, 0)
        avail = self.local[cq].get(fr, 0) + self.cohort_quota[cohort].get(fr, 0)
        limit = self.borrow_limit[cq].get(fr)
        if limit is not None:
            avail = min(self.nominal[cq].get(fr, 0) + limit, avail)
        return avail

    def borrowing(self, cq: str, fr: FR, extra: int = 0) -> bool:
        return bool(self.cohort(cq)) and self.used(cq, fr) + extra > self.nominal[cq].get(fr, 0)

    def within_nominal(self, cq: str, frs: Iterable[FR]) -> bool:
        return all(self.used(cq, fr) <= self.nominal[cq].get(fr, 0) for fr in frs)

    def borrow_height(self, cq: str, fr: FR, val: int) -> tuple[int, bool]:
        """Kueue's FindHeightOfLowestSubtreeThatFits for a flat cohort: (1 if `val` needs borrowing
        else 0, whether the queue could reclaim it from the cohort)."""
        if not self.cohort(cq):
            return 0, False
        if not self.borrowing(cq, fr, val):
            return 0, True
        return 1, False

    # -- writing ---------------------------------------------------------------------------------

    def add(self, cq: str, usage: Usage) -> None:
        cohort = self.cohort(cq)
        for fr, v in usage.items():
            free_local = self.local_available(cq, fr)
            self.usage[cq][fr] = self.used(cq, fr) + v
            if cohort and v > free_local:
                cu = self.cohort_usage[cohort]
                cu[fr] = cu.get(fr, 0) + v - free_local

    def remove(self, cq: str, usage: Usage) -> None:
        cohort = self.cohort(cq)
        for fr, v in usage.items():
            stored = self.used(cq, fr) - self.local[cq].get(fr, 0)
            self.usage[cq][fr] = self.used(cq, fr) - v
            if cohort and stored > 0:
                cu = self.cohort_usage[cohort]
                cu[fr] = cu.get(fr, 0) - min(v, stored)

    def fits(self, cq: str, usage: Usage, allow_borrowing: bool = True) -> bool:
        for fr, v in usage.items():
            if not allow_borrowing and self.borrowing(cq, fr, v):
                return False
            if v > self.available(cq, fr):
                return False
        return True


def usage_of(wl: Workload) -> Usage:
    return dict(wl.admission.usage) if wl.admission is not None else {}
