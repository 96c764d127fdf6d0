"""What `wait(for_=...)` waits for, decided from one poll's TrainJob (and pods): shared by `Client`
and `AsyncClient` so both answer the same way, and pure so it is tested without a server.
"""

from __future__ import annotations

from typing import Any

from mpijob.client.phase import condition, job_phase
from mpijob.sdk.errors import InvalidInput, JobFailed, MpijobError

Obj = dict[str, Any]
FOR_VALUES = ("Complete", "Failed", "Running", "Finished")
DEFAULT_POLL = 0.25  # seconds between polls (the upstream SDK polls too; a dropped poll costs nothing)


def check_for(for_: str) -> str:
    """`for_` itself, or `InvalidInput` naming the accepted values."""
    if for_ not in FOR_VALUES:
        raise InvalidInput(f"for_={for_!r} is not a state to wait for; use one of {', '.join(FOR_VALUES)}",
                           reason="BadRequest")
    return for_


def needs_pods(for_: str) -> bool:
    """Only `Running` is judged from the pods (no condition marks a running TrainJob)."""
    return for_ == "Running"


def failed(trainjob: Obj) -> JobFailed:
    c = condition(trainjob, "Failed") or {}
    name = (trainjob.get("metadata") or {}).get("name", "")
    reason, message = str(c.get("reason") or "Failed"), str(c.get("message") or "")
    return JobFailed(f"trainjob {name!r} failed: {reason}" + (f": {message}" if message else ""),
                     reason=reason, trainjob=trainjob)


def reached(for_: str, trainjob: Obj, pods: list[Obj] | None = None) -> bool:
    """True once the awaited state holds; raises when it never will (`JobFailed` when waiting for
    Complete or Running and the job failed, `MpijobError` when waiting for Failed and it completed)."""
    done_ok = condition(trainjob, "Complete") is not None
    done_failed = condition(trainjob, "Failed") is not None
    if for_ == "Finished":
        return done_ok or done_failed
    if for_ == "Failed":
        if done_ok:
            name = (trainjob.get("metadata") or {}).get("name", "")
            raise MpijobError(f"trainjob {name!r} completed, so it will never be Failed",
                              reason="Unreachable", trainjob=trainjob)
        return done_failed
    if done_failed:
        raise failed(trainjob)
    if for_ == "Complete":
        return done_ok
    return done_ok or job_phase(trainjob, pods or [])[0] == "Running"


def timeout_message(name: str, for_: str, timeout: float, trainjob: Obj | None, pods: list[Obj] | None) -> str:
    phase = job_phase(trainjob, pods)[0] if trainjob is not None else "unknown"
    return f"trainjob {name!r} is not {for_} after {timeout:g}s (phase: {phase})"
