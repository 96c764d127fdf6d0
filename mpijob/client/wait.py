"""Waiting for a TrainJob: for a condition, for its launcher, for its end, for it to be gone.

Each wait is written once, as an operation (`mpijob.client.core`), and run by the sync SDK, the async
SDK and the CLI alike. Polling, like the upstream SDK: it works the same against the local cluster and
a real one, and a dropped connection costs one poll, not a re-established watch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.client import core
from mpijob.client.core import Op, Sleep
from mpijob.client.errors import InvalidArgument, NoLauncher, WaitTimeout
from mpijob.client.kueue import Kueue, queue_position, waiting_messages
from mpijob.client.phase import is_launcher, job_phase, pod_phase, pod_ready, terminal_condition, true_condition

POLL = 0.25  # seconds between polls (the upstream SDK polls too; a dropped poll costs nothing)
CONDITIONS = (names.COMPLETE, names.FAILED, "Running", "Finished")
STARTED = ("Running", "Succeeded", "Failed")  # pod phases of a launcher that has started


class Deadline:
    """When a wait of `timeout` seconds (None: no limit) gives up."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._at = None if timeout is None else time.monotonic() + timeout

    def expired(self) -> bool:
        return self._at is not None and time.monotonic() >= self._at

    def remaining(self) -> float | None:
        return None if self._at is None else max(0.0, self._at - time.monotonic())


def check_timeout(timeout: float | None, param: str = "timeout") -> float | None:
    """`timeout` itself (seconds, None for no limit), or `InvalidArgument` when it is not a number ≥ 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout != timeout:  # noqa: PLR0124 — NaN; math.isnan overflows on huge ints
        raise InvalidArgument(param, timeout, "is not a number of seconds",
                              "pass e.g. 600, or None to wait without a limit")
    if timeout < 0:
        raise InvalidArgument(param, timeout, "is negative", "pass a number of seconds ≥ 0, or None")
    return float(timeout)


def check_condition(want: str, param: str = "for_") -> str:
    """`want` itself, or `InvalidArgument` naming the conditions there are to wait for."""
    if want not in CONDITIONS:
        raise InvalidArgument(param, want, "is not a state to wait for", f"use one of {', '.join(CONDITIONS)}")
    return want


def reached(want: str, trainjob: Obj, pods: list[Obj] | None = None) -> bool | None:
    """True: `want` holds; False: it never can any more (the job ended the other way); None: not yet.

    `Running` is reached once the launcher runs (judged from `pods`); a job that completed has run, one
    that failed never will. `Finished` is either end."""
    failed = true_condition(trainjob, names.FAILED) is not None
    complete = true_condition(trainjob, names.COMPLETE) is not None
    if want == "Finished":
        return True if (failed or complete) else None
    if want == names.FAILED:
        return True if failed else (False if complete else None)
    if failed:
        return False
    if want == names.COMPLETE:
        return True if complete else None
    return True if complete or job_phase(trainjob, pods or [])[0] == "Running" else None


@dataclass(frozen=True)
class WaitResult:
    """The end of a wait: whether the awaited condition was reached, and the job as last seen."""

    want: str
    met: bool
    phase: str
    message: str
    trainjob: Obj


@dataclass(frozen=True)
class JobEnd:
    """How a TrainJob ended: `Complete` or `Failed`, with the condition's reason and message."""

    type: str
    reason: str
    message: str
    trainjob: Obj

    @property
    def succeeded(self) -> bool:
        return self.type == names.COMPLETE


def job_end(trainjob: Obj) -> JobEnd | None:
    c = terminal_condition(trainjob)
    if c is None:
        return None
    return JobEnd(str(c["type"]), str(c.get("reason") or ""), str(c.get("message") or ""), trainjob)


@dataclass(frozen=True)
class JobState:
    """Where a TrainJob is now, for a person watching: phase, queue position, pods ready."""

    phase: str
    message: str
    pods_ready: int
    pods_total: int
    position: int | None = None  # in its LocalQueue, 0 = next; only while Queued
    queue: str = ""


def job_state(namespace: str, trainjob: Obj, pods: list[Obj], kueue: Kueue | None = None) -> Op[JobState]:
    """The job's state now; asks Kueue why it waits, and its position, only while it waits there."""
    kueue = kueue or Kueue()
    meta = trainjob.get("metadata") or {}
    ns = meta.get("namespace") or namespace
    waiting = "" if pods else (yield from waiting_messages(ns, kueue=kueue)).get(meta.get("uid", ""), "")
    phase, message = job_phase(trainjob, pods, waiting)
    position = (yield from queue_position(trainjob, ns)) if phase == "Queued" else None
    lq = (meta.get("labels") or {}).get(names.LABEL_QUEUE_NAME, "")
    return JobState(phase, message, sum(1 for p in pods if pod_ready(p)), len(pods), position, lq)


def _state_text(phase: str, message: str) -> str:
    return f"{phase}: {message}" if message else phase


def wait_for_condition(
    namespace: str,
    name: str,
    want: str = names.COMPLETE,
    timeout: float | None = None,
    poll: float = POLL,
    progress: Callable[[JobState], None] | None = None,
) -> Op[WaitResult]:
    """Poll until `want` (one of CONDITIONS) holds or can no longer hold; `WaitTimeout` after `timeout`
    seconds. `progress` is told each new `JobState` (it costs a few more requests per poll)."""
    check_condition(want)
    deadline = Deadline(check_timeout(timeout))
    kueue = Kueue()
    last: JobState | None = None
    while True:
        job = yield from core.get_trainjob(namespace, name)
        pods = (yield from core.job_pods(namespace, name)) if want == "Running" or progress is not None else None
        verdict = reached(want, job, pods)
        if verdict is not None:
            return WaitResult(want, verdict, *job_phase(job, pods), job)
        if progress is not None and pods is not None:
            state = yield from job_state(namespace, job, pods, kueue)
            if state != last:
                progress(state)
                last = state
        if deadline.expired():
            pods = pods if pods is not None else (yield from core.job_pods(namespace, name))
            raise WaitTimeout(f"trainjob {name!r} did not reach {want} within {deadline.timeout:g}s (state: "
                              f"{_state_text(*job_phase(job, pods))})", job)
        yield from Sleep(poll)


def wait_for_launcher(
    namespace: str,
    name: str,
    timeout: float | None = None,
    poll: float = 0.2,
    progress: Callable[[str, str], None] | None = None,
) -> Op[Obj | None]:
    """The launcher pod once it has started (Running or ended); None if the job ended without one.
    `progress` is told each new (phase, message)."""
    deadline = Deadline(check_timeout(timeout))
    last: tuple[str, str] | None = None
    while True:
        job = yield from core.get_trainjob(namespace, name)
        pods = yield from core.job_pods(namespace, name)
        launcher = next((p for p in pods if is_launcher(p)), None)
        if launcher is not None and pod_phase(launcher) in STARTED:
            return launcher
        if terminal_condition(job) is not None:
            return launcher
        state = job_phase(job, pods)
        if progress is not None and state != last:
            progress(*state)
            last = state
        if deadline.expired():
            raise WaitTimeout(f"trainjob {name!r}: launcher not started after {deadline.timeout:g}s (state: "
                              f"{_state_text(*state)})", job)
        yield from Sleep(poll)


def find_launcher(namespace: str, name: str, follow: bool, timeout: float | None = None) -> Op[str]:
    """The name of the launcher pod whose log to read: with `follow`, once it has started (waiting up
    to `timeout`); without, as it is now. `NoLauncher` when there is none to read."""
    if follow:
        launcher = yield from wait_for_launcher(namespace, name, timeout)
    else:
        launcher = next(iter((yield from core.job_pods(namespace, name, names.LAUNCHER))), None)
    if launcher is None:
        raise NoLauncher(f"trainjob {name!r} has no launcher pod " + ("(it ended without one)" if follow else
                         "(yet); follow its log to wait for the launcher to start"))
    return str(launcher["metadata"]["name"])


def wait_for_finish(namespace: str, name: str, timeout: float | None = None, poll: float = POLL) -> Op[JobEnd]:
    """Block until the TrainJob is `Complete` or `Failed`; `WaitTimeout` after `timeout` seconds."""
    result = yield from wait_for_condition(namespace, name, "Finished", timeout, poll)
    end = job_end(result.trainjob)
    assert end is not None  # "Finished" is only reached at a terminal condition
    return end


def wait_until_gone(namespace: str, name: str, timeout: float = 60, poll: float = 0.2) -> Op[None]:
    """Block until a deleted TrainJob no longer exists (404)."""
    deadline = Deadline(timeout)
    while True:
        try:
            yield from core.get_trainjob(namespace, name)
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        if deadline.expired():
            raise WaitTimeout(f"trainjob {name!r} still exists {timeout:g}s after it was deleted")
        yield from Sleep(poll)
