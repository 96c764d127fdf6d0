"""The job history: a record of every TrainJob and MPIJob, kept after the job is deleted and across restarts.

Slurm keeps `sacct`'s accounting in a database of its own, apart from the live queue; so does this:
`$MPIJOB_HOME/history.db` (`Home.history`), SQLite in WAL mode beside the object store. The Trainer
controller writes a record when it first sees a job (so one deleted while it waited is recorded too),
at each start, when each run ends (what its pods used, from their cgroups) and when the job ends
(`controllers/trainer/accounting.py`); the server serves it as mpijob.io's read-only `jobrecords`
(`server/routes/history.py`, what `mpijob history` reads).

Times are Unix seconds. A job that runs several times (suspended, preempted, requeued) keeps its first
admission and start; its run time, CPU seconds and peak memory add up over its runs.

Retention, checked when the history opens and after each job's end, drops the oldest finished records:
those finished more than `$MPIJOB_HISTORY_MAX_AGE_DAYS` ago (default 365) and those beyond the newest
`$MPIJOB_HISTORY_MAX_RECORDS` (default 100,000); 0 turns a limit off. A job that has not finished is
never dropped.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from mpijob.api import names

MAX_RECORDS_ENV, MAX_AGE_ENV = "MPIJOB_HISTORY_MAX_RECORDS", "MPIJOB_HISTORY_MAX_AGE_DAYS"
MAX_RECORDS, MAX_AGE_DAYS = 100_000, 365.0
TRAINJOB_KIND = "TrainJob"  # the kind of every record kept before MPIJobs were recorded
DAY = 86400.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  uid TEXT PRIMARY KEY, namespace TEXT NOT NULL, name TEXT NOT NULL, requester TEXT NOT NULL,
  runtime TEXT NOT NULL, nodes INTEGER NOT NULL, procs_per_node INTEGER NOT NULL, gpus INTEGER NOT NULL,
  submitted REAL NOT NULL, admitted REAL, started REAL, finished REAL,
  state TEXT NOT NULL, reason TEXT NOT NULL, failure TEXT NOT NULL, message TEXT NOT NULL,
  run_seconds REAL NOT NULL, running_since REAL, cpu_seconds REAL, memory_peak INTEGER,
  kind TEXT NOT NULL DEFAULT 'TrainJob'
);
CREATE INDEX IF NOT EXISTS jobs_by_submitted ON jobs (submitted);
CREATE INDEX IF NOT EXISTS jobs_by_namespace ON jobs (namespace, submitted);
CREATE INDEX IF NOT EXISTS jobs_by_requester ON jobs (requester, submitted);
CREATE INDEX IF NOT EXISTS jobs_by_finished ON jobs (finished);
"""


@dataclass(frozen=True)
class JobRecord:
    uid: str
    namespace: str
    name: str
    requester: str  # who created it (`names.ANNOTATION_REQUESTER`)
    runtime: str  # `<kind>/<name>` of its runtimeRef
    nodes: int
    procs_per_node: int
    gpus: int  # of the whole job, every pod's together
    submitted: float
    admitted: float | None = None
    started: float | None = None
    finished: float | None = None
    state: str = names.RECORD_PENDING  # RECORD_PENDING/RUNNING/DELETED, COMPLETE, FAILED
    reason: str = ""  # the condition's reason (upstream's word)
    failure: str = ""  # the class of a failure (`api/trainer/failures.py`)
    message: str = ""
    run_seconds: float = 0.0  # of the runs that ended
    running_since: float | None = None  # the start of the run under way
    cpu_seconds: float | None = None  # of every pod of every run, from their cgroups; None: not accounted
    memory_peak: int | None = None  # bytes, the most one pod held
    kind: str = TRAINJOB_KIND  # of the job: TrainJob, or MPIJob (names.MPIJOB_KIND)

    def wait(self, now: float) -> float:
        """Seconds from submission to its first start (or to now, or to its end, when it never started)."""
        return (self.started or self.finished or now) - self.submitted

    def run(self, now: float) -> float:
        """Seconds it ran, the run under way included."""
        return self.run_seconds + (now - self.running_since if self.running_since is not None else 0.0)


_COLUMNS = ", ".join(f.name for f in fields(JobRecord))


@dataclass(frozen=True)
class Query:
    """Which records: of `namespaces` (None: all), created by `user`, active since `since` (finished at or
    after it, or not finished), the newest `limit` of them (0: all)."""

    namespaces: tuple[str, ...] | None = None
    user: str | None = None
    since: float | None = None
    limit: int = 0


class History:
    def __init__(self, path: Path, max_records: int = MAX_RECORDS, max_age_days: float = MAX_AGE_DAYS) -> None:
        self.max_records, self.max_age_days = max_records, max_age_days
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._add_kind()
        self._lock = threading.Lock()
        self._known: set[str] = set()  # uids recorded by this process: `submitted` skips them
        self.prune()

    def _add_kind(self) -> None:
        """A history written before jobs had kinds gets the column; its records were all TrainJobs."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if "kind" not in columns:
            self._db.execute(f"ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT '{TRAINJOB_KIND}'")

    def close(self) -> None:
        self._db.close()

    def _write(self, sql: str, args: Iterable[object]) -> int:
        with self._lock:
            return self._db.execute(sql, tuple(args)).rowcount

    # -- writes, in a job's order ------------------------------------------------------------------

    def submitted(self, record: JobRecord) -> None:
        """A job first seen; a job already recorded keeps its record."""
        if record.uid in self._known:
            return
        values = [getattr(record, f.name) for f in fields(JobRecord)]
        self._write(f"INSERT OR IGNORE INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values)
        self._known.add(record.uid)

    def started(self, uid: str, admitted: float | None, at: float, nodes: int, procs_per_node: int, gpus: int) -> None:
        """A run begins, with the size it runs at (a job may have changed while it waited)."""
        self._write("UPDATE jobs SET state = ?, admitted = COALESCE(admitted, ?), started = COALESCE(started, ?), "
                    "running_since = ?, nodes = ?, procs_per_node = ?, gpus = ? WHERE uid = ? AND finished IS NULL",
                    (names.RECORD_RUNNING, admitted, at, at, nodes, procs_per_node, gpus, uid))

    def stopped(self, uid: str, at: float, cpu_seconds: float | None, memory_peak: int | None) -> None:
        """A run ended (the job goes on waiting unless `finished` follows): its time and usage add up."""
        self._write("UPDATE jobs SET state = CASE WHEN state = ? THEN ? ELSE state END, "
                    "run_seconds = run_seconds + MAX(? - COALESCE(running_since, ?), 0), running_since = NULL, "
                    "cpu_seconds = CASE WHEN ? IS NULL THEN cpu_seconds ELSE COALESCE(cpu_seconds, 0) + ? END, "
                    "memory_peak = CASE WHEN ? IS NULL THEN memory_peak ELSE MAX(COALESCE(memory_peak, 0), ?) END "
                    "WHERE uid = ?", (names.RECORD_RUNNING, names.RECORD_PENDING, at, at, cpu_seconds, cpu_seconds,
                                      memory_peak, memory_peak, uid))

    def finished(self, uid: str, at: float, state: str, reason: str, failure: str, message: str) -> None:
        """Its end. A run still marked under way (its server died with it) adds no time: when it stopped is
        not known."""
        self._write("UPDATE jobs SET state = ?, reason = ?, failure = ?, message = ?, finished = ?, "
                    "running_since = NULL WHERE uid = ? AND finished IS NULL",
                    (state, reason, failure, message, at, uid))
        self._known.discard(uid)
        self.prune(at)

    def deleted(self, uid: str, at: float, kind: str = "") -> None:
        """Deleted before it ended (a finished job keeps its outcome)."""
        self.finished(uid, at, names.RECORD_DELETED, names.REASON_DELETED, "", f"the {kind or 'job'} was deleted")

    def deleted_unless(self, live: set[str], at: float) -> None:
        """Jobs recorded as unfinished that are gone from the cluster (its object store replaced, say)."""
        rows = self._db.execute("SELECT uid, kind FROM jobs WHERE finished IS NULL").fetchall()
        for uid, kind in rows:
            if uid not in live:
                self.deleted(uid, at, kind)

    def prune(self, now: float | None = None) -> int:
        """Drop finished records past the retention (module doc); how many went."""
        gone = 0
        if self.max_age_days > 0:
            cutoff = (now or time.time()) - self.max_age_days * DAY
            gone += self._write("DELETE FROM jobs WHERE finished < ?", (cutoff,))
        if self.max_records > 0:
            (count,) = self._db.execute("SELECT COUNT(*) FROM jobs").fetchone()
            if count > self.max_records:
                gone += self._write("DELETE FROM jobs WHERE uid IN (SELECT uid FROM jobs WHERE finished IS NOT NULL "
                                    "ORDER BY finished LIMIT ?)", (count - self.max_records,))
        return gone

    # -- reads -------------------------------------------------------------------------------------

    def query(self, q: Query) -> tuple[list[JobRecord], int]:
        """The records `q` asks for, oldest submission first, and how many match in all."""
        where: list[str] = ["1"]
        args: list[object] = []
        if q.namespaces is not None:
            where.append(f"namespace IN ({', '.join('?' * len(q.namespaces))})")
            args += q.namespaces
        if q.user is not None:
            where.append("requester = ?")
            args.append(q.user)
        if q.since is not None:
            where.append("(finished >= ? OR finished IS NULL)")
            args.append(q.since)
        condition = " AND ".join(where)
        limit = f" LIMIT {int(q.limit)}" if q.limit > 0 else ""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE {condition} ORDER BY submitted DESC, rowid DESC"
                                f"{limit}", args).fetchall()
        (total,) = self._db.execute(f"SELECT COUNT(*) FROM jobs WHERE {condition}", args).fetchone()
        return [JobRecord(*row) for row in reversed(rows)], total


_open: dict[Path, History] = {}
_open_lock = threading.Lock()


def open_history(path: Path) -> History:
    """The one `History` of this process for `path` (the controllers write it, the API reads it), with the
    retention of the server's environment."""
    with _open_lock:
        found = _open.get(path)
        if found is None:
            found = _open[path] = History(path, int(os.environ.get(MAX_RECORDS_ENV) or MAX_RECORDS),
                                          float(os.environ.get(MAX_AGE_ENV) or MAX_AGE_DAYS))
        return found
