"""The queueing checks: the job's LocalQueue exists and leads to a ClusterQueue that admits its namespace,
and the job fits the ClusterQueue's quota and the namespace's ResourceQuotas at all."""

from __future__ import annotations

import dataclasses

from mpijob.api import Obj, names
from mpijob.api.core import quota
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import LIMIT_RANGES, RESOURCE_QUOTAS
from mpijob.api.core.selectors import format_label_selector, parse_labels
from mpijob.api.kueue import adapters, conversion
from mpijob.api.kueue.fit import never_fits
from mpijob.api.kueue.snapshot import ClusterQueue, Snapshot, Workload
from mpijob.client import core
from mpijob.client.core import Call, Op
from mpijob.client.doctor.model import Check, Facts, could_not, failed, passed, skipped, warned
from mpijob.client.errors import Unreachable
from mpijob.client.kueue import Kueue

NEEDS_KUEUE = "Kueue is not installed: nothing to queue in"


def _kueue_object(facts: Facts, obj: Obj) -> Obj:
    """A Kueue object as v1beta2 (what `adapters` reads), whichever version the cluster served."""
    return conversion.up(obj) if facts.kueue_version == names.KUEUE_V1BETA1 else obj


def _queue_names(facts: Facts, kueue: Kueue) -> Op[list[str]]:
    try:
        return [q["metadata"]["name"] for q in (yield from kueue.list("localqueues", facts.namespace))]
    except (ApiError, Unreachable):
        return []


def queue(facts: Facts) -> Op[Check]:
    """5. The LocalQueue the job names (`kueue.x-k8s.io/queue-name`, else the namespace's default) exists and
    points to an existing ClusterQueue whose namespaceSelector admits the namespace. A job without the label
    where the namespace needs one fails or warns as Kueue would treat it."""
    if facts.kueue_version is None:
        return skipped("queue", NEEDS_KUEUE)
    kueue, ns = Kueue(), facts.namespace
    label = ((facts.job.get("metadata") or {}).get("labels") or {}).get(names.LABEL_QUEUE_NAME)
    try:
        ns_labels = yield from facts.namespace_labels()
    except (ApiError, Unreachable):
        ns_labels = {names.LABEL_NAMESPACE_NAME: ns}
    name = label
    made_on_demand = False
    if not name:
        existing = yield from _queue_names(facts, kueue)
        add = (f"add the label {names.LABEL_QUEUE_NAME}: <LocalQueue> to the TrainJob's metadata"
               + (f" (LocalQueues in {ns}: {', '.join(existing)})" if existing else ""))
        if ns_labels.get(names.LABEL_OPENSHIFT_KUEUE_MANAGED) == "true":
            return failed("queue", f"the job has no {names.LABEL_QUEUE_NAME} label, and namespace {ns} is labelled "
                          f"{names.LABEL_OPENSHIFT_KUEUE_MANAGED}=true: Kueue manages every job there and refuses "
                          "one without a queue", add)
        if facts.local:
            name, made_on_demand = adapters.DEFAULT_LOCAL_QUEUE, True
        elif names.KUEUE_DEFAULT_LOCAL_QUEUE in existing:
            name = names.KUEUE_DEFAULT_LOCAL_QUEUE
        elif existing:
            return warned("queue", f"the job has no {names.LABEL_QUEUE_NAME} label while namespace {ns} has "
                          "LocalQueues: Kueue either leaves it outside every queue and its quota "
                          "(manageJobsWithoutQueueName: false, the default) or keeps it suspended for good (true)", add)
        else:
            return warned("queue", f"the job has no {names.LABEL_QUEUE_NAME} label and namespace {ns} has no "
                          "LocalQueue: Kueue will not queue it (or, when it manages jobs without a queue name, "
                          "keep it suspended)", "ask an administrator for a LocalQueue in the namespace, then "
                          f"label the job with {names.LABEL_QUEUE_NAME}")
    facts.local_queue = name
    try:
        lq = _kueue_object(facts, (yield from kueue.get("localqueues", name, ns)))
    except ApiError as exc:
        if exc.code == 404 and made_on_demand:
            lq = {"metadata": {"name": name}, "spec": {"clusterQueue": adapters.DEFAULT_CLUSTER_QUEUE}}
        elif exc.code == 404:
            existing = yield from _queue_names(facts, kueue)
            return failed("queue", f"LocalQueue {name!r} does not exist in namespace {ns}"
                          + (f" (there: {', '.join(existing)})" if existing else " (it has none)"),
                          f"set the label {names.LABEL_QUEUE_NAME} to an existing LocalQueue, or have an "
                          f"administrator create LocalQueue {name} in {ns}")
        else:
            return could_not("queue", exc, f"LocalQueue {name}")
    except Unreachable as exc:
        return could_not("queue", exc, f"LocalQueue {name}")
    cq_name = str((lq.get("spec") or {}).get("clusterQueue") or "")
    how = "" if label else (" (made on demand by the local cluster for jobs without a queue label)" if made_on_demand
                            else " (the namespace's default LocalQueue)")
    try:
        cq = _kueue_object(facts, (yield from kueue.get("clusterqueues", cq_name)))
    except ApiError as exc:
        if exc.code == 404:
            return failed("queue", f"LocalQueue {name}{how} points to ClusterQueue {cq_name!r}, which does not exist: "
                          "the job would wait forever", f"create ClusterQueue {cq_name}, or point LocalQueue {name} "
                          "(spec.clusterQueue) to an existing one (`mpijob get clusterqueues`)")
        return could_not("queue", exc, f"ClusterQueue {cq_name}")
    except Unreachable as exc:
        return could_not("queue", exc, f"ClusterQueue {cq_name}")
    facts.cluster_queue = cq
    selector = (cq.get("spec") or {}).get("namespaceSelector")
    if selector is None or not all(r.matches(ns_labels) for r in parse_labels(format_label_selector(selector))):
        shown = "none (it admits no namespace)" if selector is None else format_label_selector(selector) or "{}"
        return failed("queue", f"ClusterQueue {cq_name} does not admit namespace {ns}: its namespaceSelector is "
                      f"{shown}", f"have an administrator widen ClusterQueue {cq_name}'s namespaceSelector to "
                      f"namespace {ns}'s labels")
    stop = adapters.stop_policy(cq)
    if stop != adapters.stop_policy({}):
        return warned("queue", f"LocalQueue {name}{how} → ClusterQueue {cq_name}, which is stopped "
                      f"(stopPolicy: {stop}): it admits nothing new", f"ask an administrator to set ClusterQueue "
                      f"{cq_name}'s stopPolicy to None")
    return passed("queue", f"LocalQueue {name}{how} → ClusterQueue {cq_name}")


# -- quota ---------------------------------------------------------------------------------------------


def _workload(facts: Facts, ranges: list[Obj]) -> Workload:
    """The job's Workload as Kueue's scheduler reads it, its pods' requests after the LimitRange defaults."""
    assert facts.plan is not None
    plan = dataclasses.replace(facts.plan, pods=[dataclasses.replace(p, resources=quota.defaulted(p.resources, ranges))
                                                 for p in facts.plan.pods])
    meta = {**(facts.job.get("metadata") or {}), "namespace": facts.namespace, "uid": facts.plan.uid or "doctor"}
    obj = adapters.workload_object({**facts.job, "metadata": meta}, plan, None, 0, None)
    cq = (facts.cluster_queue or {}).get("metadata", {}).get("name", "")
    return adapters.workload(obj, {(facts.namespace, obj["spec"]["queueName"]): cq})


def cannot_admit(cq: ClusterQueue, others: list[ClusterQueue] | None, wl: Workload) -> str | None:
    """The scheduler's own answer (`never_fits`) to whether the ClusterQueue could ever admit the job, over a
    snapshot of what the doctor read: the queue and the others, for what its cohort may lend. None when it
    could, and when the queue is in a cohort whose other queues could not be read (no answer then)."""
    if others is None and cq.cohort is not None:
        return None
    queues = {q.name: q for q in others or ()}
    queues[cq.name] = cq
    return never_fits(Snapshot(queues, frozenset(), ()), wl)


def _quota_reads(facts: Facts) -> Op[tuple[list[Obj], list[Obj], str]]:
    """The namespace's LimitRanges and ResourceQuotas, and what could not be read."""
    try:
        ranges = core.items((yield from Call("GET", core.collection_path(LIMIT_RANGES, facts.namespace))))
        quotas = core.items((yield from Call("GET", core.collection_path(RESOURCE_QUOTAS, facts.namespace))))
    except (ApiError, Unreachable) as exc:
        reason = "forbidden" if isinstance(exc, ApiError) and exc.code == 403 else str(exc)
        return [], [], f"the namespace's ResourceQuotas and LimitRanges ({reason})"
    return ranges, quotas, ""


def quota_fit(facts: Facts) -> Op[Check]:
    """6. The job fits at all: its pods' requests summed against the ClusterQueue's nominal quota plus what it
    may borrow, per resource and flavor, and against the namespace's ResourceQuotas (after its LimitRanges)."""
    if facts.plan is None:
        return skipped("quota", "needs the job's runtime (see the runtime check)")
    ranges, quotas, unread = yield from _quota_reads(facts)
    pods = [quota.defaulted(p.resources, ranges) for p in facts.plan.pods]
    refusals = quota.limit_violations(pods, ranges)
    never = quota.check(quotas, {}, pods)
    if refusals or never:
        return failed("quota",
                      f"namespace {facts.namespace} refuses the job: {quota.aggregate(refusals or [never or ''])}",
                      "ask for less in spec.trainer.resourcesPerNode or fewer nodes, or have the namespace's "
                      "ResourceQuota/LimitRange raised")
    used: dict[str, int] = {}
    for q in quotas:
        for key, value in quota.resource_list(((q.get("status") or {}).get("used")) or {}).items():
            used[key] = max(used.get(key, 0), value)
    busy = quota.check(quotas, used, pods)
    notes = []
    if facts.cluster_queue is not None:
        cq = adapters.cluster_queue(facts.cluster_queue)
        try:
            others: list[ClusterQueue] | None = [adapters.cluster_queue(_kueue_object(facts, o)) for o in
                                                 (yield from Kueue().list("clusterqueues"))]
        except (ApiError, Unreachable):
            others = None
        why = cannot_admit(cq, others, _workload(facts, ranges))
        if others is None and cq.cohort is not None:
            unread = unread or f"what cohort {cq.cohort} lends ClusterQueue {cq.name} (its queues could not be read)"
        elif why:
            return failed("quota", why, f"ask for less in spec.trainer.resourcesPerNode or fewer nodes, or have "
                          f"ClusterQueue {cq.name}'s nominalQuota (or borrowingLimit) raised")
        else:
            notes.append(f"ClusterQueue {cq.name}'s quota")
    if quotas:
        notes.append(f"{len(quotas)} ResourceQuota(s)")
    if busy:
        return warned("quota", f"the job fits {' and '.join(notes)}, but not now: {busy}",
                      "it waits until other jobs in the namespace finish; or ask for less")
    if unread:
        return warned("quota", f"could not check {unread}" + (f"; it fits {notes[0]}" if notes else ""),
                      "run doctor as a user who may read them, or ask the cluster's administrator")
    unqueued = " (its ClusterQueue's quota is unknown: see the queue check)" if facts.kueue_version and \
        facts.cluster_queue is None else ""
    return passed("quota", (f"the job fits {' and '.join(notes)}" if notes else "no quota constrains the job")
                  + unqueued)
