"""Job kinds reach the manager through one registry (controllers/jobkinds.py): a toy kind registered in a
test-only registry gets its events, its pods' and its runs' restart, and every registered kind's resource is
dispatched to its own controller. The toy's controller is a test double of a controller, not of the manager."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api import Obj, names
from mpijob.api.core.resources import Resource
from mpijob.api.kueue.owners import JobKind
from mpijob.controllers import jobkinds
from mpijob.controllers.jobkinds import JobKinds
from mpijob.controllers.manager import Manager
from mpijob.controllers.trainer.launcher import JobContext
from mpijob.controllers.trainer.runner import JobRunner
from mpijob.controllers.trainer.stops import Stop
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

TOYS = Resource("toys.example.com", "v1", "toyjobs", "toyjob", "ToyJob", True, (), ("status",))
TOY = JobKind(TOYS, ("spec", "suspend"), ((names.LAUNCHER, names.LAUNCHER),), names.COMPLETE, kueue_name=True)


class ToyJobs:
    """A kind's controller that records what reaches it: the whole of adding a kind, less its real work."""

    kind = TOY

    def __init__(self, ctx: JobContext) -> None:
        self.runners: dict[str, tuple[JobRunner, asyncio.Task[None]]] = {}
        self.seen: list[tuple[str, str]] = []

    def reconcile(self, job: Obj) -> None:
        self.seen.append(("reconcile", job["metadata"]["name"]))

    def observe(self, job: Obj, added: bool) -> None:
        self.seen.append(("added" if added else "changed", job["metadata"]["name"]))

    def fail(self, job: Obj, message: str) -> None:
        self.seen.append(("fail", job["metadata"]["name"]))

    async def evict(self, job: Obj, message: str) -> None:
        self.seen.append(("evict", job["metadata"]["name"]))

    async def stop(self, uid: str, why: Stop) -> None:
        self.seen.append(("stop", uid))

    async def deleted(self, job: Obj) -> None:
        self.seen.append(("deleted", job["metadata"]["name"]))

    def recover(self) -> None:
        self.seen.append(("recover", ""))

    def pod_changed(self, pod: Obj) -> None:
        self.seen.append(("pod", pod["metadata"]["name"]))


def _job(resource: Resource, name: str, uid: str = "u-1") -> Obj:
    return {"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": {}}


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, LogStore, Home]]:
    monkeypatch.setenv("MPIJOB_SANDBOX", "process")  # no probe of unshare: nothing runs here
    home = Home(tmp_path / "home").ensure()
    store = Store(home.db)
    yield store, LogStore(home.logs), home
    store.close()


def test_a_toy_kind_is_one_registry_line(parts: tuple[Store, LogStore, Home]) -> None:
    manager = Manager(*parts, kinds=(*jobkinds.KINDS, ToyJobs))
    toy = next(c for c in manager.kinds if isinstance(c, ToyJobs))

    async def events() -> None:
        await manager._dispatch("ADDED", _job(TOYS, "t"))
        await manager._dispatch("MODIFIED", _job(TOYS, "t"))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t-0", "namespace": "default",
               "ownerReferences": [{"apiVersion": TOYS.api_version, "kind": TOYS.kind, "name": "t", "uid": "u-1"}]}}
        await manager._dispatch("MODIFIED", pod)
        await manager._dispatch("DELETED", _job(TOYS, "t"))
        await manager.integrations.evict(_job(TOYS, "t"), "preempted")

    asyncio.run(events())
    assert toy.seen == [("reconcile", "t"), ("added", "t"), ("reconcile", "t"), ("changed", "t"), ("pod", "t-0"),
                        ("deleted", "t"), ("evict", "t")]
    assert manager.kinds.owner({"metadata": {"ownerReferences": [
        {"apiVersion": TOYS.api_version, "kind": TOYS.kind, "uid": "u-1"}]}}) == (toy, "u-1")
    assert manager.kinds.of(_job(TOYS, "t") | {"apiVersion": "toys.example.com/v2"}) is None  # another version


def test_a_failing_reconcile_fails_the_job_in_its_kinds_words(parts: tuple[Store, LogStore, Home]) -> None:
    store = parts[0]

    class Broken(ToyJobs):
        def reconcile(self, job: Obj) -> None:
            raise RuntimeError("boom")

    stored = store.create(TOYS, _job(TOYS, "b"))
    broken = Broken(None)  # the toy reads nothing of its context
    JobKinds(store, [broken]).reconcile(stored)
    assert broken.seen == [("fail", "b")]


def test_every_registered_kind_is_dispatched_to_its_own_controller(
        parts: tuple[Store, LogStore, Home], monkeypatch: pytest.MonkeyPatch) -> None:
    manager = Manager(*parts)
    assert [type(c) for c in manager.kinds] == list(jobkinds.KINDS)
    reached: list[tuple[str, str, str]] = []
    for c in manager.kinds:
        name = c.kind.kind
        monkeypatch.setattr(c, "reconcile", lambda job, name=name: reached.append((name, "reconcile", job["kind"])))
        monkeypatch.setattr(c, "observe", lambda job, added, name=name: reached.append((name, "observe", job["kind"])))

        async def deleted(job: Obj, name: str = name) -> None:
            reached.append((name, "deleted", job["kind"]))

        monkeypatch.setattr(c, "deleted", deleted)

    async def events() -> None:
        for c in manager.kinds:
            for event in ("ADDED", "DELETED"):
                await manager._dispatch(event, _job(c.kind.resource, "j"))

    asyncio.run(events())
    assert reached == [(k, step, k) for k in (c.kind.kind for c in manager.kinds)
                       for step in ("reconcile", "observe", "deleted")]
    assert {c.kind.kind for c in manager.kinds} == {"TrainJob", "MPIJob"}
