"""What `Client` and `AsyncClient` share beyond the client layer's core: the SDK's own operations —
waiting with the SDK's exceptions, finding the launcher whose log to read — and what a caller may pass.

Both clients run these same operations (`mpijob.client.core`), one on `Connection`, the other on
`AsyncConnection`, so they answer alike by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from mpijob.api import Obj, names
from mpijob.api.trainer.progress import Progress, progress_of
from mpijob.api.trainer.waiting import Waiting
from mpijob.client import core
from mpijob.client.core import Op, Sleep
from mpijob.client.errors import WaitTimeout
from mpijob.client.kueue import Kueue, waits
from mpijob.client.logs import LogLine
from mpijob.client.phase import true_condition
from mpijob.client.wait import (
    Deadline,
    WaitResult,
    check_condition,
    check_timeout,
    find_launcher,
    job_state,
    reached,
    wait_for_condition,
)
from mpijob.sdk.errors import JobFailed, MpijobError
from mpijob.sdk.progress_bar import JobView, progress_display
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


def wait(namespace: str, name: str, for_: str, timeout: float | None, poll: float,
         show: Callable[[JobView], None] | None = None) -> Op[Obj]:
    """The TrainJob once `for_` holds; raises `unreachable(...)` when it never will. `show` is told
    each poll's `JobView` that differs from the last (the progress bar)."""
    check_condition(for_, "for_")
    timeout = check_timeout(timeout)
    if show is None:
        result = yield from wait_for_condition(namespace, name, for_, timeout, poll)
    else:
        result = yield from watched_wait(namespace, name, for_, timeout, poll, show)
    if not result.met:
        raise unreachable(result)
    return result.trainjob


def watched_wait(namespace: str, name: str, want: str, timeout: float | None, poll: float,
                 show: Callable[[JobView], None]) -> Op[WaitResult]:
    """`wait_for_condition`'s poll, which also reads the pods and the program's report each time, so a
    person sees the phase, the percentage and the metrics move; the final view is shown before it returns."""
    deadline, kueue = Deadline(timeout), Kueue()
    last: JobView | None = None
    while True:
        job = yield from core.get_trainjob(namespace, name)
        pods = yield from core.job_pods(namespace, name)
        state = yield from job_state(namespace, job, pods, kueue)
        view = JobView.of(name, job, state, datetime.now(UTC))
        if view != last:
            show(view)
            last = view
        verdict = reached(want, job, pods)
        if verdict is not None:
            return WaitResult(want, verdict, state.phase, state.message, job)
        if deadline.expired():
            raise WaitTimeout(f"trainjob {name!r} did not reach {want} within {deadline.timeout:g}s (state: "
                              f"{state.phase}{': ' + state.message if state.message else ''})", job)
        yield from Sleep(poll)


@contextmanager
def shown(show_progress: bool) -> Iterator[Callable[[JobView], None] | None]:
    """The `show` callback of a wait with `show_progress` (the display that fits where the code runs,
    closed when the wait ends, however it ends); None without."""
    if not show_progress:
        yield None
        return
    display = progress_display()
    try:
        yield display.show
    finally:
        display.close()


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
