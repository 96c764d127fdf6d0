"""Kueue's visibility API (`visibility.kueue.x-k8s.io/v1beta2`): pending workloads with positions.

The pure part (which workloads, in which order, paged how, rendered how) is tested on hand-built
snapshots; the HTTP part against a real server without controllers, where every Workload created
is pending, so the scheduler's order (priority, then creation) decides the positions.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from mpijob.api.kueue.snapshot import (
    ClusterQueue,
    PodSet,
    Snapshot,
    Workload,
)
from mpijob.server.routes import visibility as vis

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
VIS = "/apis/visibility.kueue.x-k8s.io/v1beta2"


# -- pure ------------------------------------------------------------------------------------------


def _wl(key: str, lq: str, cq: str = "cq", priority: int = 0) -> Workload:
    ns = key.partition("/")[0]
    return Workload(key=key, namespace=ns, cluster_queue=cq, local_queue=lq, priority=priority,
                    created="2026-01-01T00:00:00Z", pod_sets=(PodSet("node", 1, {"cpu": 1000}),))


SNAP = Snapshot(
    cluster_queues={"cq": ClusterQueue("cq", ()), "other": ClusterQueue("other", ())},
    flavors=frozenset(),
    workloads=(
        _wl("a/w1", "lq-a"), _wl("b/w2", "lq-b", priority=9), _wl("a/w3", "lq-a"),
        _wl("a/admitted", "lq-a"), _wl("x/w4", "lq-x", cq="other"),
    ),
)
POSITIONS = {"b/w2": (0, 0), "a/w1": (1, 0), "a/w3": (2, 1), "x/w4": (0, 0)}  # a/admitted holds quota


def test_cluster_queue_lists_only_its_pending_workloads_in_position_order() -> None:
    keys = [w.key for w in vis.pending_in_cluster_queue(SNAP, POSITIONS, "cq")]
    assert keys == ["b/w2", "a/w1", "a/w3"]
    assert [w.key for w in vis.pending_in_cluster_queue(SNAP, POSITIONS, "other")] == ["x/w4"]


def test_local_queue_is_scoped_by_namespace_and_name() -> None:
    assert [w.key for w in vis.pending_in_local_queue(SNAP, POSITIONS, "a", "lq-a")] == ["a/w1", "a/w3"]
    assert vis.pending_in_local_queue(SNAP, POSITIONS, "b", "lq-a") == []


def test_paging_bounds_like_kueue() -> None:
    items = vis.pending_in_cluster_queue(SNAP, POSITIONS, "cq")
    assert [w.key for w in vis.page(items, 1, 1)] == ["a/w1"]
    assert [w.key for w in vis.page(items, -3, 2)] == ["b/w2", "a/w1"]
    assert vis.page(items, 0, -1) == [] and vis.page(items, 5, 10) == []


def test_pending_workload_item_has_kueues_fields_and_the_stored_identity() -> None:
    stored = {"metadata": {"name": "w1", "namespace": "a", "creationTimestamp": "2026-02-02T00:00:00Z",
                           "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                                "name": "job", "uid": "u-1", "controller": True}]}}
    item = vis.pending_workload(_wl("a/w1", "lq-a", priority=3), (1, 0), stored)
    assert item == {
        "metadata": {"name": "w1", "namespace": "a", "creationTimestamp": "2026-02-02T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "name": "job", "uid": "u-1"}]},
        "priority": 3, "localQueueName": "lq-a", "positionInClusterQueue": 1, "positionInLocalQueue": 0,
    }
    assert vis.summary([item])["kind"] == "PendingWorkloadsSummary"


# -- HTTP ------------------------------------------------------------------------------------------


def _cq(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}}


def _lq(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def _workload(ns: str, name: str, lq: str, priority: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [
                {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": f"job-{name}",
                 "uid": f"uid-{name}", "controller": True}]},
            "spec": {"queueName": lq, "priority": priority, "active": True, "podSets": [
                {"name": "node", "count": 1,
                 "template": {"spec": {"containers": [{"name": "node", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _post(c: httpx.Client, path: str, obj: dict[str, Any]) -> None:
    r = c.post(path, json=obj)
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def queues(connect: Callable[..., httpx.Client]) -> Iterator[httpx.Client]:
    """ClusterQueue vis-cq with LocalQueues vis-a (namespace vis-team) and vis-b (default): four pending
    Workloads, created in order w1 (priority 0, vis-a), w2 (5, vis-b), w3 (0, vis-a), w4 (5, vis-a).
    Creation times may tie (one-second resolution); names and namespaces sort in creation order too."""
    with connect() as c:
        _post(c, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "vis-team"}})
        _post(c, f"{KUEUE}/clusterqueues", _cq("vis-cq"))
        _post(c, f"{KUEUE}/namespaces/vis-team/localqueues", _lq("vis-team", "vis-a", "vis-cq"))
        _post(c, f"{KUEUE}/namespaces/default/localqueues", _lq("default", "vis-b", "vis-cq"))
        for ns, name, lq, prio in (("vis-team", "vis-w1", "vis-a", 0), ("default", "vis-w2", "vis-b", 5),
                                   ("vis-team", "vis-w3", "vis-a", 0), ("vis-team", "vis-w4", "vis-a", 5)):
            _post(c, f"{KUEUE}/namespaces/{ns}/workloads", _workload(ns, name, lq, prio))
        yield c


def _positions(summary: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in summary["items"]]


def test_cluster_queue_pending_workloads_in_priority_then_fifo_order(queues: httpx.Client) -> None:
    r = queues.get(f"{VIS}/clusterqueues/vis-cq/pendingworkloads")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["kind"], body["apiVersion"]) == ("PendingWorkloadsSummary", "visibility.kueue.x-k8s.io/v1beta2")
    assert _positions(body) == [("vis-w2", 0, 0), ("vis-w4", 1, 0), ("vis-w1", 2, 1), ("vis-w3", 3, 2)]
    first = body["items"][0]
    assert first["priority"] == 5 and first["localQueueName"] == "vis-b"
    assert first["metadata"]["namespace"] == "default" and first["metadata"]["creationTimestamp"]
    assert first["metadata"]["ownerReferences"][0]["name"] == "job-vis-w2"


def test_limit_and_offset_page_the_cluster_queue(queues: httpx.Client) -> None:
    body = queues.get(f"{VIS}/clusterqueues/vis-cq/pendingworkloads", params={"offset": 1, "limit": 2}).json()
    assert _positions(body) == [("vis-w4", 1, 0), ("vis-w1", 2, 1)]
    assert queues.get(f"{VIS}/clusterqueues/vis-cq/pendingworkloads", params={"limit": "x"}).status_code == 400


def test_local_queue_pending_workloads_keep_cluster_queue_positions(queues: httpx.Client) -> None:
    body = queues.get(f"{VIS}/namespaces/vis-team/localqueues/vis-a/pendingworkloads").json()
    assert _positions(body) == [("vis-w4", 1, 0), ("vis-w1", 2, 1), ("vis-w3", 3, 2)]
    paged = queues.get(f"{VIS}/namespaces/vis-team/localqueues/vis-a/pendingworkloads", params={"offset": 1}).json()
    assert _positions(paged) == [("vis-w1", 2, 1), ("vis-w3", 3, 2)]
    other = queues.get(f"{VIS}/namespaces/default/localqueues/vis-b/pendingworkloads").json()
    assert _positions(other) == [("vis-w2", 0, 0)]


def test_unknown_queues_are_404_in_kueues_words(queues: httpx.Client) -> None:
    r = queues.get(f"{VIS}/clusterqueues/vis-nope/pendingworkloads")
    assert r.status_code == 404
    assert r.json()["message"] == 'clusterqueue.visibility.kueue.x-k8s.io "vis-nope" not found'
    r = queues.get(f"{VIS}/namespaces/default/localqueues/vis-a/pendingworkloads")
    assert r.status_code == 404
    assert r.json()["message"] == 'localqueue.visibility.kueue.x-k8s.io "vis-a" not found'
    assert queues.get(f"{VIS}/clusterqueues/vis-cq").status_code == 404


def test_read_only_and_discoverable(queues: httpx.Client) -> None:
    r = queues.post(f"{VIS}/clusterqueues/vis-cq/pendingworkloads", json={})
    assert r.status_code == 405 and r.json()["kind"] == "Status"
    doc = queues.get(VIS).json()
    assert doc["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert {"clusterqueues/pendingworkloads", "localqueues/pendingworkloads"} <= {e["name"] for e in doc["resources"]}
    assert queues.get("/apis/visibility.kueue.x-k8s.io").json()["preferredVersion"]["version"] == "v1beta2"


def test_kubectl_get_raw(queues: httpx.Client, kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    out = kubectl("get", "--raw", f"{VIS}/clusterqueues/vis-cq/pendingworkloads?limit=1").stdout
    assert '"positionInClusterQueue":0' in out and "vis-w2" in out and "vis-w4" not in out
