"""Could a workload ever be admitted by its ClusterQueue, even with the queue and its cohort empty? One
answer, Kueue's flavor assigner run over an empty ledger, asked by the API server before it stores a
TrainJob, by the scheduler when it says why a workload waits, and by `mpijob doctor` over what it read."""

from __future__ import annotations

from dataclasses import replace

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.flavors import Assigner, Mode
from mpijob.api.kueue.ledger import Ledger
from mpijob.api.kueue.snapshot import Snapshot, Workload


def never_fits(snap: Snapshot, wl: Workload, empty: Ledger | None = None) -> str | None:
    """A human refusal when `wl` could not be admitted by its ClusterQueue even if the queue and its
    cohort were empty (a request over nominal plus the most it may borrow, or a resource no flavor
    covers); None otherwise, and None when the queue is unknown (it may be created later). `empty`
    is the ledger of `snap` without workloads, for a caller asking about many workloads."""
    cq = snap.cluster_queues.get(wl.cluster_queue)
    if cq is None:
        return None
    referenced = frozenset(f.name for g in cq.groups for f in g.flavors)
    if empty is None:
        empty = Ledger(replace(snap, workloads=()))
    result = Assigner(empty, cq, referenced, None, False).assign(wl)
    if result.mode != Mode.NO_FIT:
        return None
    short = result.shortfall
    if short is None:
        return f"ClusterQueue {cq.name} can never admit this workload: {result.message}"
    if short.uncovered:
        covered = ", ".join(sorted({r for g in cq.groups for r in g.covered})) or "nothing"
        return (f"ClusterQueue {cq.name} has no quota for {short.resource} (it covers {covered}); remove the "
                f"{short.resource} request or add {short.resource} to the ClusterQueue's resourceGroups")
    res = short.resource
    return (f"{res} requested {msg.quantity(res, wl.total(res))}, but ClusterQueue {cq.name} can never provide "
            f"more than {msg.quantity(res, short.available)} (nominal quota plus what it may borrow); request at "
            f"most {msg.quantity(res, short.available)} {res} or raise the ClusterQueue's quota")
