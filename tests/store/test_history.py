"""The job history's SQLite (`store/history.py`): a record's life over several runs, the filters, and the
retention by count and by age. Real jobs reach it in tests/e2e/test_history_e2e.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api import names
from mpijob.store.history import DAY, History, JobRecord, Query

T0 = 1_800_000_000.0


def record(uid: str, submitted: float = T0, namespace: str = "team-a", requester: str = "alice") -> JobRecord:
    return JobRecord(uid, namespace, f"job-{uid}", requester, "ClusterTrainingRuntime/mpi-distributed", 2, 1, 4,
                     submitted)


@pytest.fixture()
def history(tmp_path: Path) -> Iterator[History]:
    h = History(tmp_path / "history.db")
    yield h
    h.close()


def test_runs_add_up_and_the_end_is_kept(history: History) -> None:
    history.submitted(record("a"))
    history.started("a", admitted=T0 + 1, at=T0 + 2, nodes=2, procs_per_node=1, gpus=4)
    history.stopped("a", at=T0 + 12, cpu_seconds=30.0, memory_peak=100)  # preempted after 10 s
    # admitted again, bigger: the first admission and start stay, the size is the latest run's
    history.started("a", T0 + 50, T0 + 52, 4, 2, 8)
    history.stopped("a", at=T0 + 57, cpu_seconds=6.0, memory_peak=80)
    history.finished("a", T0 + 57, names.COMPLETE, names.REASON_COMPLETED, "", "done")
    history.deleted("a", T0 + 99)  # deleting a finished job keeps its outcome
    [r], total = history.query(Query())
    assert total == 1
    assert (r.admitted, r.started, r.finished, r.state, r.reason) == (T0 + 1, T0 + 2, T0 + 57, names.COMPLETE,
                                                                       names.REASON_COMPLETED)
    assert (r.run(T0 + 1000), r.wait(T0 + 1000), r.cpu_seconds, r.memory_peak) == (15.0, 2.0, 36.0, 100)
    assert (r.nodes, r.procs_per_node, r.gpus) == (4, 2, 8)


def test_a_running_job_counts_its_run_so_far_and_a_pending_one_its_wait(history: History) -> None:
    history.submitted(record("run"))
    history.started("run", None, T0 + 5, 2, 1, 4)
    history.submitted(record("wait"))
    history.submitted(record("wait", submitted=T0 + 40))  # seen again (a restart): the first record stays
    run, wait = sorted(history.query(Query())[0], key=lambda r: r.uid)
    assert (run.state, run.run(T0 + 25), run.cpu_seconds, run.memory_peak) == (names.RECORD_RUNNING, 20.0, None, None)
    assert (wait.state, wait.wait(T0 + 25), wait.submitted) == (names.RECORD_PENDING, 25.0, T0)


def test_deleted_while_waiting_and_gone_while_no_one_watched(history: History) -> None:
    for uid in ("x", "y", "z"):
        history.submitted(record(uid))
    history.deleted("x", T0 + 3)
    history.finished("z", T0 + 4, names.FAILED, names.REASON_FAILED_JOBS, names.FAILURE_NCCL, "NCCLError: …")
    history.deleted_unless({"z"}, T0 + 9)
    states = {r.uid: (r.state, r.reason, r.failure, r.finished) for r in history.query(Query())[0]}
    assert states == {"x": (names.RECORD_DELETED, names.REASON_DELETED, "", T0 + 3),
                      "y": (names.RECORD_DELETED, names.REASON_DELETED, "", T0 + 9),
                      "z": (names.FAILED, names.REASON_FAILED_JOBS, names.FAILURE_NCCL, T0 + 4)}


def test_filters_and_the_newest_n_oldest_first(history: History) -> None:
    for i in range(6):
        history.submitted(record(f"a{i}", T0 + i, "team-a", "alice" if i % 2 else "bob"))
        history.submitted(record(f"b{i}", T0 + i, "team-b", "alice"))
    for i in range(3):  # a0..a2 and b0..b2 ended at T0 + 100 + i; the rest are still running
        history.finished(f"a{i}", T0 + 100 + i, names.COMPLETE, names.REASON_COMPLETED, "", "")
        history.finished(f"b{i}", T0 + 100 + i, names.COMPLETE, names.REASON_COMPLETED, "", "")

    def uids(q: Query) -> tuple[list[str], int]:
        found, total = history.query(q)
        return [r.uid for r in found], total

    assert uids(Query(("team-a",))) == (["a0", "a1", "a2", "a3", "a4", "a5"], 6)
    assert uids(Query(("team-a",), user="alice")) == (["a1", "a3", "a5"], 3)
    assert uids(Query(user="alice", limit=2)) == (["a5", "b5"], 9)  # same second: in the order recorded
    assert uids(Query(("team-b",), since=T0 + 101.5)) == (["b2", "b3", "b4", "b5"], 4)
    assert uids(Query(("team-c",))) == ([], 0)


def test_retention_drops_the_oldest_finished_by_count_and_by_age(tmp_path: Path) -> None:
    h = History(tmp_path / "h.db", max_records=3, max_age_days=30)
    try:
        h.submitted(record("old"))
        h.finished("old", T0, names.COMPLETE, names.REASON_COMPLETED, "", "")
        h.submitted(record("waiting"))  # unfinished: never dropped, however old
        for i in range(3):
            h.submitted(record(f"new{i}", T0 + 40 * DAY))
            h.finished(f"new{i}", T0 + 40 * DAY + i, names.COMPLETE, names.REASON_COMPLETED, "", "")
        # "old" went by age (finished 40 days before the last end), "new0" by count (4 records > 3)
        assert sorted(r.uid for r in h.query(Query())[0]) == ["new1", "new2", "waiting"]
    finally:
        h.close()
    unlimited = History(tmp_path / "h.db", max_records=0, max_age_days=0)  # 0 turns each limit off
    try:
        assert unlimited.prune(T0 + 9999 * DAY) == 0
    finally:
        unlimited.close()


def test_jobs_of_one_second_are_listed_in_the_order_they_were_created(history: History) -> None:
    """creationTimestamp has whole seconds. Of two jobs created in one second, the first seen on time (stamped
    when seen) and the second seen only after that second (a busy controller), the second is the newer."""
    from mpijob.controllers.trainer.accounting import submitted_at

    history.submitted(record("first", submitted_at(T0, T0 + 0.25)))  # seen 0.25 s into its second
    history.submitted(record("second", submitted_at(T0, T0 + 1.4)))  # created later that second, seen in the next
    assert [r.uid for r in history.query(Query())[0]] == ["first", "second"]  # oldest first
    assert submitted_at(T0, T0 + 0.5) == T0 + 0.5 and T0 < submitted_at(T0, T0 + 1.4) < T0 + 1
