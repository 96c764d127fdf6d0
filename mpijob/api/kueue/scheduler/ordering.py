"""Orders Kueue uses: pending workloads in a queue, preemption candidates, and queue positions."""

from __future__ import annotations

import math
from datetime import datetime
from functools import lru_cache

from mpijob.api.kueue.snapshot import Snapshot, Workload


def queue_key(wl: Workload) -> tuple:
    """Kueue's ClusterQueue heap order: higher priority first, then older first (key breaks ties)."""
    return (-wl.priority, wl.created, wl.key)


def candidate_key(wl: Workload, preemptor_cq: str) -> tuple:
    """Kueue's CandidatesOrdering: other queues before the preemptor's own, lower priority first, most
    recently admitted first, then UID. (Kueue also puts workloads already being evicted first: here an
    evicted workload gives its quota back in the same write, so no candidate is ever one.)"""
    return (wl.cluster_queue == preemptor_cq, wl.priority, _newest_first(wl.admitted_at), wl.uid, wl.key)


@lru_cache(maxsize=4096)
def _newest_first(ts: str) -> float:
    """Sort key putting later times first. An empty or unreadable time counts as "now" (Kueue uses
    the current time when the QuotaReserved condition is not written yet): newest of all."""
    try:
        return -datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return -math.inf


def pending_by_queue(snap: Snapshot) -> dict[str, list[Workload]]:
    """ClusterQueue name (as resolved, possibly missing or "") → its pending workloads in queue order."""
    out: dict[str, list[Workload]] = {}
    for wl in snap.workloads:
        if wl.admission is None:
            out.setdefault(wl.cluster_queue, []).append(wl)
    for wls in out.values():
        wls.sort(key=queue_key)
    return out


def positions(snap: Snapshot) -> dict[str, tuple[int, int]]:
    """Pending workload key → (positionInClusterQueue, positionInLocalQueue), 0-based like Kueue's
    visibility API. Workloads whose LocalQueue is missing have no ClusterQueue and no position."""
    out: dict[str, tuple[int, int]] = {}
    for cq, wls in pending_by_queue(snap).items():
        if not cq:
            continue
        per_lq: dict[tuple[str, str], int] = {}
        for i, wl in enumerate(wls):
            lq = (wl.namespace, wl.local_queue)
            out[wl.key] = (i, per_lq.get(lq, 0))
            per_lq[lq] = per_lq.get(lq, 0) + 1
    return out
