"""Kueue's view of a TrainJob: its `Workload` object, and the snapshot the scheduler decides on.

Every TrainJob gets one Workload (`trainjob-<name>-<hash>`), with a `launcher` and a `node` pod set
whose counts and per-pod requests come from the run plan. The snapshot is rebuilt from the store on
every scheduling cycle, so queue state survives a restart with nothing else to persist.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mpijob.api import resources as r
from mpijob.api.kueue.capacity import to_base_units
from mpijob.api.plan import RunPlan
from mpijob.controllers import conditions as cond
from mpijob.controllers.kueue.scheduler.snapshot import (
    Assignment,
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    ResourceGroup,
    ResourceQuota,
    Snapshot,
    Workload,
)
from mpijob.store.objects import Store

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io"
QUEUE_LABEL = f"{KUEUE}/queue-name"
PRIORITY_LABEL = f"{KUEUE}/priority-class"
JOB_UID_LABEL = f"{KUEUE}/job-uid"
WAITING_ANNOTATION = "mpijob.io/waiting"  # the human "why waiting" message, for every client to show
DEFAULT_FLAVOR, DEFAULT_CLUSTER_QUEUE, DEFAULT_LOCAL_QUEUE = "default-flavor", "cluster-queue", "user-queue"


def workload_name(tj: Obj) -> str:
    digest = hashlib.sha256(tj["metadata"]["uid"].encode()).hexdigest()[:5]
    return f"trainjob-{tj['metadata']['name']}-{digest}"


def _requests(resources: dict) -> dict[str, str]:
    """Per-pod requests as Kubernetes defaults them: requests, else limits."""
    out = {k: str(v) for k, v in (resources.get("limits") or {}).items()}
    out.update({k: str(v) for k, v in (resources.get("requests") or {}).items()})
    return out


def priority_of(store: Store, tj: Obj) -> tuple[int, str | None]:
    name = tj["metadata"].get("labels", {}).get(PRIORITY_LABEL)
    if not name:
        return 0, None
    wpc = store.try_get(r.WORKLOAD_PRIORITY_CLASSES, "", name)
    return (int(wpc.get("value", 0)) if wpc else 0), name


def render_workload(store: Store, tj: Obj, plan: RunPlan, owner: Obj) -> Obj:
    meta = tj["metadata"]
    priority, priority_class = priority_of(store, tj)
    pod_sets = []
    for rjob in ("launcher", "node"):
        pods = [p for p in plan.pods if p.rjob == rjob]
        if pods:
            pod_sets.append({
                "name": rjob,
                "count": len(pods),
                "template": {"spec": {"containers": [{"name": "node", "image": pods[0].image,
                                                      "resources": {"requests": _requests(pods[0].resources)}}]}},
            })
    spec: Obj = {
        "active": not tj.get("spec", {}).get("suspend", False),
        "queueName": meta.get("labels", {}).get(QUEUE_LABEL, DEFAULT_LOCAL_QUEUE),
        "priority": priority,
        "podSets": pod_sets,
    }
    if priority_class:
        spec["priorityClassRef"] = {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": priority_class}
    return {
        "apiVersion": f"{KUEUE}/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": workload_name(tj),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "ownerReferences": [owner] if owner else [],
        },
        "spec": spec,
    }


# -- snapshot ----------------------------------------------------------------------------------


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
    return ClusterQueue(
        name=obj["metadata"]["name"],
        admission_checks=tuple(check["name"] for check in checks),
        groups=groups,
        cohort=spec.get("cohortName") or None,
        strategy=spec.get("queueingStrategy", "BestEffortFIFO"),
        within_cluster_queue=preemption.get("withinClusterQueue", "Never"),
        reclaim_within_cohort=preemption.get("reclaimWithinCohort", "Never"),
        borrow_within_cohort=borrow.get("policy", "Never"),
        borrow_max_priority=borrow.get("maxPriorityThreshold"),
        fair_weight=float((spec.get("fairSharing") or {}).get("weight", 1)),
        stop_policy=spec.get("stopPolicy", "None"),
        namespace_selector=spec.get("namespaceSelector"),
        creation=obj["metadata"].get("creationTimestamp", ""),
    )


def _admission(wl: Obj) -> Assignment | None:
    if not cond.is_true(wl, "QuotaReserved"):
        return None
    admission = wl.get("status", {}).get("admission") or {}
    flavors: dict[str, dict[str, str]] = {}
    usage: dict[tuple[str, str], int] = {}
    for psa in admission.get("podSetAssignments") or []:
        flavors[psa["name"]] = dict(psa.get("flavors") or {})
        for res, qty in (psa.get("resourceUsage") or {}).items():
            key = (psa.get("flavors", {}).get(res, ""), res)
            usage[key] = usage.get(key, 0) + to_base_units(res, qty)
    return Assignment(flavors, usage)


def workload(obj: Obj, local_queues: dict[tuple[str, str], str]) -> Workload:
    meta, spec = obj["metadata"], obj.get("spec", {})
    reserved = cond.get(obj, "QuotaReserved")
    pod_sets = tuple(
        PodSet(ps["name"], int(ps.get("count", 1)),
               {res: to_base_units(res, q) for res, q in
                ((ps.get("template", {}).get("spec", {}).get("containers") or [{}])[0]
                 .get("resources", {}).get("requests") or {}).items()})
        for ps in spec.get("podSets") or []
    )
    admission = _admission(obj)
    admitted_in = (obj.get("status", {}).get("admission") or {}).get("clusterQueue", "") if admission else ""
    return Workload(
        key=f"{meta['namespace']}/{meta['name']}",
        namespace=meta["namespace"],
        # an admitted workload holds quota where it was admitted, even if its LocalQueue went away
        cluster_queue=admitted_in or local_queues.get((meta["namespace"], spec.get("queueName", "")), ""),
        local_queue=spec.get("queueName", ""),
        priority=int(spec.get("priority") or 0),
        created=meta.get("creationTimestamp", ""),
        pod_sets=pod_sets,
        admission=admission,
        admitted_at=(reserved or {}).get("lastTransitionTime", "") if reserved and reserved.get("status") == "True" else "",
        uid=meta.get("uid", ""),
        job_uid=(meta.get("labels") or {}).get(JOB_UID_LABEL, ""),
    )


def live(wl: Obj) -> bool:
    """Workloads the scheduler considers: active and not finished."""
    return wl.get("spec", {}).get("active", True) is not False and not cond.is_true(wl, "Finished")


def stop_policy(lq: Obj) -> str:
    """A LocalQueue's stopPolicy (`None`, `Hold`, `HoldAndDrain`)."""
    return str((lq.get("spec") or {}).get("stopPolicy") or "None")


def local_queue_map(store: Store) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) → its ClusterQueue."""
    return {
        (lq["metadata"]["namespace"], lq["metadata"]["name"]): lq.get("spec", {}).get("clusterQueue", "")
        for lq in store.list(r.LOCAL_QUEUES)[0]
    }


def build_snapshot(store: Store) -> Snapshot:
    """Everything a scheduling cycle decides on. AdmissionCheck and Topology objects are not served
    here, so the sets of existing ones stay empty: a queue that needs one is inactive, as in Kueue."""
    local_queues = local_queue_map(store)
    flavors = store.list(r.RESOURCE_FLAVORS)[0]
    stops = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): stop for lq in store.list(r.LOCAL_QUEUES)[0]
             if (stop := stop_policy(lq)) != "None"}
    return Snapshot(
        cluster_queues={cq["metadata"]["name"]: cluster_queue(cq) for cq in store.list(r.CLUSTER_QUEUES)[0]},
        flavors=frozenset(f["metadata"]["name"] for f in flavors),
        flavor_topologies={f["metadata"]["name"]: str(f["spec"]["topologyName"]) for f in flavors
                           if (f.get("spec") or {}).get("topologyName")},
        workloads=tuple(workload(wl, local_queues) for wl in store.list(r.WORKLOADS)[0] if live(wl)),
        local_queue_stops=stops,
        namespace_labels={ns["metadata"]["name"]: ns["metadata"].get("labels") or {}
                          for ns in store.list(r.NAMESPACES)[0]},
    )


def default_objects(capacity: dict[str, str]) -> list[tuple[r.Resource, Obj]]:
    """What a new user needs no configuration for: one flavor, one queue over the whole machine."""
    resources = sorted(capacity)
    return [
        (r.RESOURCE_FLAVORS, {"metadata": {"name": DEFAULT_FLAVOR}, "spec": {}}),
        (r.CLUSTER_QUEUES, {
            "metadata": {"name": DEFAULT_CLUSTER_QUEUE, "annotations": {"mpijob.io/capacity": "machine"}},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{
                    "coveredResources": resources,
                    "flavors": [{"name": DEFAULT_FLAVOR,
                                 "resources": [{"name": n, "nominalQuota": capacity[n]} for n in resources]}],
                }],
            },
        }),
        (r.LOCAL_QUEUES, {"metadata": {"name": DEFAULT_LOCAL_QUEUE, "namespace": "default"},
                          "spec": {"clusterQueue": DEFAULT_CLUSTER_QUEUE}}),
    ]
