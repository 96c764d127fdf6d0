"""The CLI's exit-code contract, so CI pipelines can branch on why a command failed.

Documented in README.md; keep the two in step.
"""

from __future__ import annotations

from enum import IntEnum

from mpijob.api.errors import ApiError
from mpijob.client.errors import ServerUnavailable, WaitTimeout


class Exit(IntEnum):
    OK = 0  # success (for `run`: the TrainJob Completed)
    JOB_FAILED = 1  # the TrainJob ended Failed
    INVALID = 2  # bad input: unparsable file, rejected object (400/409/422), bad flags
    NOT_FOUND = 3  # the named object does not exist (404)
    FORBIDDEN = 4  # not allowed (401/403)
    QUOTA = 5  # quota exceeded (403 "exceeded quota", 429 with a quota message)
    TIMEOUT = 6  # a wait or request timed out (504, --timeout)
    UNAVAILABLE = 7  # the server could not be reached / is not running / internal error (5xx)


def for_api_error(err: ApiError) -> Exit:
    """Map an API Status (code + reason) to the contract above."""
    text = err.message.lower()
    if "exceeded quota" in text or err.reason == "QuotaExceeded":
        return Exit.QUOTA
    if err.code in (400, 409, 422) or err.reason in ("Invalid", "BadRequest", "AlreadyExists"):
        return Exit.INVALID
    if err.code == 404:
        return Exit.NOT_FOUND
    if err.code in (401, 403):
        return Exit.FORBIDDEN
    if err.code in (408, 504) or err.reason == "Timeout":
        return Exit.TIMEOUT
    if err.code >= 500 or err.code == 429:
        return Exit.UNAVAILABLE
    return Exit.INVALID


def for_exception(exc: BaseException) -> Exit:
    if isinstance(exc, ApiError):
        return for_api_error(exc)
    if isinstance(exc, ServerUnavailable):
        return Exit.UNAVAILABLE
    if isinstance(exc, WaitTimeout | TimeoutError):
        return Exit.TIMEOUT
    raise TypeError(f"no exit code for {type(exc).__name__}")
