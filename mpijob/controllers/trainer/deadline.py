"""`spec.activeDeadlineSeconds`: when a TrainJob's time is up.

Trainer counts from the job's start, which resets on resume from suspension, and does not count while
the job is suspended. On a cluster with Kueue a TrainJob is held suspended until its Workload is
admitted, so its clock starts at admission (and again at each re-admission after a preemption). Here
Kueue's hold is the Workload's admission itself (the TrainJob is not suspended for it), so the clock
starts at the latest of creation, the last resume and the current admission.
"""

from __future__ import annotations

from datetime import datetime

from mpijob.api import Obj, names
from mpijob.controllers import conditions as cond

MESSAGE = "TrainJob exceeded its active deadline"  # Trainer's, with reason names.REASON_DEADLINE_EXCEEDED


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def due(tj: Obj, wl: Obj | None) -> float | None:
    """The epoch second the job's deadline passes; None when no clock runs (no deadline, finished,
    suspended, or not admitted)."""
    seconds = (tj.get("spec") or {}).get("activeDeadlineSeconds")
    if not seconds or cond.finished(tj) or (tj.get("spec") or {}).get("suspend"):
        return None
    admitted = cond.get(wl, names.ADMITTED) if wl else None
    if not admitted or admitted.get("status") != "True":
        return None
    resumed = cond.get(tj, names.SUSPENDED)
    starts = [tj["metadata"].get("creationTimestamp"), admitted.get("lastTransitionTime"),
              resumed.get("lastTransitionTime") if resumed and resumed.get("status") == "False" else None]
    start = max(t for t in map(_epoch, starts) if t is not None)
    return start + int(seconds)
