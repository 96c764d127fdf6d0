"""Questions about quota outside a cycle: what do queues use now. (Could a workload ever fit is
`mpijob.api.kueue.fit.never_fits`, pure, so the doctor asks it too.)"""

from __future__ import annotations

from mpijob.api.kueue.ledger import Ledger
from mpijob.api.kueue.snapshot import Snapshot


def queue_usage(snap: Snapshot) -> dict[str, dict[tuple[str, str], tuple[int, int]]]:
    """CQ name → (flavor, resource) → (total used by admitted workloads, borrowed part), for every
    flavor/resource the queue has quota for (zeros included, as Kueue's flavorsReservation lists them)."""
    ledger = Ledger(snap)
    out: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
    for name in sorted(snap.cluster_queues):
        per: dict[tuple[str, str], tuple[int, int]] = {}
        for fr, nominal in ledger.nominal[name].items():
            used = ledger.used(name, fr)
            per[fr] = (used, max(0, used - nominal))
        for fr, used in ledger.usage[name].items():  # admitted under a flavor the queue no longer lists
            per.setdefault(fr, (used, used))
        out[name] = per
    return out
