"""Why each pending workload waits, in one sentence with numbers, and when it should start: pure, over
the snapshot a scheduling cycle left behind (its admissions and evictions written).

The sentence (`mpijob.api.trainer.waiting` joins the estimate to it) has up to four clauses:

    needs 8 nvidia.com/gpu, 4 of 16 free in ClusterQueue gpu; <what blocks it>; 2 jobs ahead

* **needs**: the whole job's amount (every pod of every pod set) of the resource that does not fit, or,
  when everything fits, of the scarcest one; with what its ClusterQueue can give now, and in a cohort
  how much of that is borrowed, or how much of its own quota other queues of the cohort hold.
* **what blocks it**, when the numbers do not say it alone: more than the queue could ever give, a
  stopped or inactive queue, a missing or stopped LocalQueue, a namespace the queue does not admit, a
  preemption under way, a StrictFIFO head (the cycle's own words, `Pending.human`).
* **position** in the ClusterQueue, and how many ahead are of higher priority.

The estimate replays the queue forward in time (`_replay`): admitted workloads give their quota back at
their expected ends (`Timing.ends`: the job's own reported ETA, its deadline, the run time of similar
jobs), pending ones are admitted in queue order as soon as they fit, as this scheduler would, and hold
their quota for their expected run time (`Timing.durations`). A workload that would wait on a job
whose end is unknown, or on a blocked queue, gets no estimate. Pending workloads of the other queues of
a cohort are not foreseen; new arrivals of higher priority neither.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.fit import never_fits
from mpijob.api.kueue.flavors import Assigner, Mode, group_for
from mpijob.api.kueue.ledger import Ledger, Usage, usage_of
from mpijob.api.kueue.scheduler.admissibility import Blockers
from mpijob.api.kueue.scheduler.decisions import Pending
from mpijob.api.kueue.scheduler.ordering import pending_by_queue, positions
from mpijob.api.kueue.snapshot import ClusterQueue, QueueingStrategy, Snapshot, Workload
from mpijob.api.names import REASON_EXCEEDS_MAX_QUOTA, REASON_WAITING_FOR_QUOTA
from mpijob.api.trainer.waiting import Waiting

MAX_REPLAYED = 100  # pending workloads per ClusterQueue given an estimate; those further back get none
QUOTA_WAITS = frozenset({REASON_WAITING_FOR_QUOTA, REASON_EXCEEDS_MAX_QUOTA})


@dataclass(frozen=True)
class Timing:
    """How long workloads hold quota, as far as anything tells: workload key → the epoch second an
    admitted one should end (`ends`), and the seconds a pending one should run once admitted
    (`durations`). A workload in neither is of unknown length."""

    ends: Mapping[str, float]
    durations: Mapping[str, float]


def explain(snap: Snapshot, pending: Mapping[str, Pending], timing: Timing, now: float) -> dict[str, Waiting]:
    """workload key → why it waits and when it should start, for each of the cycle's `pending` decisions
    that is still pending in `snap`."""
    ledger, blockers, places = Ledger(snap), Blockers(snap), positions(snap)
    queues = pending_by_queue(snap)
    starts: dict[str, float] = {}
    for name, waiting in queues.items():
        cq = snap.cluster_queues.get(name)
        if cq is not None and blockers.inactive(cq) is None:
            starts.update(_replay(snap, cq, [w for w in waiting[:MAX_REPLAYED] if blockers(w) is None], timing, now))
    by_key = {w.key: w for w in snap.workloads if w.admission is None}
    ranks = {name: [-w.priority for w in wls] for name, wls in queues.items()}  # ascending: queues go by priority
    out, needs = {}, {}  # needs: (ClusterQueue, shape) → its clause, alike for workloads alike
    for key, decision in pending.items():
        wl = by_key.get(key)
        if wl is None:
            continue
        if (wl.cluster_queue, wl.shape) not in needs:
            needs[(wl.cluster_queue, wl.shape)] = _needs(snap, ledger, wl)
        clauses = [needs[(wl.cluster_queue, wl.shape)], _blocker(snap, wl, decision),
                   _position(ranks.get(wl.cluster_queue, []), wl, places.get(key))]
        start = starts.get(key)
        when = datetime.fromtimestamp(start, UTC) if start is not None else None
        out[key] = Waiting("; ".join(c for c in clauses if c), when)
    return out


# -- the sentence -------------------------------------------------------------------------------------


def _amount(res: str, value: int) -> str:
    return f"{msg.quantity(res, value)} {res}"


def _needs(snap: Snapshot, ledger: Ledger, wl: Workload) -> str:
    """`needs N res, F of T free in ClusterQueue q` (and the cohort's part); just what it needs when its
    ClusterQueue is unknown or covers none of it; "" when it asks for nothing."""
    wanted = {res: wl.total(res) for res in sorted({r for _, per in wl.totals for r in per}) if wl.total(res) > 0}
    cq = snap.cluster_queues.get(wl.cluster_queue)
    covered = [r for r in wanted if cq is not None and group_for(cq, r) is not None]
    if not wanted:
        return ""
    if cq is None or not covered:
        return "needs " + " and ".join(_amount(r, v) for r, v in wanted.items())
    short = Assigner(ledger, cq, snap.flavors, None, False).assign(wl).shortfall
    if short is not None and short.resource in covered:
        res = short.resource
    else:
        res = min(covered, key=lambda r: (_free(ledger, cq, r)[0] - wanted[r], r))
    free, nominal, used = _free(ledger, cq, res)
    unused, q = max(0, nominal - used), lambda v: msg.quantity(res, v)
    needs = f"needs {_amount(res, wanted[res])}, "
    if cq.cohort and free > unused:  # it may borrow
        return needs + (f"{q(free)} free to ClusterQueue {cq.name} ({q(unused)} of its own {q(nominal)} and "
                        f"{q(free - unused)} to borrow from cohort {cq.cohort})")
    clause = needs + f"{q(free)} of {q(nominal)} free in ClusterQueue {cq.name}"
    if cq.cohort and unused > free:  # the cohort's other queues borrowed what it does not use
        clause += f" ({q(unused - free)} of its quota in use by other queues of cohort {cq.cohort})"
    return clause


def _free(ledger: Ledger, cq: ClusterQueue, res: str) -> tuple[int, int, int]:
    """(what `cq` can take of `res` now, its nominal quota, what it uses), over its flavors of `res`."""
    group = group_for(cq, res)
    frs = [(f.name, res) for f in group.flavors] if group else []
    return (sum(max(0, ledger.available(cq.name, fr)) for fr in frs),
            sum(ledger.nominal[cq.name].get(fr, 0) for fr in frs), sum(ledger.used(cq.name, fr) for fr in frs))


def _blocker(snap: Snapshot, wl: Workload, decision: Pending) -> str:
    """What blocks it, when the numbers do not say it alone."""
    if decision.never_fits:
        return never_fits(snap, wl) or decision.human
    return "" if decision.reason in QUOTA_WAITS else decision.human


def _position(ranks: list[int], wl: Workload, place: tuple[int, int] | None) -> str:
    """Its place in its ClusterQueue; `ranks` are the queue's negated priorities in queue order, so every
    workload of a higher priority is ahead of it."""
    if place is None:
        return ""
    ahead = place[0]
    if not ahead:
        return "first in line"
    higher = bisect.bisect_left(ranks, -wl.priority)
    return f"{ahead} job{'s' if ahead != 1 else ''} ahead" + (f" ({higher} of higher priority)" if higher else "")


# -- the estimate ---------------------------------------------------------------------------------------


def _replay(snap: Snapshot, cq: ClusterQueue, queue: list[Workload], timing: Timing, now: float) -> dict[str, float]:
    """key → the epoch second each of `queue` (pending in `cq`, in order) should be admitted, replaying
    admissions and releases forward; those that never fit on what is known are left out."""
    ledger = Ledger(snap)
    members = {n for n, q in snap.cluster_queues.items() if cq.cohort and q.cohort == cq.cohort} | {cq.name}
    order = itertools.count()  # ties broken in insertion order: usages do not compare
    releases: list[tuple[float, int, str, Usage]] = [
        (max(end, now), next(order), w.cluster_queue, usage_of(w)) for w in snap.workloads
        if w.admission is not None and w.cluster_queue in members and (end := timing.ends.get(w.key)) is not None]
    heapq.heapify(releases)
    strict, t, starts = cq.strategy == QueueingStrategy.STRICT_FIFO, now, {}
    queue = list(queue)
    while queue:
        hopeless: set[tuple] = set()  # shapes that did not fit at this moment (admissions only take more)
        for wl in list(queue):
            if wl.shape not in hopeless:
                result = Assigner(ledger, cq, snap.flavors, None, False).assign(wl)
                if result.mode == Mode.FIT:
                    ledger.add(cq.name, result.usage)
                    starts[wl.key] = t
                    queue.remove(wl)
                    if (run := timing.durations.get(wl.key)) is not None:
                        heapq.heappush(releases, (t + run, next(order), cq.name, result.usage))
                    continue
                hopeless.add(wl.shape)
            if strict:
                break
        if not queue or not releases:
            break
        t = releases[0][0]
        while releases and releases[0][0] <= t:
            _, _, owner, usage = heapq.heappop(releases)
            ledger.remove(owner, usage)
    return starts
