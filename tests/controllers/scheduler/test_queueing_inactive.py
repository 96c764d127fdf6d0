"""The queueing controller on a real store (no server): what it writes for an inactive ClusterQueue — the
queue's and its LocalQueue's `Active` conditions, the Workload's QuotaReserved=False, the plain "why" —
and that removing the reference admits the workload in the next cycle."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mpijob.api.core import resources as r
from mpijob.api.names import ANNOTATION_ESTIMATED_START as ESTIMATED_START
from mpijob.api.names import ANNOTATION_WAITING as WAITING_ANNOTATION
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.store.objects import Store

Obj = dict[str, Any]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "objects.db")
    yield s
    s.close()


def _cycle(store: Store) -> None:
    async def evict(_: Obj, __: str) -> None:
        raise AssertionError("nothing is evicted here")

    asyncio.run(Queueing(store, evict).cycle())


def _setup(store: Store, cq_spec: Obj, flavor_spec: Obj | None = None) -> None:
    store.create(r.RESOURCE_FLAVORS, {"metadata": {"name": "f"}, "spec": flavor_spec or {}})
    store.create(r.CLUSTER_QUEUES, {"metadata": {"name": "team"}, "spec": {
        "namespaceSelector": {}, "stopPolicy": "None",
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [
            {"name": "cpu", "nominalQuota": "4"}]}]}], **cq_spec}})
    store.create(r.LOCAL_QUEUES, {"metadata": {"name": "team-lq", "namespace": "default"},
                                  "spec": {"clusterQueue": "team"}})
    store.create(r.WORKLOADS, {"metadata": {"name": "wl", "namespace": "default"}, "spec": {
        "queueName": "team-lq", "active": True, "priority": 0, "podSets": [{"name": "launcher", "count": 1,
            "template": {"spec": {"containers": [{"name": "node", "resources": {"requests": {"cpu": "1"}}}]}}}]}})


def _condition(obj: Obj, kind: str) -> tuple[str, str, str]:
    c = next(c for c in obj["status"]["conditions"] if c["type"] == kind)
    return c["status"], c["reason"], c["message"]


def test_missing_admission_check_is_written_on_queue_local_queue_and_workload(store: Store) -> None:
    _setup(store, {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]}})
    _cycle(store)
    cq = store.get(r.CLUSTER_QUEUES, "", "team")
    assert _condition(cq, "Active") == (
        "False", "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): prov.")
    assert cq["status"]["pendingWorkloads"] == 1 and cq["status"]["admittedWorkloads"] == 0
    lq = store.get(r.LOCAL_QUEUES, "default", "team-lq")
    assert _condition(lq, "Active") == ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    wl = store.get(r.WORKLOADS, "default", "wl")
    assert _condition(wl, "QuotaReserved") == ("False", "Suspended", "ClusterQueue team is inactive")
    assert "admission" not in wl["status"]
    assert wl["metadata"]["annotations"][WAITING_ANNOTATION].startswith(
        "needs 1 cpu, 4 of 4 free in ClusterQueue team; ClusterQueue team is inactive: AdmissionCheck prov not found")
    assert ESTIMATED_START not in wl["metadata"]["annotations"]  # an inactive queue admits nothing: no estimate

    cq["spec"].pop("admissionChecksStrategy")
    store.update(r.CLUSTER_QUEUES, cq)
    _cycle(store)
    assert _condition(store.get(r.CLUSTER_QUEUES, "", "team"), "Active") == ("True", "Ready", "Can admit new workloads")
    assert _condition(store.get(r.LOCAL_QUEUES, "default", "team-lq"), "Active") == (
        "True", "Ready", "Can submit new workloads to localQueue")
    wl = store.get(r.WORKLOADS, "default", "wl")
    assert _condition(wl, "QuotaReserved")[:2] == ("True", "QuotaReserved")
    assert wl["status"]["admission"]["clusterQueue"] == "team"


def test_flavor_topology_without_a_topology_object_makes_the_queue_inactive(store: Store) -> None:
    _setup(store, {}, {"nodeLabels": {"tier": "a"}, "topologyName": "default"})
    _cycle(store)
    assert _condition(store.get(r.CLUSTER_QUEUES, "", "team"), "Active") == (
        "False", "TopologyNotFound", 'Can\'t admit new workloads: there is no Topology "default" for TAS flavor "f".')
    wl = store.get(r.WORKLOADS, "default", "wl")
    assert _condition(wl, "QuotaReserved") == ("False", "Suspended", "ClusterQueue team is inactive")
    assert "Topology default, which does not exist" in wl["metadata"]["annotations"][WAITING_ANNOTATION]


def test_stopped_queue_condition_uses_kueues_words(store: Store) -> None:
    _setup(store, {"stopPolicy": "Hold"})
    _cycle(store)
    assert _condition(store.get(r.CLUSTER_QUEUES, "", "team"), "Active") == (
        "False", "Stopped", "Can't admit new workloads: is stopped.")
    assert _condition(store.get(r.WORKLOADS, "default", "wl"), "QuotaReserved") == (
        "False", "Suspended", "ClusterQueue team is stopped")


def test_local_queue_of_a_missing_cluster_queue(store: Store) -> None:
    store.create(r.LOCAL_QUEUES, {"metadata": {"name": "orphan", "namespace": "default"},
                                  "spec": {"clusterQueue": "nowhere"}})
    _cycle(store)
    assert _condition(store.get(r.LOCAL_QUEUES, "default", "orphan"), "Active") == (
        "False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")


def test_a_change_of_the_active_condition_alone_is_written(store: Store) -> None:
    """No workload, so no count moves: only the conditions of the queue and its LocalQueue change."""
    _setup(store, {})
    store.delete(r.WORKLOADS, "default", "wl")
    _cycle(store)
    cq = store.get(r.CLUSTER_QUEUES, "", "team")
    assert _condition(cq, "Active")[0] == "True"
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov"}]}
    store.update(r.CLUSTER_QUEUES, cq)
    _cycle(store)
    assert _condition(store.get(r.CLUSTER_QUEUES, "", "team"), "Active")[:2] == ("False", "AdmissionCheckNotFound")
    assert _condition(store.get(r.LOCAL_QUEUES, "default", "team-lq"), "Active")[:2] == (
        "False", "ClusterQueueIsInactive")


def test_stopped_local_queue_is_inactive_holds_its_workload_and_drains_on_hold_and_drain(store: Store) -> None:
    """Kueue's LocalQueue stopPolicy: Active=False (Stopped), its pending workload Inadmissible; HoldAndDrain
    also evicts what it admitted; back to None, the workload is admitted again."""
    _setup(store, {})
    lq = store.get(r.LOCAL_QUEUES, "default", "team-lq")
    lq["spec"]["stopPolicy"] = "Hold"
    store.update(r.LOCAL_QUEUES, lq)
    _cycle(store)
    assert _condition(store.get(r.LOCAL_QUEUES, "default", "team-lq"), "Active") == (
        "False", "Stopped", "LocalQueue is stopped")
    assert _condition(store.get(r.CLUSTER_QUEUES, "", "team"), "Active")[0] == "True"  # the ClusterQueue is not
    wl = store.get(r.WORKLOADS, "default", "wl")
    assert _condition(wl, "QuotaReserved") == ("False", "Inadmissible", "LocalQueue team-lq is stopped")
    assert "; LocalQueue team-lq is stopped (stopPolicy Hold)" in wl["metadata"]["annotations"][WAITING_ANNOTATION]

    lq = store.get(r.LOCAL_QUEUES, "default", "team-lq")
    lq["spec"]["stopPolicy"] = "None"
    store.update(r.LOCAL_QUEUES, lq)
    _cycle(store)
    assert _condition(store.get(r.LOCAL_QUEUES, "default", "team-lq"), "Active")[:2] == ("True", "Ready")
    assert store.get(r.WORKLOADS, "default", "wl")["status"]["admission"]["clusterQueue"] == "team"

    lq = store.get(r.LOCAL_QUEUES, "default", "team-lq")
    lq["spec"]["stopPolicy"] = "HoldAndDrain"
    store.update(r.LOCAL_QUEUES, lq)
    _cycle(store)  # no TrainJob owns this Workload: nothing to stop, the Workload says it is evicted
    wl = store.get(r.WORKLOADS, "default", "wl")
    assert _condition(wl, "Evicted") == ("True", "LocalQueueStopped", "The LocalQueue is stopped")
    assert "admission" not in wl["status"] and not any(c["type"] == "Preempted" for c in wl["status"]["conditions"])
