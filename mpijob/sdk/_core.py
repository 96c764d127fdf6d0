"""What `Client` and `AsyncClient` share beyond the client layer's core: the SDK's own operations —
waiting with the SDK's exceptions, finding the launcher whose log to read — and what a caller may pass.

Both clients run these same operations (`mpijob.client.core`), one on `Connection`, the other on
`AsyncConnection`, so they answer alike by construction.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.trainer.progress import Progress, progress_of
from mpijob.api.trainer.waiting import Waiting
from mpijob.client import core
from mpijob.client.core import Op
from mpijob.client.kueue import waits
from mpijob.client.logs import LogLine
from mpijob.client.phase import true_condition
from mpijob.client.wait import WaitResult, check_condition, check_timeout, find_launcher, wait_for_condition
from mpijob.sdk.errors import JobFailed, MpijobError
from mpijob.sdk.trainjob import TrainJob


def trainjob_object(job: TrainJob | Obj) -> Obj:
    """The TrainJob to send: a builder's `to_object()`, or a manifest dict as given."""
    return job.to_object() if isinstance(job, TrainJob) else dict(job)


def unreachable(result: WaitResult) -> MpijobError:
    """Why a wait ended without its condition: `JobFailed` when the job failed, else (waiting for
    Failed, it completed) the base class — both exit code 1, as `mpijob wait` exits."""
    job = result.trainjob
    name = (job.get("metadata") or {}).get("name", "")
    if result.want == names.FAILED:
        return MpijobError(f"trainjob {name!r} completed, so it will never be Failed", reason="Unreachable",
                           trainjob=job)
    c = true_condition(job, names.FAILED) or {}
    reason, message = str(c.get("reason") or names.FAILED), str(c.get("message") or "")
    return JobFailed(f"trainjob {name!r} failed: {reason}" + (f": {message}" if message else ""),
                     reason=reason, trainjob=job)


def wait(namespace: str, name: str, for_: str, timeout: float | None, poll: float) -> Op[Obj]:
    """The TrainJob once `for_` holds; raises `unreachable(...)` when it never will."""
    check_condition(for_, "for_")
    result = yield from wait_for_condition(namespace, name, for_, check_timeout(timeout), poll)
    if not result.met:
        raise unreachable(result)
    return result.trainjob


def log_target(namespace: str, name: str, pod: str | None, follow: bool, timeout: float | None) -> Op[str]:
    """The pod whose log `logs()` reads: `pod`, else the launcher (waited for when following).
    The job is read first, so a missing job is `NotFound` before anything else."""
    yield from core.get_trainjob(namespace, name)
    if pod:
        return pod
    return (yield from find_launcher(namespace, name, follow, check_timeout(timeout)))


def keep(line: LogLine, rank: int | None) -> bool:
    return rank is None or line.rank == rank


def progress(namespace: str, name: str) -> Op[Progress | None]:
    """What the job's program last reported (`status.trainerStatus`); None before its first report."""
    return progress_of((yield from core.get_trainjob(namespace, name)))


def waiting(namespace: str, name: str) -> Op[Waiting | None]:
    """Why the job waits for admission and when it should start; None once admitted (or without Kueue)."""
    job = yield from core.get_trainjob(namespace, name)
    meta = job.get("metadata") or {}
    return (yield from waits(meta.get("namespace") or namespace)).get(meta.get("uid", ""))
