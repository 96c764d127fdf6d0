"""The queueing controller on a real store (no server): why a job waits and when it should start, read
from the running jobs' reports, deadlines and the run times of similar finished jobs, written on the
pending Workload, in an Event when the reason changes, and for a Workload nobody activates."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mpijob.api import Obj
from mpijob.api.core import resources as r
from mpijob.api.kueue.adapters import workload_name
from mpijob.api.names import ANNOTATION_ESTIMATED_START, ANNOTATION_WAITING
from mpijob.api.trainer.waiting import Waiting
from mpijob.controllers.kueue import estimates
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.store.objects import Store


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "objects.db")
    s.create(r.RESOURCE_FLAVORS, {"metadata": {"name": "f"}, "spec": {}})
    s.create(r.CLUSTER_QUEUES, {"metadata": {"name": "team"}, "spec": {"namespaceSelector": {}, "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}})
    s.create(r.LOCAL_QUEUES, {"metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "team"}})
    yield s
    s.close()


@pytest.fixture
def queueing(store: Store) -> Queueing:
    async def evict(_: Obj, __: str) -> None:
        return None

    return Queueing(store, evict)


def submit(store: Store, name: str, cpus: int, command: str = "train", deadline: int | None = None) -> Obj:
    """A TrainJob and its Workload (one node of `cpus` CPUs), as the Trainer controller makes them."""
    spec: Obj = {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1, "command": [command]}}
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    tj = store.create(r.TRAINJOBS, {"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name,
             "uid": tj["metadata"]["uid"], "controller": True}
    store.create(r.WORKLOADS, {"metadata": {"name": workload_name(tj), "namespace": "default", "ownerReferences": [owner]},
                               "spec": {"queueName": "lq", "active": True, "priority": 0, "podSets": [
                                   {"name": "node", "count": 1, "template": {"spec": {"containers": [
                                       {"name": "node", "resources": {"requests": {"cpu": str(cpus)}}}]}}}]}})
    return tj


def workload(store: Store, tj: Obj) -> Obj:
    return store.get(r.WORKLOADS, "default", workload_name(tj))


def report(store: Store, name: str, status: Obj) -> None:
    tj = store.get(r.TRAINJOBS, "default", name)
    tj["status"] = {"trainerStatus": status}
    store.update(r.TRAINJOBS, tj, status=True)


def pending_events(store: Store, name: str) -> list[str]:
    return [e["message"] for e in store.list(r.EVENTS, "default")[0]
            if e["involvedObject"]["name"] == name and e["reason"] == "Pending"]


def test_a_waiting_job_is_told_what_it_needs_and_when_the_running_one_says_it_ends(
        store: Store, queueing: Queueing) -> None:
    submit(store, "running", 4)
    asyncio.run(queueing.cycle())
    waiter = submit(store, "waiter", 2)
    asyncio.run(queueing.cycle())
    annotations = workload(store, waiter)["metadata"]["annotations"]
    assert annotations == {ANNOTATION_WAITING: "needs 2 cpu, 0 of 4 free in ClusterQueue team; first in line"}
    assert pending_events(store, "waiter") == [("needs 2 cpu, 0 of 4 free in ClusterQueue team; first in line; "
                                               "no estimate")]

    now = time.time()
    report(store, "running", {"progressPercentage": 50, "estimatedRemainingSeconds": 600, "lastUpdatedTime": stamp(now)})
    asyncio.run(queueing.cycle())
    waiting = Waiting.of(workload(store, waiter))
    assert waiting is not None and waiting.estimated_start is not None
    assert abs(waiting.estimated_start.timestamp() - (now + 600)) <= 1
    assert waiting.sentence(datetime.fromtimestamp(now, UTC)).endswith("; estimated start in ~10 min")
    assert len(pending_events(store, "waiter")) == 1  # the reason did not change: no new Event

    # a report that moves the end by less than a minute leaves the estimate as it was written
    written = workload(store, waiter)["metadata"]["annotations"][ANNOTATION_ESTIMATED_START]
    report(store, "running", {"estimatedRemainingSeconds": 580, "lastUpdatedTime": stamp(now + 10)})
    asyncio.run(queueing.cycle())
    assert workload(store, waiter)["metadata"]["annotations"][ANNOTATION_ESTIMATED_START] == written


def test_without_a_report_the_deadline_then_similar_jobs_tell(store: Store, queueing: Queueing) -> None:
    history = estimates.History()
    done = submit(store, "yesterday", 4)
    asyncio.run(queueing.cycle())
    admitted = next(c for c in workload(store, done)["status"]["conditions"] if c["type"] == "Admitted")
    start = datetime.fromisoformat(admitted["lastTransitionTime"].replace("Z", "+00:00")).timestamp()
    done["status"] = {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": stamp(start + 300)}]}
    history.observe(done, workload(store, done))
    history.observe(done, workload(store, done))  # once per job
    assert history.median(done) == 300

    today = submit(store, "today", 4)  # the same program: expected to take as long
    other = submit(store, "other", 4, command="eval", deadline=90)
    running = {**today, "status": {}}
    assert estimates.expected_end(running, workload(store, done), start, history) == start + 300
    assert estimates.expected_run(today, history) == 300
    assert estimates.expected_run(other, history) == 90  # nothing like it ran: its deadline bounds it
    assert estimates.expected_run(submit(store, "new", 4, command="new"), history) is None
    # a report from before this admission is a past run's, and does not count
    stale = {**today, "status": {"trainerStatus": {"estimatedRemainingSeconds": 5, "lastUpdatedTime": stamp(start - 60)}}}
    assert estimates.expected_end(stale, workload(store, done), start, history) == start + 300
    # a percentage alone: the run so far, scaled to 100 %
    half = {**today, "status": {"trainerStatus": {"progressPercentage": 25, "lastUpdatedTime": stamp(start + 100)}}}
    assert estimates.expected_end(half, workload(store, done), start, history) == start + 400
    # activeDeadlineSeconds: the latest it can end (its clock starts at admission, or creation if later)
    bounded = submit(store, "bounded", 4, command="long", deadline=120)
    due = max(start, datetime.fromisoformat(bounded["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()) + 120
    assert estimates.expected_end(bounded, workload(store, done), start, history) == due
    hopeful = {**bounded, "status": {"trainerStatus": {"estimatedRemainingSeconds": 10_000,
                                                       "lastUpdatedTime": stamp(start + 10)}}}
    assert estimates.expected_end(hopeful, workload(store, done), start, history) == due


def test_a_workload_nobody_activates_says_so(store: Store, queueing: Queueing) -> None:
    tj = submit(store, "parked", 1)
    wl = workload(store, tj)
    wl["spec"]["active"] = False
    queueing.workload_changed(store.update(r.WORKLOADS, wl))
    assert workload(store, tj)["metadata"]["annotations"][ANNOTATION_WAITING] == (
        "its Workload is deactivated (spec.active: false); set it to true to queue the job again")
    tj["spec"]["suspend"] = True
    store.update(r.TRAINJOBS, tj)
    queueing.workload_changed(workload(store, tj))
    assert workload(store, tj)["metadata"]["annotations"][ANNOTATION_WAITING] == (
        "the TrainJob is suspended (spec.suspend: true); resume it to queue it again")
