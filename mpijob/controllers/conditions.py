"""TrainJob conditions and `jobsStatus`, computed the way Trainer and JobSet report them."""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.names import COMPLETE, FAILED
from mpijob.store.objects import now


def get(obj: Obj, kind: str) -> Obj | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def is_true(obj: Obj, kind: str) -> bool:
    c = get(obj, kind)
    return bool(c and c.get("status") == "True")


def finished(obj: Obj) -> bool:
    return is_true(obj, COMPLETE) or is_true(obj, FAILED)


def set_condition(obj: Obj, kind: str, status: bool, reason: str, message: str) -> bool:
    """Set a condition; `lastTransitionTime` moves only when the status flips. True if anything changed."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    value = "True" if status else "False"
    for c in conditions:
        if c.get("type") == kind:
            if (c.get("status"), c.get("reason"), c.get("message")) == (value, reason, message):
                return False
            if c.get("status") != value:
                c["lastTransitionTime"] = now()
            c.update(status=value, reason=reason, message=message)
            return True
    conditions.append(
        {"type": kind, "status": value, "reason": reason, "message": message, "lastTransitionTime": now()}
    )
    return True


def jobs_status(pods: list[Obj], rjobs: list[str], expected: dict[str, int]) -> list[dict[str, int | str]]:
    """One entry per replicatedJob, counting its (single) child Job as JobSet does."""
    out: list[dict[str, int | str]] = []
    for rjob in rjobs:
        mine = [p for p in pods if p["metadata"].get("labels", {}).get(names.LABEL_RJOB_NAME) == rjob]
        phases = [p.get("status", {}).get("phase", "Pending") for p in mine]
        ready = sum(
            1 for p in mine
            if any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in p.get("status", {}).get("conditions") or [])
        )
        want = expected.get(rjob, len(mine))
        failed = int("Failed" in phases)
        succeeded = int(not failed and bool(mine) and len(mine) >= want and all(ph == "Succeeded" for ph in phases))
        active = int(not failed and not succeeded and any(ph in ("Pending", "Running") for ph in phases))
        out.append({
            "name": rjob,
            "active": active,
            "ready": int(active and ready + phases.count("Succeeded") >= want and want > 0),
            "succeeded": succeeded,
            "failed": failed,
            "suspended": 0,
        })
    return out
