"""Exception mapping (Status → typed exception, same categories as the CLI's exit codes) and the
pure `wait` decision, without a server."""

from __future__ import annotations

import json

import pytest

from mpijob.api.errors import ApiError, Cause
from mpijob.client.errors import ServerUnavailable as TransportError
from mpijob.client.errors import WaitTimeout
from mpijob.sdk import errors, waiting
from mpijob.sdk.aio import status_error


@pytest.mark.parametrize(
    ("code", "reason", "message", "cls", "exit_code"),
    [
        (404, "NotFound", 'trainjobs "x" not found', errors.NotFound, 4),
        (422, "Invalid", "TrainJob x is invalid", errors.InvalidInput, 3),
        (400, "BadRequest", "bad body", errors.InvalidInput, 3),
        (409, "AlreadyExists", "exists", errors.InvalidInput, 3),
        (403, "Forbidden", "user cannot create trainjobs", errors.Forbidden, 5),
        (401, "Unauthorized", "Unauthorized", errors.Forbidden, 5),
        (403, "Forbidden", "forbidden: exceeded quota: needs 32 gpus", errors.QuotaExceeded, 6),
        (504, "Timeout", "timed out", errors.Timeout, 7),
        (500, "InternalError", "boom", errors.ServerUnavailable, 8),
        (503, "ServiceUnavailable", "down", errors.ServerUnavailable, 8),
    ],
)
def test_status_maps_to_the_exit_code_category(code: int, reason: str, message: str,
                                               cls: type[errors.MpijobError], exit_code: int) -> None:
    causes = [Cause("spec.x", "Invalid value: 1")]
    err = errors.from_api_error(ApiError(code, reason, message, causes=causes))
    assert type(err) is cls and err.exit_code == exit_code
    assert (err.code, err.reason, err.causes) == (code, reason, causes)
    assert err.message.startswith(message) and ("mpijob kubeconfig" in err.message) == (code == 401)  # the fix
    assert isinstance(err, errors.MpijobError)


def test_transport_and_wait_failures_translate() -> None:
    down = errors.translate(TransportError("https://127.0.0.1:1", "connection refused"))
    assert isinstance(down, errors.ServerUnavailable) and isinstance(down, ConnectionError)
    assert "connection refused" in str(down) and down.exit_code == 8
    slow = errors.translate(WaitTimeout("not yet"))
    assert isinstance(slow, errors.Timeout) and isinstance(slow, TimeoutError) and slow.exit_code == 7
    other = KeyError("x")
    assert errors.translate(other) is other


def test_causes_are_listed_when_the_message_does_not_name_them() -> None:
    err = errors.InvalidInput("TrainJob x is invalid", causes=[Cause("spec.trainer.numNodes", "must be >= 1")])
    assert str(err) == "TrainJob x is invalid\n  * spec.trainer.numNodes: must be >= 1"


def test_status_body_round_trips_through_the_async_path() -> None:
    body = ApiError(422, "Invalid", "TrainJob.trainer.kubeflow.org \"x\" is invalid", "x", "trainer.kubeflow.org",
                    "TrainJob", [Cause("spec.trainer.numNodes", "Invalid value: 0")]).to_status()
    err = status_error(422, "Unprocessable Entity", json.dumps(body))
    assert isinstance(err, errors.InvalidInput) and err.causes == [Cause("spec.trainer.numNodes", "Invalid value: 0")]
    plain = status_error(502, "Bad Gateway", "upstream down")
    assert isinstance(plain, errors.ServerUnavailable) and plain.message == "upstream down"


def _job(*conditions: tuple[str, str], suspend: bool = False) -> dict:
    return {"metadata": {"name": "j"}, "spec": {"suspend": suspend},
            "status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": f"{t} msg"}
                                      for t, r in conditions]}}


def _pod(role: str, phase: str) -> dict:
    return {"metadata": {"name": f"j-{role}-0-0", "labels": {"jobset.sigs.k8s.io/replicatedjob-name": role}},
            "status": {"phase": phase}}


def test_reached_decides_each_wait_target() -> None:
    running = _job()
    complete = _job(("Complete", "AllJobsCompleted"))
    failed = _job(("Failed", "FailedJobs"))
    pods = [_pod("launcher", "Running"), _pod("node", "Running")]
    assert not waiting.reached("Complete", running)
    assert waiting.reached("Complete", complete)
    assert waiting.reached("Finished", complete) and waiting.reached("Finished", failed)
    assert not waiting.reached("Finished", running)
    assert waiting.reached("Failed", failed)
    assert not waiting.reached("Running", running, [_pod("launcher", "Pending")])
    assert waiting.reached("Running", running, pods)
    assert waiting.reached("Running", complete, [])
    with pytest.raises(errors.JobFailed, match="'j' failed: FailedJobs: Failed msg") as info:
        waiting.reached("Complete", failed)
    assert info.value.reason == "FailedJobs" and info.value.trainjob is failed
    with pytest.raises(errors.JobFailed):
        waiting.reached("Running", failed, pods)
    with pytest.raises(errors.MpijobError, match="never be Failed"):
        waiting.reached("Failed", complete)
    with pytest.raises(errors.InvalidInput, match="Complete, Failed, Running, Finished"):
        waiting.check_for("Succeeded")
