"""Kueue's wording, word for word, and the human one-liners built from the same facts.

Quantities print as Kubernetes prints them (`mpijob.api.core.quantity.format_quantity`). The condition
types and reasons these messages go with are words of the vocabulary (`mpijob.api.names`).
"""

from __future__ import annotations

from mpijob.api.core.quantity import format_quantity as quantity
from mpijob.api.names import (
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
    REASON_IN_COHORT_RECLAMATION,
)

# -- Kueue's condition messages ------------------------------------------------------------------

def over_capacity(res: str, flavor: str, previous: int, request: int, maximum: int) -> str:
    return (f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests "
            f"({quantity(res, previous)}) + current podset request ({quantity(res, request)}) > maximum "
            f"capacity ({quantity(res, maximum)})")


def insufficient_unused(res: str, flavor: str, missing: int) -> str:
    return f"insufficient unused quota for {res} in flavor {flavor}, {quantity(res, missing)} more needed"


def unavailable(res: str) -> str:
    return f"resource {res} unavailable in ClusterQueue"


def flavor_not_found(flavor: str) -> str:
    return f"flavor {flavor} not found"


def pod_set_failures(failures: list[tuple[str, list[str]]]) -> str:
    """Kueue's Assignment.Message(): reasons sorted, joined per pod set."""
    return "; ".join(f"couldn't assign flavors to pod set {ps}: {', '.join(sorted(reasons))}"
                     for ps, reasons in failures)


def pending_preemption(message: str, count: int) -> str:
    return f"{message}. Pending the preemption of {count} workload(s)"


HUMAN_PREEMPTION_REASONS = {
    REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    REASON_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    REASON_IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


def preempted(preemptor_uid: str, job_uid: str, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    return (f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: "
            f"{job_uid or 'UNKNOWN'}) due to {HUMAN_PREEMPTION_REASONS.get(reason, 'UNKNOWN')}; "
            f"preemptor path: {preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}")


def cq_path(cq: str, cohort: str | None) -> str:
    return f"/{cohort}/{cq}" if cohort else f"/{cq}"


# -- the messages of the queues' `Active` condition -------------------------------------------

CAN_ADMIT = "Can admit new workloads"
CAN_SUBMIT = "Can submit new workloads to localQueue"
CANNOT_SUBMIT = "Can't submit new workloads to clusterQueue"
LQ_IS_STOPPED = "LocalQueue is stopped"
STOPPED = "is stopped"  # a part of `cannot_admit`
MAX_CONDITION_MESSAGE = 32 * 1024  # Kueue's maxConditionMsgSize


def truncate_condition(message: str) -> str:
    """Kueue's TruncateConditionMessage: at most 32 KiB, ending in " ..." when cut."""
    if len(message) <= MAX_CONDITION_MESSAGE:
        return message
    return message[: MAX_CONDITION_MESSAGE - 4] + " ..."


def cannot_admit(parts: list[str]) -> str:
    """A ClusterQueue's Active=False message: Kueue's `inactiveReason`, every cause in its order."""
    return truncate_condition(f"Can't admit new workloads: {', '.join(parts)}.")


def missing_flavors(names: list[str]) -> str:
    return f"references missing ResourceFlavor(s): {','.join(names)}"


def missing_admission_checks(names: list[str]) -> str:
    return f"references missing AdmissionCheck(s): {','.join(names)}"


def missing_topology(topology: str, flavor: str) -> str:
    return f'there is no Topology "{topology}" for TAS flavor "{flavor}"'  # Go's %q of plain names


CLUSTER_QUEUE_STOPPED = "The ClusterQueue is stopped"  # Evicted message, reason ClusterQueueStopped
LOCAL_QUEUE_STOPPED = "The LocalQueue is stopped"  # Evicted message, reason LocalQueueStopped
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"
# a workload that fits once this cycle's victims are gone (Kueue's overlapping-targets case)
DEFERRED = ("Workload has overlapping preemption targets with another workload, but will fit after these "
            "preemptions complete")


def local_queue_missing(lq: str) -> str:
    return f"LocalQueue {lq} doesn't exist"


def cluster_queue_missing(cq: str) -> str:
    return f"ClusterQueue {cq} doesn't exist"


def local_queue_stopped(lq: str) -> str:
    return f"LocalQueue {lq} is stopped"


def cluster_queue_stopped(cq: str) -> str:
    return f"ClusterQueue {cq} is stopped"


def cluster_queue_inactive(cq: str) -> str:
    return f"ClusterQueue {cq} is inactive"


# -- human one-liners ------------------------------------------------------------------------------

def waiting_for_quota(res: str, requested: int, available: int, cq: str) -> str:
    return (f"Waiting for quota: {res} requested {quantity(res, requested)}, available "
            f"{quantity(res, max(available, 0))} in ClusterQueue {cq}")
