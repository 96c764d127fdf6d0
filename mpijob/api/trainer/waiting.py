"""Why a job waits, in one sentence with numbers, and when it should start: the grammar every surface
shares.

The local cluster's scheduler writes two annotations on a pending Workload: `mpijob.io/waiting`, the
sentence's facts ("needs 8 nvidia.com/gpu, 4 of 16 free in ClusterQueue gpu; 2 jobs ahead"), which
change only when the queue does, and `mpijob.io/estimated-start`, an RFC 3339 time, absent when there is
no basis for one. A client joins them when it shows them, so the estimate is counted from its own
clock and never goes stale: "...; 2 jobs ahead; estimated start in ~12 min", or "...; no estimate".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time

NO_ESTIMATE = "no estimate"


def about(seconds: float) -> str:
    """A rough duration for people: `<1 min`, `~12 min`, `~2 h 5 min`, `~3 d 4 h`."""
    if seconds < 60:
        return "<1 min"
    minutes = math.ceil(seconds / 60)
    if minutes < 90:
        return f"~{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"~{hours} h {minutes} min" if minutes else f"~{hours} h"
    days, hours = divmod(hours, 24)
    return f"~{days} d {hours} h" if hours else f"~{days} d"


@dataclass(frozen=True)
class Waiting:
    """Why a job still waits for admission, and when it should start (None: no basis for a guess)."""

    reason: str  # the sentence's facts: what it needs, what is free, what blocks it, its place in line
    estimated_start: datetime | None = None

    def estimate(self, now: datetime | None = None) -> str:
        """`estimated start in ~12 min`, counted from `now`; `no estimate` without one."""
        if self.estimated_start is None:
            return NO_ESTIMATE
        left = (self.estimated_start - (now or datetime.now(UTC))).total_seconds()
        return f"estimated start in {about(left)}"

    def sentence(self, now: datetime | None = None) -> str:
        """The whole sentence, as `mpijob get -o wide`, `mpijob describe` and the SDK show it."""
        return f"{self.reason}; {self.estimate(now)}" if self.reason else self.estimate(now)

    def annotations(self) -> dict[str, str]:
        """The Workload annotations that carry it."""
        out = {names.ANNOTATION_WAITING: self.reason}
        if self.estimated_start is not None:
            out[names.ANNOTATION_ESTIMATED_START] = self.estimated_start.astimezone(UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
        return out

    @classmethod
    def of(cls, workload: Obj) -> Waiting | None:
        """What a Workload's annotations say; None when it does not wait (or no scheduler of ours said)."""
        annotations = (workload.get("metadata") or {}).get("annotations") or {}
        reason = annotations.get(names.ANNOTATION_WAITING)
        if not reason:
            return None
        return cls(str(reason), parse_time(annotations.get(names.ANNOTATION_ESTIMATED_START)))
