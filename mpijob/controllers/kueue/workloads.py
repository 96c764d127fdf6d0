"""The store side of Kueue: a TrainJob's Workload with its priority looked up, the default queues, and
the snapshot a scheduling cycle decides on.

The wire format itself (labels, Workload ↔ snapshot types) is `mpijob.api.kueue.adapters`; this module
adds the reads. The snapshot is rebuilt from the store whenever the store changed, so queue state
survives a restart with nothing else to persist; `SnapshotCache` keeps that rebuild incremental.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from mpijob.api import Obj
from mpijob.api.core import resources
from mpijob.api.kueue.adapters import (
    DEFAULT_CLUSTER_QUEUE,
    DEFAULT_FLAVOR,
    DEFAULT_LOCAL_QUEUE,
    cluster_queue,
    live,
    stop_policy,
    workload,
    workload_object,
)
from mpijob.api.kueue.snapshot import ClusterQueue, Snapshot, StopPolicy, Workload
from mpijob.api.names import ANNOTATION_CAPACITY, LABEL_PRIORITY_CLASS
from mpijob.api.trainer.plan import RunPlan
from mpijob.store.objects import Store


def priority_of(store: Store, tj: Obj) -> tuple[int, str | None]:
    """The TrainJob's priority and WorkloadPriorityClass (label kueue.x-k8s.io/priority-class)."""
    name = tj["metadata"].get("labels", {}).get(LABEL_PRIORITY_CLASS)
    if not name:
        return 0, None
    wpc = store.try_get(resources.WORKLOAD_PRIORITY_CLASSES, "", name)
    return (int(wpc.get("value", 0)) if wpc else 0), name


def render_workload(store: Store, tj: Obj, plan: RunPlan, owner: Obj) -> Obj:
    """The Workload of `tj`, its priority read from its WorkloadPriorityClass."""
    return workload_object(tj, plan, owner, *priority_of(store, tj))


def local_queue_map(store: Store) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) → its ClusterQueue."""
    return {
        (lq["metadata"]["namespace"], lq["metadata"]["name"]): lq.get("spec", {}).get("clusterQueue", "")
        for lq in store.list(resources.LOCAL_QUEUES)[0]
    }


# -- the snapshot ----------------------------------------------------------------------------------


class SnapshotCache:
    """The last snapshot of one store, and the typed form of every object in it.

    Kueue's scheduler reads an in-memory cache that watch events keep current, and converts only the
    objects that changed. Here the store is the source of truth, so `snapshot()`:

    * returns the previous Snapshot while the store's resourceVersion has not moved (every write,
      delete included, moves it), which is every visibility request and admission between cycles;
    * otherwise lists the objects again and converts only those whose resourceVersion changed (for a
      Workload, also when the ClusterQueue its LocalQueue points at changed).

    The result is the same as converting everything afresh. Snapshots are shared, so nobody may
    mutate one (nothing does: the scheduler copies what it charges).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # admission may build from a worker thread
        self._version = ""
        self._snapshot: Snapshot | None = None
        self._workloads: dict[tuple[str, str], _Cached] = {}
        self._queues: dict[str, tuple[str, ClusterQueue]] = {}  # name → (rv, typed)

    def snapshot(self, store: Store) -> Snapshot:
        with self._lock:
            version = store.resource_version  # read first: what is listed next is at least this new
            if self._snapshot is not None and version == self._version:
                return self._snapshot
            snap = self._build(store)
            self._version, self._snapshot = version, snap
            return snap

    def _build(self, store: Store) -> Snapshot:
        """Everything a scheduling cycle decides on. AdmissionCheck and Topology objects are not served
        here, so the sets of existing ones stay empty: a queue that needs one is inactive, as in Kueue."""
        local_queues = store.list(resources.LOCAL_QUEUES)[0]
        targets = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): lq.get("spec", {}).get("clusterQueue", "")
                   for lq in local_queues}
        stops: dict[tuple[str, str], StopPolicy] = {}
        for lq in local_queues:
            if (stop := stop_policy(lq)) is not StopPolicy.NONE:
                stops[(lq["metadata"]["namespace"], lq["metadata"]["name"])] = stop
        flavors = store.list(resources.RESOURCE_FLAVORS)[0]
        return Snapshot(
            cluster_queues=self._cluster_queues(store.list(resources.CLUSTER_QUEUES)[0]),
            flavors=frozenset(f["metadata"]["name"] for f in flavors),
            flavor_topologies={f["metadata"]["name"]: str(f["spec"]["topologyName"]) for f in flavors
                               if (f.get("spec") or {}).get("topologyName")},
            workloads=self._typed_workloads(store, targets),
            local_queue_stops=stops,
            namespace_labels={ns["metadata"]["name"]: ns["metadata"].get("labels") or {}
                              for ns in store.list(resources.NAMESPACES)[0]},
        )

    def cached(self, namespace: str, name: str) -> _Cached | None:
        return self._workloads.get((namespace, name))

    def _cluster_queues(self, objs: list[Obj]) -> dict[str, ClusterQueue]:
        seen: dict[str, tuple[str, ClusterQueue]] = {}
        for obj in objs:
            name, rv = obj["metadata"]["name"], obj["metadata"].get("resourceVersion", "")
            cached = self._queues.get(name)
            seen[name] = cached if cached is not None and cached[0] == rv and rv else (rv, cluster_queue(obj))
        self._queues = seen
        return {name: cq for name, (_, cq) in seen.items()}

    def _typed_workloads(self, store: Store, targets: dict[tuple[str, str], str]) -> tuple[Workload, ...]:
        """Reads only the Workloads whose resourceVersion moved, or whose queue now points elsewhere."""
        seen: dict[tuple[str, str], _Cached] = {}
        out = []
        for key, rv in store.versions(resources.WORKLOADS):
            cached = self._workloads.get(key)
            if cached is None or cached.rv != rv or (cached.typed is not None
                                                     and cached.target != targets.get(cached.local_queue, "")):
                obj = store.try_get(resources.WORKLOADS, *key)
                if obj is None:  # deleted since it was listed
                    continue
                cached = _Cached.of(obj, targets)
            seen[key] = cached
            if cached.typed is not None:
                out.append(cached.typed)
        self._workloads = seen
        return tuple(out)


@dataclass(frozen=True)
class _Cached:
    """One stored Workload as the cache last read it: its typed form (None when it is not live) for the
    ClusterQueue it targeted. Not the stored object: a thousand pending ones kept as parsed JSON made every
    full garbage collection of the server tens of milliseconds longer (bench/load.py)."""

    rv: int
    local_queue: tuple[str, str]  # (namespace, spec.queueName)
    target: str
    typed: Workload | None

    @classmethod
    def of(cls, obj: Obj, targets: dict[tuple[str, str], str]) -> _Cached:
        meta = obj["metadata"]
        local_queue = (meta["namespace"], obj.get("spec", {}).get("queueName", ""))
        return cls(int(meta["resourceVersion"]), local_queue, targets.get(local_queue, ""),
                   workload(obj, targets) if live(obj) else None)


_CACHES: weakref.WeakKeyDictionary[Store, SnapshotCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def build_snapshot(store: Store) -> Snapshot:
    """The scheduler's input, as the store holds it now (through the store's own SnapshotCache)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = SnapshotCache()
    return cache.snapshot(store)


def stored_version(store: Store, key: str) -> int | None:
    """The resourceVersion Workload `key` ("namespace/name") had in the store's last snapshot (None: it had
    none), so a cycle can tell, without reading it, that a Workload is still as it last wrote it."""
    ns, _, name = key.partition("/")
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
    cached = cache.cached(ns, name) if cache is not None else None
    return cached.rv if cached is not None else None


def default_objects(capacity: dict[str, str]) -> list[tuple[resources.Resource, Obj]]:
    """What a new user needs no configuration for: one flavor, one queue over the whole machine."""
    covered = sorted(capacity)
    return [
        (resources.RESOURCE_FLAVORS, {"metadata": {"name": DEFAULT_FLAVOR}, "spec": {}}),
        (resources.CLUSTER_QUEUES, {
            "metadata": {"name": DEFAULT_CLUSTER_QUEUE, "annotations": {ANNOTATION_CAPACITY: "machine"}},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{
                    "coveredResources": covered,
                    "flavors": [{"name": DEFAULT_FLAVOR,
                                 "resources": [{"name": n, "nominalQuota": capacity[n]} for n in covered]}],
                }],
            },
        }),
        (resources.LOCAL_QUEUES, {"metadata": {"name": DEFAULT_LOCAL_QUEUE, "namespace": "default"},
                          "spec": {"clusterQueue": DEFAULT_CLUSTER_QUEUE}}),
    ]
