"""What the start estimates of waiting jobs are made of, read from the store (`api/kueue/scheduler/waiting.py`
replays them): when each admitted job should give its quota back, and how long each pending one should
hold it once admitted.

An admitted job ends, by the first of these that is known:

1. its program's own report (`status.trainerStatus`, `api/trainer/progress.py`): the time of the report plus the
   seconds it said were left, or, with a percentage only, its run so far scaled to 100 %;
2. the run times of finished jobs like it (`History`: the median of the last few);

and never after its `activeDeadlineSeconds` (Trainer fails it then). A pending job runs as long as
jobs like it did, and at most its deadline. "Like it" (`similar`): the same runtime, image, command,
nodes, processes and resources per node. Nothing known: its end is unknown, and so is the start of
whoever waits for its quota.
"""

from __future__ import annotations

import json
import statistics
from collections import deque

from mpijob.api import Obj, names
from mpijob.api.core import resources
from mpijob.api.core.durations import parse_time
from mpijob.api.kueue import owners
from mpijob.api.kueue.scheduler.ordering import pending_by_queue
from mpijob.api.kueue.scheduler.waiting import MAX_REPLAYED, Timing
from mpijob.api.kueue.snapshot import Snapshot, Workload
from mpijob.api.trainer.progress import progress_of
from mpijob.api.trainer.waiting import Waiting
from mpijob.controllers import conditions as cond
from mpijob.controllers.kueue.integrations import owner_job
from mpijob.controllers.trainer import deadline
from mpijob.store.objects import Store

KEPT = 20  # run times kept per kind of job
MOVE = 60.0  # seconds an estimate must move by (or a tenth of the wait, if more) before it is written again
KEYS = (names.ANNOTATION_WAITING, names.ANNOTATION_ESTIMATED_START)  # what says why a Workload waits


def similar(tj: Obj) -> str:
    """What makes two TrainJobs alike enough to expect the same run time."""
    spec = tj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    keys = ("image", "command", "numNodes", "numProcPerNode", "resourcesPerNode")
    return json.dumps([(spec.get("runtimeRef") or {}).get("name"), *(trainer.get(k) for k in keys)], sort_keys=True)


def _epoch(stamp: object) -> float | None:
    t = parse_time(stamp if isinstance(stamp, str) else None)
    return t.timestamp() if t else None


class History:
    """The run times of finished TrainJobs, by `similar`: from admission (their Workload's `Admitted`) to
    their `Complete` or `Failed`, the last `KEPT` of each kind."""

    def __init__(self) -> None:
        self._runs: dict[str, deque[float]] = {}
        self._seen: set[str] = set()

    def observe(self, tj: Obj, wl: Obj | None) -> None:
        """Record `tj`'s run once it has finished (once per job)."""
        uid = tj["metadata"].get("uid", "")
        end = cond.get(tj, names.COMPLETE) if cond.is_true(tj, names.COMPLETE) else cond.get(tj, names.FAILED)
        admitted = cond.get(wl, names.ADMITTED) if wl else None
        if uid in self._seen or not cond.finished(tj) or not admitted or admitted.get("status") != "True":
            return
        start, stop = _epoch(admitted.get("lastTransitionTime")), _epoch((end or {}).get("lastTransitionTime"))
        if start is not None and stop is not None and stop >= start:
            self._seen.add(uid)
            self._runs.setdefault(similar(tj), deque(maxlen=KEPT)).append(stop - start)

    def median(self, tj: Obj) -> float | None:
        runs = self._runs.get(similar(tj))
        return statistics.median(runs) if runs else None


def _owner(store: Store, wl: Workload) -> tuple[Obj | None, Obj | None]:
    """(its stored Workload, its job: a TrainJob or an MPIJob)."""
    ns, name = wl.key.split("/", 1)
    obj = store.try_get(resources.WORKLOADS, ns, name)
    return obj, owner_job(store, obj) if obj is not None else None


def expected_end(tj: Obj, wl: Obj, started: float | None, history: History) -> float | None:
    """When an admitted job should end (epoch seconds), by its report, else its history, and at the
    latest its deadline; None when nothing tells. A report older than this admission is a past run's."""
    own = None
    progress = progress_of(tj)
    if progress is not None and started is not None and progress.updated.timestamp() < started:
        progress = None
    if progress is not None and progress.expected_end is not None:
        own = progress.expected_end.timestamp()
    elif progress is not None and progress.percentage and started is not None:
        own = started + (progress.updated.timestamp() - started) * 100 / progress.percentage
    elif started is not None and (run := history.median(tj)) is not None:
        own = started + run
    due = deadline.due(tj, wl)
    return min(t for t in (own, due) if t is not None) if (own, due) != (None, None) else None


def expected_run(tj: Obj, history: History) -> float | None:
    """How long a pending job should run once admitted: as jobs like it did, at most its deadline."""
    limit = (tj.get("spec") or {}).get("activeDeadlineSeconds")
    runs = [t for t in (history.median(tj), float(limit) if limit else None) if t is not None]
    return min(runs) if runs else None


def timing(store: Store, snap: Snapshot, history: History) -> Timing:
    """The ends and run times `waiting.explain` needs: the admitted jobs of every ClusterQueue (and
    cohort) where some wait, and the first `MAX_REPLAYED` waiting in each."""
    queues = {name: wls[:MAX_REPLAYED] for name, wls in pending_by_queue(snap).items() if name in snap.cluster_queues}
    cohorts = {snap.cluster_queues[name].cohort for name in queues} - {None}
    relevant = set(queues) | {n for n, cq in snap.cluster_queues.items() if cq.cohort in cohorts}
    ends, durations = {}, {}
    for wl in snap.workloads:
        if wl.admission is not None and wl.cluster_queue in relevant:
            obj, tj = _owner(store, wl)
            if obj is not None and tj is not None and (end := expected_end(tj, obj, _epoch(wl.admitted_at), history)):
                ends[wl.key] = end
    for wls in queues.values():
        for wl in wls:
            _, tj = _owner(store, wl)
            if tj is not None and (run := expected_run(tj, history)) is not None:
                durations[wl.key] = run
    return Timing(ends, durations)


def restate(wl: Obj, waiting: Waiting | None, now: float) -> bool:
    """Put `waiting` in the Workload's annotations (None: remove them); whether anything changed. An
    estimate that moved less than `MOVE` seconds (or a tenth of the wait) is left as it was, so a clock
    ticking on does not rewrite every waiting Workload at each cycle."""
    annotations = wl["metadata"].setdefault("annotations", {})
    wanted = waiting.annotations() if waiting else {}
    old_start, new_start = (_epoch(d.get(names.ANNOTATION_ESTIMATED_START)) for d in (annotations, wanted))
    if old_start is not None and new_start is not None and \
            abs(new_start - old_start) < max(MOVE, (new_start - now) / 10):
        wanted[names.ANNOTATION_ESTIMATED_START] = annotations[names.ANNOTATION_ESTIMATED_START]
    if all(annotations.get(k) == wanted.get(k) for k in KEYS):
        return False
    for k in KEYS:
        if k in wanted:
            annotations[k] = wanted[k]
        else:
            annotations.pop(k, None)
    return True


def said(wl: Obj) -> dict[str, str]:
    """What the Workload's annotations say of why it waits."""
    annotations = wl["metadata"].get("annotations") or {}
    return {k: annotations[k] for k in KEYS if k in annotations}


def inactive(tj: Obj | None) -> Waiting:
    """Why a Workload that is not active (`spec.active: false`) waits: its job (a TrainJob, an MPIJob) is
    suspended, or the Workload itself was deactivated."""
    kind = owners.of(tj) if tj is not None else None
    if tj is not None and kind is not None and kind.suspended(tj):
        return Waiting(f"the {kind.kind} is suspended ({kind.suspend_path()}: true); resume it to queue it again")
    return Waiting("its Workload is deactivated (spec.active: false); set it to true to queue the job again")
