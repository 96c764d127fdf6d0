"""Kueue's wire format ↔ the scheduler's snapshot types: the Workload a TrainJob gets, and the typed
ClusterQueue and Workload a scheduling cycle reads from the stored objects.

Pure: no store, no I/O, so the API server (admission's quota check, the visibility API) and the
controllers share one reading of Kueue's fields. Every TrainJob gets one Workload
(`trainjob-<name>-<hash>`), with a `launcher` and a `node` pod set whose counts and per-pod requests
come from the run plan; an MPIJob one of Kueue's name with pod sets `launcher` and `worker` (`owners.py`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from mpijob.api import Obj
from mpijob.api.core.quantity import to_base_units
from mpijob.api.kueue import owners
from mpijob.api.kueue.snapshot import (
    Assignment,
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    PodSetAssignment,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceGroup,
    ResourceQuota,
    StopPolicy,
    Workload,
)
from mpijob.api.names import (
    CONTAINER,
    FINISHED,
    KUEUE_API_VERSION,
    KUEUE_GROUP,
    LABEL_JOB_UID,
    LABEL_QUEUE_NAME,
    QUOTA_RESERVED,
)
from mpijob.api.trainer.plan import RunPlan

# What a new user needs no configuration for: one flavor, one queue over the whole machine.
DEFAULT_FLAVOR, DEFAULT_CLUSTER_QUEUE, DEFAULT_LOCAL_QUEUE = "default-flavor", "cluster-queue", "user-queue"

E = TypeVar("E", bound=StrEnum)


def _condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _is_true(obj: Obj, kind: str) -> bool:
    return (_condition(obj, kind) or {}).get("status") == "True"


def _first_container_requests(pod_set: Obj) -> Obj:
    return ((pod_set.get("template", {}).get("spec", {}).get("containers") or [{}])[0]
            .get("resources", {}).get("requests") or {})


# -- TrainJob → Workload -------------------------------------------------------------------------


def workload_name(job: Obj) -> str:
    """The name of the job's Workload, as its kind's integration names it (`owners.py`)."""
    return owners.of(job).workload_name(job)


def requests(resources: Obj) -> dict[str, str]:
    """Per-pod requests as Kubernetes defaults them: requests, else limits."""
    out = {k: str(v) for k, v in (resources.get("limits") or {}).items()}
    out.update({k: str(v) for k, v in (resources.get("requests") or {}).items()})
    return out


def workload_object(tj: Obj, plan: RunPlan, owner: Obj | None, priority: int, priority_class: str | None) -> Obj:
    """The Workload Kueue's job integration would create for `tj` (a TrainJob or an MPIJob), given its
    resolved priority: one pod set per replicated job of its plan, named as its kind's integration names it."""
    meta, kind = tj["metadata"], owners.of(tj)
    pod_sets = []
    for rjob, pod_set in kind.pod_sets:
        pods = [p for p in plan.pods if p.rjob == rjob]
        if pods:
            pod_sets.append({
                "name": pod_set,
                "count": len(pods),
                "template": {"spec": {"containers": [{"name": CONTAINER, "image": pods[0].image,
                                                      "resources": {"requests": requests(pods[0].resources)}}]}},
            })
    spec: Obj = {
        "active": not kind.suspended(tj),
        "queueName": meta.get("labels", {}).get(LABEL_QUEUE_NAME, DEFAULT_LOCAL_QUEUE),
        "priority": priority,
        "podSets": pod_sets,
    }
    if priority_class:
        spec["priorityClassRef"] = {"group": KUEUE_GROUP, "kind": "WorkloadPriorityClass", "name": priority_class}
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(tj),
            "namespace": meta["namespace"],
            "labels": {LABEL_JOB_UID: meta["uid"]},
            "ownerReferences": [owner] if owner else [],
        },
        "spec": spec,
    }


# -- stored objects → snapshot -------------------------------------------------------------------


def _policy(kind: type[E], value: Any, default: E, unknown: E | None = None) -> E:
    """A policy field as its enum; absent or empty is the default. Admission only stores known values;
    an unknown one (an object stored before validation) reads as `unknown`, which is what the
    scheduler has always made of it."""
    if not value:
        return default
    try:
        return kind(value)
    except ValueError:
        return default if unknown is None else unknown


def stop_policy(obj: Obj) -> StopPolicy:
    """A ClusterQueue's or LocalQueue's stopPolicy; any value but None stops it."""
    return _policy(StopPolicy, (obj.get("spec") or {}).get("stopPolicy"), StopPolicy.NONE, StopPolicy.HOLD)


def _quota(name: str, q: Obj) -> ResourceQuota:
    def units(key: str) -> int | None:
        return to_base_units(name, q[key]) if q.get(key) is not None else None

    return ResourceQuota(name, to_base_units(name, q.get("nominalQuota", 0)), units("borrowingLimit"),
                         units("lendingLimit"))


def cluster_queue(obj: Obj) -> ClusterQueue:
    spec = obj.get("spec", {})
    preemption = spec.get("preemption") or {}
    borrow = preemption.get("borrowWithinCohort") or {}
    groups = tuple(
        ResourceGroup(
            tuple(g.get("coveredResources") or []),
            tuple(FlavorQuotas(f["name"], tuple(_quota(q["name"], q) for q in f.get("resources") or []))
                  for f in g.get("flavors") or []),
        )
        for g in spec.get("resourceGroups") or []
    )
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []  # v1beta1's list is converted
    never = PreemptionPolicy.NEVER
    return ClusterQueue(
        name=obj["metadata"]["name"],
        admission_checks=tuple(check["name"] for check in checks),
        groups=groups,
        cohort=spec.get("cohortName") or None,
        strategy=_policy(QueueingStrategy, spec.get("queueingStrategy"), QueueingStrategy.BEST_EFFORT_FIFO),
        within_cluster_queue=_policy(PreemptionPolicy, preemption.get("withinClusterQueue"), never),
        reclaim_within_cohort=_policy(PreemptionPolicy, preemption.get("reclaimWithinCohort"), never),
        borrow_within_cohort=_policy(PreemptionPolicy, borrow.get("policy"), never),
        borrow_max_priority=borrow.get("maxPriorityThreshold"),
        fair_weight=float((spec.get("fairSharing") or {}).get("weight", 1)),
        stop_policy=stop_policy(obj),
        namespace_selector=spec.get("namespaceSelector"),
        creation=obj["metadata"].get("creationTimestamp", ""),
    )


def admission(wl: Obj) -> Assignment | None:
    """The quota a Workload holds (`status.admission`), or None unless QuotaReserved is True."""
    if not _is_true(wl, QUOTA_RESERVED):
        return None
    stored = wl.get("status", {}).get("admission") or {}
    flavors: dict[str, dict[str, str]] = {}
    usage: dict[tuple[str, str], int] = {}
    pod_sets = []
    for psa in stored.get("podSetAssignments") or []:
        flavors[psa["name"]] = dict(psa.get("flavors") or {})
        per_pod_set = {}
        for res, qty in (psa.get("resourceUsage") or {}).items():
            key = (psa.get("flavors", {}).get(res, ""), res)
            per_pod_set[res] = to_base_units(res, qty)
            usage[key] = usage.get(key, 0) + per_pod_set[res]
        pod_sets.append(PodSetAssignment(psa["name"], int(psa.get("count", 1)), flavors[psa["name"]], per_pod_set))
    return Assignment(flavors, usage, pod_sets=tuple(pod_sets))


def admitted_in(wl: Obj) -> str:
    """The ClusterQueue a Workload holds quota in; "" when it holds none."""
    if not _is_true(wl, QUOTA_RESERVED):
        return ""
    return (wl.get("status", {}).get("admission") or {}).get("clusterQueue", "")


def workload(obj: Obj, local_queues: dict[tuple[str, str], str]) -> Workload:
    """A stored Workload as the scheduler sees it. `local_queues` maps (namespace, LocalQueue) to its
    ClusterQueue; an admitted workload holds quota where it was admitted, even if its LocalQueue went."""
    meta, spec = obj["metadata"], obj.get("spec", {})
    reserved = _condition(obj, QUOTA_RESERVED)
    pod_sets = tuple(
        PodSet(ps["name"], int(ps.get("count", 1)),
               {res: to_base_units(res, q) for res, q in _first_container_requests(ps).items()})
        for ps in spec.get("podSets") or []
    )
    held = admission(obj)
    where = admitted_in(obj) if held else ""
    return Workload(
        key=f"{meta['namespace']}/{meta['name']}",
        namespace=meta["namespace"],
        cluster_queue=where or local_queues.get((meta["namespace"], spec.get("queueName", "")), ""),
        local_queue=spec.get("queueName", ""),
        priority=int(spec.get("priority") or 0),
        created=meta.get("creationTimestamp", ""),
        pod_sets=pod_sets,
        admission=held,
        admitted_at=(reserved or {}).get("lastTransitionTime", "") if held else "",
        uid=meta.get("uid", ""),
        job_uid=(meta.get("labels") or {}).get(LABEL_JOB_UID, ""),
    )


def live(wl: Obj) -> bool:
    """Workloads the scheduler considers: active and not finished."""
    return wl.get("spec", {}).get("active", True) is not False and not _is_true(wl, FINISHED)
