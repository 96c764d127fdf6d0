"""Kueue's wording, word for word, and the human one-liners built from the same facts.

Quantities print as Kubernetes prints them (`resource.Quantity.String()` after Kueue's formatter):
cpu in millicores ("500m", "2"), memory in binary units when exact ("64Gi", else "1500M"), others as
decimal SI ("32", "2k").
"""

from __future__ import annotations

_SI = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BIN = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
UNLIMITED = 2**63 - 1


def _decimal_si(num: int, exp10: int) -> str:
    if num == 0:
        return "0"
    sign, num = ("-", -num) if num < 0 else ("", num)
    while num % 10 == 0:
        num //= 10
        exp10 += 1
    exp3 = min(max((exp10 // 3) * 3, -9), 18)
    return f"{sign}{num * 10 ** (exp10 - exp3)}{_SI[exp3]}"


def quantity(resource: str, amount: int) -> str:
    """`amount` in base units (millicores for cpu, bytes for memory) as Kubernetes prints it."""
    if amount >= UNLIMITED:
        return "Unlimited"
    if resource == "cpu":
        return _decimal_si(amount, -3)
    binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
    if binary and amount and amount % 1024 == 0:
        n, i = amount, 0
        while n % 1024 == 0 and i < len(_BIN) - 1:
            n //= 1024
            i += 1
        return f"{n}{_BIN[i]}"
    return _decimal_si(amount, 0)


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
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}


def preempted(preemptor_uid: str, job_uid: str, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    return (f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: "
            f"{job_uid or 'UNKNOWN'}) due to {HUMAN_PREEMPTION_REASONS.get(reason, 'UNKNOWN')}; "
            f"preemptor path: {preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}")


def cq_path(cq: str, cohort: str | None) -> str:
    return f"/{cohort}/{cq}" if cohort else f"/{cq}"


# -- Kueue's condition reasons, each word defined here once ---------------------------------------

# Workload QuotaReserved=False (apis/kueue/v1beta2/workload_types.go)
PENDING = "Pending"
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
INADMISSIBLE = "Inadmissible"  # its LocalQueue is stopped
EVICTED_BY_CQ_STOPPED = "ClusterQueueStopped"  # Evicted reason (HoldAndDrain)
EVICTED_BY_LQ_STOPPED = "LocalQueueStopped"  # Evicted reason (a LocalQueue's HoldAndDrain)

# ClusterQueue and LocalQueue condition `Active` (clusterqueue_types.go; pkg/controller/core/localqueue_controller.go)
ACTIVE = "Active"
READY = "Ready"
CQ_STOPPED = "Stopped"  # a stopped LocalQueue's Active=False reason too
CQ_FLAVOR_NOT_FOUND = "FlavorNotFound"
CQ_ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
CQ_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
LQ_CQ_INACTIVE = "ClusterQueueIsInactive"
LQ_CQ_MISSING = "ClusterQueueDoesNotExist"

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
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"


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
