"""Waiting for a TrainJob: for its launcher to start, and for it to finish.

Polling, like the upstream SDK: it works the same against the local cluster and a real one, and a
dropped connection costs one poll, not a re-established watch.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mpijob.api.errors import ApiError
from mpijob.client.api import Cluster
from mpijob.client.errors import WaitTimeout
from mpijob.client.phase import ROLE_LABEL, condition, finished, job_phase, pod_phase, pod_ready

Obj = dict[str, Any]
Progress = Callable[[str, str], None]  # (phase, message)


@dataclass(frozen=True)
class Outcome:
    """How a TrainJob ended: `Complete` or `Failed`, with the condition's reason and message."""

    type: str
    reason: str
    message: str
    trainjob: Obj

    @property
    def succeeded(self) -> bool:
        return self.type == "Complete"


def outcome(trainjob: Obj) -> Outcome | None:
    c = finished(trainjob)
    if c is None:
        return None
    return Outcome(str(c["type"]), str(c.get("reason") or ""), str(c.get("message") or ""), trainjob)


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def wait_for_launcher(
    cluster: Cluster,
    name: str,
    namespace: str | None = None,
    timeout: float | None = None,
    poll: float = 0.2,
    progress: Progress | None = None,
) -> Obj | None:
    """The launcher pod once it has started (Running or ended); None if the job finished without one."""
    deadline = _deadline(timeout)
    last: tuple[str, str] | None = None
    while True:
        job = cluster.get_trainjob(name, namespace)
        pods = cluster.job_pods(name, namespace)
        launcher = next((p for p in pods if (p["metadata"].get("labels") or {}).get(ROLE_LABEL) == "launcher"), None)
        if launcher is not None and pod_phase(launcher) in ("Running", "Succeeded", "Failed"):
            return launcher
        if outcome(job) is not None:
            return launcher
        state = job_phase(job, pods)
        if progress is not None and state != last:
            progress(*state)
            last = state
        if _expired(deadline):
            raise WaitTimeout(f"trainjob {name!r}: launcher not started after {timeout:g}s (state: {state[0]})")
        time.sleep(poll)


def wait_for_finish(
    cluster: Cluster,
    name: str,
    namespace: str | None = None,
    timeout: float | None = None,
    poll: float = 0.25,
    progress: Progress | None = None,
) -> Outcome:
    """Block until the TrainJob is `Complete` or `Failed`; `WaitTimeout` after `timeout` seconds."""
    deadline = _deadline(timeout)
    last: tuple[str, str] | None = None
    while True:
        job = cluster.get_trainjob(name, namespace)
        if (done := outcome(job)) is not None:
            return done
        if progress is not None:
            state = job_phase(job, cluster.job_pods(name, namespace))
            if state != last:
                progress(*state)
                last = state
        if _expired(deadline):
            raise WaitTimeout(f"trainjob {name!r} has not finished after {timeout:g}s")
        time.sleep(poll)


def wait_until_gone(
    cluster: Cluster, name: str, namespace: str | None = None, timeout: float = 60, poll: float = 0.2
) -> None:
    """Block until a deleted TrainJob no longer exists (404)."""
    from mpijob.api.errors import ApiError

    deadline = _deadline(timeout)
    while True:
        try:
            cluster.get_trainjob(name, namespace)
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        if _expired(deadline):
            raise WaitTimeout(f"trainjob {name!r} still exists {timeout:g}s after it was deleted")
        time.sleep(poll)


# -- `mpijob wait`: a chosen condition, with what a person watching wants to see --------------------

CONDITIONS = ("Complete", "Failed", "Running", "Finished")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, flag: str = "--timeout") -> float:
    """Seconds in `30s`, `10m`, `1h`, `1h30m`, `250ms` or a bare number of seconds (kubectl's forms)."""
    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        parts = _DURATION.findall(t)
        if not parts or "".join(n + u for n, u in parts) != t:
            raise ApiError(400, "BadRequest", f"{flag} {text!r} is not a duration; use a number with a unit, "
                           "e.g. 30s, 10m, 1h or 1h30m") from None
        value = sum(float(n) * _UNITS[u] for n, u in parts)
    if value < 0:
        raise ApiError(400, "BadRequest", f"{flag} {text!r} is negative; use a positive duration such as 10m")
    return value


@dataclass(frozen=True)
class Snapshot:
    """Where a TrainJob is now, for a progress line: phase, queue position, pods ready."""

    phase: str
    message: str
    pods_ready: int
    pods_total: int
    position: int | None = None  # in its LocalQueue, 0 = next; only while Queued
    queue: str = ""

    def describe(self) -> str:
        parts = [self.phase]
        if self.position is not None:
            parts.append(f"position {self.position} in queue {self.queue}")
        if self.pods_total:
            parts.append(f"{self.pods_ready}/{self.pods_total} pods ready")
        if self.message:
            parts.append(self.message)
        return " · ".join(parts)


def queue_position(cluster: Cluster, trainjob: Obj) -> int | None:
    """The job's position in its LocalQueue from Kueue's visibility API; None when not pending
    there, not queued through Kueue, or the cluster cannot tell."""
    meta = trainjob.get("metadata") or {}
    lq = (meta.get("labels") or {}).get(QUEUE_LABEL)
    ns = meta.get("namespace") or cluster.namespace
    if not lq:
        return None
    try:
        items = (cluster.request("GET", f"{VISIBILITY}/namespaces/{ns}/localqueues/{lq}/pendingworkloads")
                 or {}).get("items") or []
    except ApiError:
        return None
    for item in items:
        owners = (item.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("uid") == meta.get("uid") or (o.get("kind") == "TrainJob" and o.get("name") == meta.get("name"))
               for o in owners):
            pos = item.get("positionInLocalQueue")
            return int(pos) if pos is not None else None
    return None


def snapshot(cluster: Cluster, trainjob: Obj, pods: list[Obj]) -> Snapshot:
    """The job's state now; asks the queue for the position only while the job waits there."""
    waiting = "" if pods else cluster.waiting_messages(trainjob["metadata"].get("namespace")).get(
        trainjob["metadata"].get("uid", ""), "")
    phase, message = job_phase(trainjob, pods, waiting)
    position = queue_position(cluster, trainjob) if phase == "Queued" else None
    lq = ((trainjob.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL, "")
    return Snapshot(phase, message, sum(1 for p in pods if pod_ready(p)), len(pods), position, lq)


@dataclass(frozen=True)
class WaitResult:
    """The end of a `wait`: whether the awaited condition was reached, and the job as last seen."""

    met: bool
    phase: str
    message: str
    trainjob: Obj


def _reached(want: str, trainjob: Obj, phase: str) -> bool | None:
    """True: the condition holds; False: it never can any more; None: keep waiting."""
    failed, complete = condition(trainjob, "Failed"), condition(trainjob, "Complete")
    if want == "Finished":
        return True if (failed or complete) else None
    if want == "Failed":
        return True if failed else (False if complete else None)
    if want == "Complete":
        return True if complete else (False if failed else None)
    # Running: reached once the launcher runs; a job that completed has run, one that failed never will
    if phase == "Running" or complete:
        return True
    return False if failed else None


def wait_for_condition(
    cluster: Cluster,
    name: str,
    want: str = "Complete",
    namespace: str | None = None,
    timeout: float | None = None,
    poll: float = 0.25,
    progress: Callable[[Snapshot], None] | None = None,
) -> WaitResult:
    """Poll until `want` (one of CONDITIONS) holds or can no longer hold; `WaitTimeout` after `timeout`."""
    if want not in CONDITIONS:
        raise ApiError(400, "BadRequest", f"--for {want!r} is not a condition to wait for; use one of "
                       f"{', '.join(CONDITIONS)}")
    deadline = _deadline(timeout)
    last: Snapshot | None = None
    while True:
        job = cluster.get_trainjob(name, namespace)
        pods = cluster.job_pods(name, namespace)
        phase, message = job_phase(job, pods)
        reached = _reached(want, job, phase)
        if reached is not None:
            return WaitResult(reached, phase, message, job)
        if progress is not None:
            snap = snapshot(cluster, job, pods)
            if snap != last:
                progress(snap)
                last = snap
        if _expired(deadline):
            raise WaitTimeout(f"trainjob {name!r} did not reach {want} within {timeout:g}s (state: {phase}"
                              f"{': ' + message if message else ''})")
        time.sleep(poll)
