"""A TrainJob's progress as its own program reports it: Trainer's `status.trainerStatus`.

A training program POSTs `{"trainerStatus": {...}}` (Trainer's `UpdateTrainJobStatusRequest`) to its
job's status endpoint, with the upstream SDK's `update_trainjob_status()` or by hand. `trainer_status`
checks that request as the TrainJob CRD's schema checks the status Trainer's status server applies
(so a bad value is the same 422 here as there); `progress_of` reads what is stored, for every client
and for the scheduler's start estimates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time
from mpijob.api.core.errors import Cause, bad_request, invalid

MAX_METRICS = 256  # the CRD's maxItems
MAX_METRIC_TEXT = 64  # the CRD's maxLength of a metric's name and value
INT32_MAX = 2**31 - 1
_FIELD = "status.trainerStatus"


@dataclass(frozen=True)
class Progress:
    """What a job's program last reported: percentage done, seconds left as of `updated`, and metrics."""

    updated: datetime  # lastUpdatedTime: when the program observed these values
    percentage: int | None = None  # progressPercentage, 0–100
    remaining_seconds: int | None = None  # estimatedRemainingSeconds, as of `updated`
    metrics: dict[str, str] = field(default_factory=dict)  # name → value, in the order reported

    def remaining_at(self, now: datetime) -> float | None:
        """Seconds left at `now`: the reported estimate less the time since it was reported (never < 0)."""
        if self.remaining_seconds is None:
            return None
        return max(0.0, self.remaining_seconds - (now - self.updated).total_seconds())

    @property
    def expected_end(self) -> datetime | None:
        """When the program expects to finish, by its last report."""
        return None if self.remaining_seconds is None else self.updated + timedelta(seconds=self.remaining_seconds)


def progress_of(trainjob: Obj) -> Progress | None:
    """The job's stored `trainerStatus`; None before its program's first report."""
    status = (trainjob.get("status") or {}).get("trainerStatus")
    if not isinstance(status, dict):
        return None
    updated = parse_time(status.get("lastUpdatedTime"))
    if updated is None:
        return None
    pct, left = status.get("progressPercentage"), status.get("estimatedRemainingSeconds")
    metrics = {str(m.get("name")): str(m.get("value")) for m in status.get("metrics") or [] if isinstance(m, dict)}
    return Progress(updated, pct if isinstance(pct, int) else None, left if isinstance(left, int) else None, metrics)


def _integer(status: Obj, key: str, high: int, causes: list[Cause]) -> None:
    value, path = status.get(key), f"{_FIELD}.{key}"
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        kind = type(value).__name__
        causes.append(Cause(path, f'Invalid value: {value!r}: {path} in body must be of type integer: "{kind}"',
                            "FieldValueTypeInvalid"))
    elif value < 0:
        causes.append(Cause(path, f"Invalid value: {value}: {path} in body should be greater than or equal to 0"))
    elif value > high:
        causes.append(Cause(path, f"Invalid value: {value}: {path} in body should be less than or equal to {high}"))


def _metrics(value: Any, causes: list[Cause]) -> None:
    path = f"{_FIELD}.metrics"
    if value is None:
        return
    if not isinstance(value, list):
        causes.append(Cause(path, f"Invalid value: {value!r}: {path} in body must be of type array",
                            "FieldValueTypeInvalid"))
        return
    if len(value) > MAX_METRICS:
        causes.append(Cause(path, f"Too many: {len(value)}: must have at most {MAX_METRICS} items",
                            "FieldValueTooMany"))
    for i, metric in enumerate(value):
        if not isinstance(metric, dict):
            causes.append(Cause(f"{path}[{i}]", f"Invalid value: {metric!r}: must be an object with name and value",
                                "FieldValueTypeInvalid"))
            continue
        for key in ("name", "value"):
            text, where = metric.get(key), f"{path}[{i}].{key}"
            if not isinstance(text, str):
                causes.append(Cause(where, "Required value" if text is None else
                                    f"Invalid value: {text!r}: {where} in body must be of type string",
                                    "FieldValueRequired" if text is None else "FieldValueTypeInvalid"))
            elif not 1 <= len(text) <= MAX_METRIC_TEXT:
                causes.append(Cause(where, f"Invalid value: {text!r}: {where} in body should be between 1 and "
                                    f"{MAX_METRIC_TEXT} characters long"))


def trainer_status(body: Any, name: str) -> Obj | None:
    """The `trainerStatus` of a status request for TrainJob `name`, checked as the CRD checks it (422
    naming each field otherwise); None when the request carries none, which upstream answers 200 and
    writes nothing for. Fields the request does not set are not kept: what is written is the report."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object: {\"trainerStatus\": {...}}")
    status = body.get("trainerStatus")
    if status is None:
        return None
    if not isinstance(status, dict):
        raise invalid("TrainJob", name, [Cause(_FIELD, f"Invalid value: {status!r}: {_FIELD} in body must be of "
                                         "type object", "FieldValueTypeInvalid")], names.TRAINER_GROUP)
    causes: list[Cause] = []
    _integer(status, "progressPercentage", 100, causes)
    _integer(status, "estimatedRemainingSeconds", INT32_MAX, causes)
    _metrics(status.get("metrics"), causes)
    stamp = status.get("lastUpdatedTime")
    if stamp is None:
        causes.append(Cause(_FIELD, 'Invalid value: "object": lastUpdatedTime is required when trainerStatus is '
                            "present"))
    elif not isinstance(stamp, str) or parse_time(stamp) is None:
        causes.append(Cause(f"{_FIELD}.lastUpdatedTime", f"Invalid value: {stamp!r}: {_FIELD}.lastUpdatedTime in body "
                            "must be of type date-time"))
    if causes:
        raise invalid("TrainJob", name, causes, names.TRAINER_GROUP)
    keys = ("progressPercentage", "estimatedRemainingSeconds", "metrics")
    out = {k: status[k] for k in keys if status.get(k) is not None}
    updated = parse_time(stamp)
    assert updated is not None
    out["lastUpdatedTime"] = updated.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # metav1.Time's form
    return out
