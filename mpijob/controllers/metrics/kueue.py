"""Kueue's own metrics (`pkg/metrics/metrics.go`), with its names, labels, buckets and meanings, so a
dashboard or alert written for Kueue reads the local cluster unchanged.

* Counters and histograms move where the event happens: `admitted` when the queueing controller
  admits a Workload, `evicted` and `preempted` when it evicts one (`controllers/kueue/queueing.py`).
* Gauges are computed when Prometheus scrapes (`QueueCollector`), from the same snapshot the scheduler
  decides on (`build_snapshot`), so they cannot drift from what the queues hold.

Every series carries `replica_role="standalone"`, Kueue's value for a manager without leader election.
The resource gauges are Kueue's optional `enableClusterQueueResources` ones, always on here; the
ClusterQueue's weighted share is reported whether or not fair sharing is on, as its status here always
holds `fairSharing.weightedShare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mpijob.api import Obj
from mpijob.api.core import resources
from mpijob.api.kueue.ledger import FR, Ledger
from mpijob.api.kueue.scheduler import fairsharing
from mpijob.api.kueue.scheduler.admissibility import inactive
from mpijob.api.kueue.snapshot import ClusterQueue, QueueingStrategy, Snapshot, Workload
from mpijob.api.names import QUOTA_RESERVED, REASON_WAITING_FOR_PREEMPTED
from mpijob.api.trainer.metrics import queued_at
from mpijob.controllers.kueue.workloads import build_snapshot
from mpijob.store.objects import Store

REPLICA_ROLE = "standalone"
ACTIVE, INADMISSIBLE = "active", "inadmissible"  # kueue_pending_workloads{status}
CQ_STATUS_ACTIVE, CQ_STATUS_PENDING = "active", "pending"  # kueue_cluster_queue_status{status}
CQ = ("cluster_queue", "priority_class", "replica_role")
LQ = ("name", "namespace", "priority_class", "replica_role")
CQ_RESOURCE = ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
LQ_RESOURCE = ("name", "namespace", "flavor", "resource", "replica_role")


def exponential_buckets(count: int) -> list[float]:
    """Kueue's `generateExponentialBuckets`: 1, then 2.5 doubling, `count` in all."""
    return [1.0] + [2.5 * 2**i for i in range(count - 1)]


def priority_class(wl: Obj) -> str:
    """Kueue's `PriorityClassName`: the Workload's priorityClassRef, "" without one."""
    return str(((wl.get("spec") or {}).get("priorityClassRef") or {}).get("name") or "")


def _value(resource: str, amount: float) -> float:
    """Kueue's `AsApproximateFloat64`: CPU in cores (the snapshot holds millicores), the rest as is."""
    return amount / 1000 if resource == "cpu" else float(amount)


class KueueMetrics:
    """The event counters and histograms, incremented by the queueing controller."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(name: str, doc: str, labels: tuple[str, ...], buckets: int) -> Histogram:
            return Histogram(name, doc, labels, registry=registry, buckets=exponential_buckets(buckets))

        self.admitted_total = counter("kueue_admitted_workloads_total",
                                      "The total number of admitted workloads per 'cluster_queue'", CQ)
        self.admission_wait = histogram(
            "kueue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'cluster_queue'", CQ, 16)
        self.lq_admitted_total = counter("kueue_local_queue_admitted_workloads_total",
                                         "The total number of admitted workloads per 'local_queue'", LQ)
        self.lq_admission_wait = histogram(
            "kueue_local_queue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'local_queue'", LQ, 14)
        self.evicted_total = counter(
            "kueue_evicted_workloads_total", "The number of evicted workloads per 'cluster_queue'",
            ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"))
        self.lq_evicted_total = counter(
            "kueue_local_queue_evicted_workloads_total", "The number of evicted workloads per 'local_queue'",
            ("name", "namespace", "reason", "underlying_cause", "priority_class", "replica_role"))
        self.preempted_total = counter(
            "kueue_preempted_workloads_total", "The number of preempted workloads per 'preempting_cluster_queue'",
            ("preempting_cluster_queue", "reason", "replica_role"))

    def admitted(self, wl: Obj, cluster_queue: str, at: float) -> None:
        """`wl` (as stored before its admission) was admitted by `cluster_queue` at `at`."""
        pc, meta = priority_class(wl), wl["metadata"]
        since = queued_at(wl)
        waited = max(at - since, 0.0) if since is not None else 0.0
        self.admitted_total.labels(cluster_queue, pc, REPLICA_ROLE).inc()
        self.admission_wait.labels(cluster_queue, pc, REPLICA_ROLE).observe(waited)
        lq = (wl.get("spec") or {}).get("queueName", "")
        self.lq_admitted_total.labels(lq, meta["namespace"], pc, REPLICA_ROLE).inc()
        self.lq_admission_wait.labels(lq, meta["namespace"], pc, REPLICA_ROLE).observe(waited)

    def evicted(self, wl: Obj, cluster_queue: str, reason: str) -> None:
        """`wl` lost the quota it held in `cluster_queue`, for `reason` (its Evicted condition's)."""
        pc = priority_class(wl)
        self.evicted_total.labels(cluster_queue, reason, "", pc, REPLICA_ROLE).inc()
        lq = (wl.get("spec") or {}).get("queueName", "")
        self.lq_evicted_total.labels(lq, wl["metadata"]["namespace"], reason, "", pc, REPLICA_ROLE).inc()

    def preempted(self, preempting_cluster_queue: str, reason: str) -> None:
        """A workload of `preempting_cluster_queue` preempted another, for `reason` (InClusterQueue, ...)."""
        self.preempted_total.labels(preempting_cluster_queue, reason, REPLICA_ROLE).inc()


def pending_status(wl: Obj | None, cq: ClusterQueue | None, cq_active: bool) -> str:
    """Kueue's `active` (in the admission heap) or `inadmissible` (an attempt failed, and it is not
    retried until something changes): a BestEffortFIFO workload whose last attempt found no room, or
    any workload of a queue that cannot admit. StrictFIFO keeps its failed head in the heap."""
    if cq is None or not cq_active:
        return INADMISSIBLE
    reserved = next((c for c in ((wl or {}).get("status") or {}).get("conditions") or []
                     if c.get("type") == QUOTA_RESERVED), None)
    tried = reserved is not None and reserved.get("status") == "False" \
        and reserved.get("reason") != REASON_WAITING_FOR_PREEMPTED
    return INADMISSIBLE if tried and cq.strategy == QueueingStrategy.BEST_EFFORT_FIFO else ACTIVE


class QueueCollector(Collector):
    """The queue gauges, computed at each scrape from the scheduler's snapshot of the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        snap = build_snapshot(self.store)
        stored = {f"{w['metadata']['namespace']}/{w['metadata']['name']}": w
                  for w in self.store.list(resources.WORKLOADS)[0]}
        local_queues = self.store.list(resources.LOCAL_QUEUES)[0]
        active = {name: inactive(snap, cq) is None for name, cq in snap.cluster_queues.items()}
        yield from _cluster_queue_gauges(snap, stored, active)
        yield from _local_queue_gauges(snap, stored, active, local_queues)


def _gauge(name: str, doc: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def _cluster_queue_gauges(snap: Snapshot, stored: dict[str, Obj], active: dict[str, bool]) -> Iterator[Metric]:
    pending = _gauge("kueue_pending_workloads", "The number of pending workloads, per 'cluster_queue' and 'status'",
                     ("cluster_queue", "status", "replica_role"))
    admitted = _gauge("kueue_admitted_active_workloads",
                      "The number of admitted Workloads that are active, per 'cluster_queue'",
                      ("cluster_queue", "replica_role"))
    status = _gauge("kueue_cluster_queue_status", "Reports 'cluster_queue' with its 'status'",
                    ("cluster_queue", "status", "replica_role"))
    nominal = _gauge("kueue_cluster_queue_nominal_quota",
                     "Reports the cluster_queue's resource nominal quota within all the flavors", CQ_RESOURCE)
    borrowing = _gauge("kueue_cluster_queue_borrowing_limit",
                       "Reports the cluster_queue's resource borrowing limit within all the flavors", CQ_RESOURCE)
    lending = _gauge("kueue_cluster_queue_lending_limit",
                     "Reports the cluster_queue's resource lending limit within all the flavors", CQ_RESOURCE)
    reservation = _gauge("kueue_cluster_queue_resource_reservation",
                         "Reports the cluster_queue's total resource reservation within all the flavors", CQ_RESOURCE)
    usage = _gauge("kueue_cluster_queue_resource_usage",
                   "Reports the cluster_queue's total resource usage within all the flavors", CQ_RESOURCE)
    share = _gauge("kueue_cluster_queue_weighted_share",
                   "Reports the maximum of the ratios of usage above nominal quota to the lendable resources in "
                   "the cohort, among the resources of the ClusterQueue, divided by its weight",
                   ("cluster_queue", "cohort", "replica_role"))
    ledger = Ledger(snap)
    for name, cq in sorted(snap.cluster_queues.items()):
        mine = [w for w in snap.workloads if w.cluster_queue == name]
        counts = {ACTIVE: 0, INADMISSIBLE: 0}
        for w in mine:
            if w.admission is None:
                counts[pending_status(stored.get(w.key), cq, active[name])] += 1
        for state, n in counts.items():
            pending.add_metric([name, state, REPLICA_ROLE], n)
        admitted.add_metric([name, REPLICA_ROLE], sum(1 for w in mine if w.admission is not None))
        for state in (CQ_STATUS_PENDING, CQ_STATUS_ACTIVE, "terminating"):
            status.add_metric([name, state, REPLICA_ROLE], float(state == (CQ_STATUS_ACTIVE if active[name] else
                                                                            CQ_STATUS_PENDING)))
        cohort = cq.cohort or ""
        for group in cq.groups:
            for fq in group.flavors:
                for q in fq.resources:
                    labels = [cohort, name, fq.name, q.name, REPLICA_ROLE]
                    fr: FR = (fq.name, q.name)
                    nominal.add_metric(labels, _value(q.name, q.nominal))
                    borrowing.add_metric(labels, math.inf if q.borrowing_limit is None
                                         else _value(q.name, q.borrowing_limit))
                    lending.add_metric(labels, math.inf if q.lending_limit is None else _value(q.name, q.lending_limit))
                    reservation.add_metric(labels, _value(q.name, ledger.used(name, fr)))
                    usage.add_metric(labels, _value(q.name, ledger.used(name, fr)))
        weighted = fairsharing.share(ledger, name).weighted()
        share.add_metric([name, cohort, REPLICA_ROLE], math.nan if math.isinf(weighted) else weighted)
    yield from (pending, admitted, status, nominal, borrowing, lending, reservation, usage, share)


def _local_queue_gauges(snap: Snapshot, stored: dict[str, Obj], active: dict[str, bool],
                        local_queues: list[Obj]) -> Iterator[Metric]:
    pending = _gauge("kueue_local_queue_pending_workloads",
                     "The number of pending workloads, per 'local_queue' and 'status'",
                     ("name", "namespace", "status", "replica_role"))
    admitted = _gauge("kueue_local_queue_admitted_active_workloads",
                      "The number of admitted Workloads that are active, per 'localQueue'",
                      ("name", "namespace", "replica_role"))
    reservation = _gauge("kueue_local_queue_resource_reservation",
                         "Reports the localQueue's total resource reservation within all the flavors", LQ_RESOURCE)
    usage = _gauge("kueue_local_queue_resource_usage",
                   "Reports the localQueue's total resource usage within all the flavors", LQ_RESOURCE)
    for lq in local_queues:
        ns, name = lq["metadata"]["namespace"], lq["metadata"]["name"]
        mine: list[Workload] = [w for w in snap.workloads if w.namespace == ns and w.local_queue == name]
        counts = {ACTIVE: 0, INADMISSIBLE: 0}
        used: dict[FR, int] = {}
        for w in mine:
            if w.admission is None:
                cq = snap.cluster_queues.get(w.cluster_queue)
                counts[pending_status(stored.get(w.key), cq, active.get(w.cluster_queue, False))] += 1
            else:
                for fr, amount in w.admission.usage.items():
                    used[fr] = used.get(fr, 0) + amount
        for state, n in counts.items():
            pending.add_metric([name, ns, state, REPLICA_ROLE], n)
        admitted.add_metric([name, ns, REPLICA_ROLE], sum(1 for w in mine if w.admission is not None))
        for (flavor, resource), amount in sorted(used.items()):
            labels = [name, ns, flavor, resource, REPLICA_ROLE]
            reservation.add_metric(labels, _value(resource, amount))
            usage.add_metric(labels, _value(resource, amount))
    yield from (pending, admitted, reservation, usage)
