"""The queueing controller and the snapshot on a real store (no server): the admission it writes is the
scheduler's assignment rendered by `to_api`, a preempted Workload gives its quota back in the same write
that marks it Evicted (so no snapshot ever holds a workload that is evicted yet still holds quota), and
the snapshot cache sees every change."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api import Obj
from mpijob.api.core import resources as r
from mpijob.api.kueue.adapters import admission
from mpijob.api.names import EVICTED, PREEMPTED, QUOTA_RESERVED, REASON_IN_CLUSTER_QUEUE
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.kueue.workloads import SnapshotCache, build_snapshot
from mpijob.store.objects import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "objects.db")
    s.create(r.RESOURCE_FLAVORS, {"metadata": {"name": "f"}, "spec": {}})
    s.create(r.CLUSTER_QUEUES, {"metadata": {"name": "team"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [
            {"name": "cpu", "nominalQuota": "4"}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}})
    s.create(r.LOCAL_QUEUES, {"metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "team"}})
    yield s
    s.close()


def _workload(store: Store, name: str, priority: int, node_cpu: str, nodes: int) -> None:
    def pod_set(ps: str, count: int, requests: Obj) -> Obj:
        return {"name": ps, "count": count,
                "template": {"spec": {"containers": [{"name": "node", "resources": {"requests": requests}}]}}}

    store.create(r.WORKLOADS, {"metadata": {"name": name, "namespace": "default"}, "spec": {
        "queueName": "lq", "active": True, "priority": priority,
        "podSets": [pod_set("launcher", 1, {"cpu": "500m"}), pod_set("node", nodes, {"cpu": node_cpu, "memory": "1Gi"})]}})


def _cycle(store: Store) -> None:
    async def evict(_: Obj, __: str) -> None:
        return None

    asyncio.run(Queueing(store, evict).cycle())


def _condition(obj: Obj, kind: str) -> tuple[str, str]:
    c = next(c for c in obj["status"]["conditions"] if c["type"] == kind)
    return c["status"], c["reason"]


def test_the_admission_written_is_the_assignment_rendered_per_pod_set(store: Store) -> None:
    _workload(store, "low", 0, "1500m", 2)
    _cycle(store)
    wl = store.get(r.WORKLOADS, "default", "low")
    assert wl["status"]["admission"] == {"clusterQueue": "team", "podSetAssignments": [
        {"name": "launcher", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "500m"}, "count": 1},
        {"name": "node", "flavors": {"cpu": "f", "memory": "f"},
         "resourceUsage": {"cpu": "3", "memory": str(2 * 2**30)}, "count": 2},
    ]}
    held = admission(wl)
    assert held is not None and held.usage == {("f", "cpu"): 3500, ("f", "memory"): 2 * 2**30}
    assert held.to_api("team") == wl["status"]["admission"]  # read back, it renders the same


def test_a_preempted_workload_gives_its_quota_back_in_the_write_that_evicts_it(store: Store) -> None:
    _workload(store, "low", 0, "1500m", 2)
    _cycle(store)
    _workload(store, "high", 10, "1", 3)  # 3.5 cpu: fits only without `low`
    _cycle(store)
    low = store.get(r.WORKLOADS, "default", "low")
    assert _condition(low, EVICTED) == ("True", PREEMPTED)
    assert _condition(low, PREEMPTED) == ("True", REASON_IN_CLUSTER_QUEUE)
    assert _condition(low, QUOTA_RESERVED)[0] == "False" and "admission" not in low["status"]
    by_key = {w.key: w for w in build_snapshot(store).workloads}
    assert by_key["default/low"].admission is None  # pending again, never "evicted but holding quota"
    _cycle(store)
    assert _condition(store.get(r.WORKLOADS, "default", "high"), QUOTA_RESERVED) == ("True", QUOTA_RESERVED)


def test_the_snapshot_is_reused_while_nothing_changed_and_rebuilt_when_anything_did(store: Store) -> None:
    _workload(store, "a", 0, "1", 1)
    first = build_snapshot(store)
    assert build_snapshot(store) is first
    lq = store.get(r.LOCAL_QUEUES, "default", "lq")
    lq["spec"]["clusterQueue"] = "elsewhere"  # the workload did not change, the queue it resolves to did
    store.update(r.LOCAL_QUEUES, lq)
    second = build_snapshot(store)
    assert second is not first and second.workloads[0].cluster_queue == "elsewhere"
    assert second == SnapshotCache().snapshot(store)  # the same as converting everything afresh
    store.delete(r.WORKLOADS, "default", "a")
    assert build_snapshot(store).workloads == ()


def test_a_cycle_reads_no_pending_workload_still_as_it_last_left_it(store: Store) -> None:
    """Why a workload waits is written once; later cycles with nothing new to say read no Workload (a
    thousand pending ones cost each cycle 30 ms), until someone else writes it: then it is said again."""
    async def evict(_: Obj, __: str) -> None:
        return None

    _workload(store, "big", 0, "8", 1)  # 8 cpu in a queue of 4: it waits
    queueing = Queueing(store, evict)
    reads: list[str] = []
    read = queueing._workload
    queueing._workload = lambda key: reads.append(key) or read(key)  # type: ignore[method-assign]
    asyncio.run(queueing.cycle())
    said = store.get(r.WORKLOADS, "default", "big")
    assert _condition(said, QUOTA_RESERVED)[0] == "False"
    asyncio.run(queueing.cycle())  # its annotations were written after its condition: seen once more
    reads.clear()
    asyncio.run(queueing.cycle())
    assert reads == []
    said["status"]["conditions"] = [c for c in said["status"]["conditions"] if c["type"] != QUOTA_RESERVED]
    store.update(r.WORKLOADS, said, status=True)
    asyncio.run(queueing.cycle())
    assert reads == ["default/big"]
    assert _condition(store.get(r.WORKLOADS, "default", "big"), QUOTA_RESERVED)[0] == "False"
