"""An Event that repeats one already recorded bumps its count, as client-go's recorder does."""

from __future__ import annotations

import time
from pathlib import Path

from mpijob.api.core.resources import EVENTS, TRAINJOBS
from mpijob.controllers import events
from mpijob.store.objects import Store


def _job(store: Store, name: str) -> dict:
    return store.create(TRAINJOBS, {"metadata": {"name": name, "namespace": "ns"},
                                    "spec": {"runtimeRef": {"name": "mpi-distributed"}}})


def test_a_repeated_event_is_one_event_whose_count_and_last_timestamp_grow(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects.db")
    job = _job(store, "j")
    events.record(store, job, "ControlPlaneRestarted", "re-adopted")
    (first,) = store.list(EVENTS, "ns")[0]
    time.sleep(1.1)  # timestamps have seconds
    events.record(store, job, "ControlPlaneRestarted", "re-adopted")
    events.record(store, job, "ControlPlaneRestarted", "re-adopted")
    (seen,) = store.list(EVENTS, "ns")[0]
    assert seen["metadata"]["name"] == first["metadata"]["name"] and seen["metadata"]["name"].startswith("j.")
    assert seen["count"] == 3 and seen["firstTimestamp"] == first["firstTimestamp"]
    assert seen["lastTimestamp"] > first["lastTimestamp"]


def test_another_message_type_reason_or_object_is_an_event_of_its_own(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects.db")
    job, other = _job(store, "j"), _job(store, "k")
    events.record(store, job, "Preempted", "by a")
    events.record(store, job, "Preempted", "by b")
    events.record(store, job, "Preempted", "by a", warning=True)
    events.record(store, job, "Suspended", "by a")
    events.record(store, other, "Preempted", "by a")
    store.delete(TRAINJOBS, "ns", "j")
    again = _job(store, "j")  # the same name, another object (uid)
    events.record(store, again, "Preempted", "by a")
    recorded = store.list(EVENTS, "ns")[0]
    assert len(recorded) == 6 and all(e["count"] == 1 for e in recorded)
