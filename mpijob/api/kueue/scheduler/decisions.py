"""What one scheduling cycle decides; the queueing controller applies these to the store.

Kept apart from the algorithm so the controller, the CLI and tests can import the shapes without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpijob.api.kueue.snapshot import Assignment
from mpijob.api.names import REASON_PENDING


@dataclass(frozen=True)
class Admit:
    """Reserve quota: set `status.admission` (`assignment.to_api`) and the QuotaReserved/Admitted conditions."""

    workload: str  # "<namespace>/<name>"
    cluster_queue: str
    assignment: Assignment


@dataclass(frozen=True)
class Preempt:
    """Evict an admitted workload. `reason` is the Preempted condition's reason (InClusterQueue,
    InCohortReclamation, InCohortFairSharing, InCohortReclaimWhileBorrowing), or ClusterQueueStopped /
    LocalQueueStopped for a HoldAndDrain eviction — then set only Evicted (with that reason), no Preempted
    condition, and `by`/`by_uid` are empty."""

    workload: str
    by: str  # the preemptor's key
    by_uid: str
    reason: str
    message: str  # Kueue's wording, for the Evicted and Preempted conditions


@dataclass(frozen=True)
class Pending:
    """Still waiting. `message` is Kueue's QuotaReserved=False message; it is empty when Kueue would not
    have looked at the workload this cycle (queued behind a StrictFIFO head) — leave its conditions alone.
    `human` is the one-line "why" for describe/get -o wide/Events."""

    workload: str
    message: str
    human: str
    never_fits: bool = False  # more than the ClusterQueue could ever give (nominal + borrowable)
    reason: str = REASON_PENDING  # QuotaReserved=False reason as Kueue sets it


Decision = Admit | Preempt | Pending
