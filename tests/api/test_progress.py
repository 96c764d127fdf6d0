"""A job's progress report as the CRD checks it, what clients read of it, and the waiting sentence's
estimate counted from a client's own clock (pure; the endpoint: tests/server/test_progress_http.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.api.trainer.progress import Progress, progress_of, trainer_status
from mpijob.api.trainer.waiting import Waiting, about

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def fields(body: object) -> dict[str, str]:
    with pytest.raises(ApiError) as err:
        trainer_status(body, "pi")
    assert err.value.code == 422
    return {c.field: c.message for c in err.value.causes}


def test_a_report_is_checked_as_the_trainjob_crd_checks_trainer_status() -> None:
    ok = {"progressPercentage": 100, "estimatedRemainingSeconds": 0, "metrics": [{"name": "loss", "value": "1"}],
          "lastUpdatedTime": "2026-11-20T13:00:00.5+01:00", "extra": "dropped"}
    assert trainer_status({"trainerStatus": ok}, "pi") == {
        "progressPercentage": 100, "estimatedRemainingSeconds": 0, "metrics": [{"name": "loss", "value": "1"}],
        "lastUpdatedTime": "2026-11-20T12:00:00Z"}
    assert trainer_status({}, "pi") is None and trainer_status({"trainerStatus": None}, "pi") is None
    bad = fields({"trainerStatus": {"progressPercentage": -1, "estimatedRemainingSeconds": 2**31,
                                    "metrics": [{"name": "x" * 65, "value": 1}], "lastUpdatedTime": "yesterday"}})
    assert set(bad) == {"status.trainerStatus.progressPercentage", "status.trainerStatus.estimatedRemainingSeconds",
                        "status.trainerStatus.metrics[0].name", "status.trainerStatus.metrics[0].value",
                        "status.trainerStatus.lastUpdatedTime"}, bad
    assert fields({"trainerStatus": {"progressPercentage": True, "lastUpdatedTime": "2026-11-20T12:00:00Z"}}) == {
        "status.trainerStatus.progressPercentage":
            "Invalid value: True: status.trainerStatus.progressPercentage in body must be of type integer: \"bool\""}
    with pytest.raises(ApiError) as err:
        trainer_status(["not", "an", "object"], "pi")
    assert err.value.code == 400


def test_what_clients_read_of_a_report() -> None:
    job = {"status": {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600,
                                        "metrics": [{"name": "loss", "value": "0.2"}],
                                        "lastUpdatedTime": "2026-11-20T12:00:00Z"}}}
    p = progress_of(job)
    assert p == Progress(NOW, 40, 600, {"loss": "0.2"})
    assert p.expected_end == NOW + timedelta(minutes=10)
    assert p.remaining_at(NOW + timedelta(minutes=4)) == 360 and p.remaining_at(NOW + timedelta(hours=1)) == 0
    assert progress_of({"status": {}}) is None
    assert progress_of({"status": {"trainerStatus": {"progressPercentage": 1}}}) is None  # no lastUpdatedTime


def test_the_estimate_is_counted_from_the_readers_clock() -> None:
    assert [about(s) for s in (0, 59, 60, 61, 720, 5340, 5400, 7260, 2 * 86400, 2 * 86400 + 3600)] == [
        "<1 min", "<1 min", "~1 min", "~2 min", "~12 min", "~89 min", "~1 h 30 min", "~2 h 1 min", "~2 d",
        "~2 d 1 h"]
    why = Waiting("needs 8 nvidia.com/gpu, 4 of 16 free in ClusterQueue gpu; 2 jobs ahead", NOW + timedelta(minutes=12))
    assert why.sentence(NOW) == ("needs 8 nvidia.com/gpu, 4 of 16 free in ClusterQueue gpu; 2 jobs ahead; "
                                 "estimated start in ~12 min")
    assert why.sentence(NOW + timedelta(minutes=10)).endswith("; estimated start in ~2 min")
    assert Waiting.of({"metadata": {"annotations": why.annotations()}}) == why
    assert Waiting("first in line").sentence(NOW) == "first in line; no estimate"
    assert Waiting.of({"metadata": {}}) is None
