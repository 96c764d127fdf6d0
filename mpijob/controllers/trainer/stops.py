"""What ends a run from outside its pods (`Stop`), what becomes of its job then (`Then`), and how a run
ended (`Outcome`): the table `JobRunner.stop` and the controllers share (docs/architecture.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mpijob.api import names
from mpijob.controllers.trainer import deadline


@dataclass
class Outcome:
    succeeded: bool
    reason: str  # TrainJob condition reason
    message: str
    failure: str = ""  # the class of a failed run (api/trainer/failures.py), beside upstream's reason


class Then(enum.Enum):
    """What becomes of a TrainJob once a stop has torn its run down."""

    FAIL = "fail"  # it ends Failed with the stop's reason: its deadline passed
    REQUEUE = "requeue"  # its pods are deleted; it runs again once resumed or re-admitted (suspension, eviction, drain)
    FORGET = "forget"  # it was deleted: nothing is written to it, its objects go with it (gc.cascade)


@dataclass(frozen=True)
class Stop:
    """Why a run is stopped from outside its pods. `reason` is the terminated reason of every pod the stop
    ends and, when the stop fails the job, the reason of the TrainJob's `Failed` condition: each kind of
    stop says what happened in its own upstream words."""

    reason: str
    message: str
    then: Then

    @classmethod
    def deleted(cls) -> Stop:
        return cls(names.REASON_DELETED, "the TrainJob was deleted", Then.FORGET)

    @classmethod
    def suspended(cls) -> Stop:
        """`spec.suspend` set on a running job: Trainer's Suspended, and JobSet deletes the pods."""
        return cls(names.REASON_SUSPENDED, "the TrainJob was suspended", Then.REQUEUE)

    @classmethod
    def evicted(cls, reason: str, message: str) -> Stop:
        """Kueue took the job's quota back: `reason` and `message` are its Workload's `Evicted` condition's
        (Preempted, ClusterQueueStopped, ...)."""
        return cls(reason, message, Then.REQUEUE)

    @classmethod
    def deadline_exceeded(cls) -> Stop:
        return cls(names.REASON_DEADLINE_EXCEEDED, deadline.MESSAGE, Then.FAIL)

    @classmethod
    def drained(cls) -> Stop:
        """`mpijob server stop --drain` found it still running: its pods go, and it runs again when the local
        cluster starts, as a job Kueue drained from a stopped ClusterQueue runs again once re-admitted."""
        return cls(names.REASON_CONTROL_PLANE_RESTARTED, "the local cluster was stopped with --drain; the job runs "
                   "again when it starts", Then.REQUEUE)

    @property
    def outcome(self) -> Outcome:
        return Outcome(False, self.reason, self.message)

    @property
    def pod_message(self) -> str:
        """The terminated message of the pods it stops."""
        return f"stopped because the TrainJob failed: {self.message}" if self.then is Then.FAIL else \
            f"stopped: {self.message}"
