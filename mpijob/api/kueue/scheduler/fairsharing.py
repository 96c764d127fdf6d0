"""Dominant resource share (DRS), Kueue's fair-sharing measure between ClusterQueues of a cohort.

For each resource, what a queue borrows (usage above nominal, summed over flavors) is divided by what
the cohort can lend of it; the largest ratio (×1000) is the queue's share, divided by its
`fairSharing.weight`. A queue that borrows nothing has share 0; a zero weight that borrows is infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpijob.api.kueue.ledger import FR, Ledger, Usage
from mpijob.api.kueue.snapshot import Snapshot


@dataclass(frozen=True)
class DRS:
    weight: float
    ratio: float = 0.0  # unweighted, ×1000
    resource: str = ""
    borrowed: frozenset[FR] = frozenset()

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def weighted(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def rounded(self) -> int:
        """`status.fairSharing.weightedShare` as Kueue reports it."""
        if self.zero_weight_borrows:
            return 2**63 - 1
        return math.ceil(self.weighted())


NEGATIVE = DRS(weight=1.0, ratio=-1.0)


def compare(a: DRS, b: DRS) -> int:
    """<0 when `a` should be scheduled before `b` (and preempted after it)."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        x, y = a.ratio, b.ratio
    elif a.zero_weight_borrows:
        return 1
    elif b.zero_weight_borrows:
        return -1
    else:
        x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def share(ledger: Ledger, cq: str, extra: Usage | None = None) -> DRS:
    """The queue's DRS, as if `extra` were admitted to it too."""
    weight = ledger.queues[cq].fair_weight
    cohort = ledger.cohort(cq)
    if not cohort:
        return DRS(weight)
    extra = extra or {}
    borrowing: dict[str, int] = {}
    borrowed: set[FR] = set()
    for fr, nominal in ledger.nominal[cq].items():
        amount = extra.get(fr, 0) + ledger.used(cq, fr) - nominal
        if amount > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
            borrowed.add(fr)
    if not borrowing:
        return DRS(weight)
    lendable = ledger.lendable[cohort]
    ratio, dominant = 0.0, ""
    for res, amount in borrowing.items():
        if lendable.get(res, 0) > 0:
            r = amount * 1000.0 / lendable[res]
            if r > ratio or (r == ratio and (not dominant or res < dominant)):
                ratio, dominant = r, res
    return DRS(weight, ratio, dominant, frozenset(borrowed))


def weighted_shares(snap: Snapshot) -> dict[str, int]:
    """CQ → fairSharing.weightedShare as Kueue reports it (share × 1000 / weight, rounded up)."""
    ledger = Ledger(snap)
    return {name: share(ledger, name).rounded() for name in sorted(snap.cluster_queues)}


def enabled(snap: Snapshot) -> bool:
    """Fair sharing is Kueue-wide configuration; here it is on when any ClusterQueue sets a weight
    other than the default 1 (pass `fair_sharing=` to `schedule` to decide explicitly)."""
    return any(cq.fair_weight != 1.0 for cq in snap.cluster_queues.values())
