"""Waiting for a TrainJob: for its launcher to start, and for it to finish.

Polling, like the upstream SDK: it works the same against the local cluster and a real one, and a
dropped connection costs one poll, not a re-established watch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mpijob.client.api import Cluster
from mpijob.client.errors import WaitTimeout
from mpijob.client.phase import ROLE_LABEL, finished, job_phase, pod_phase

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
