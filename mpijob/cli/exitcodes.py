"""The CLI's exit-code contract, so CI pipelines can branch on why a command failed.

Documented in README.md and in `mpijob --help` (main.EPILOG); the SDK's exceptions carry the same
categories. Keep the three in step.
"""

from __future__ import annotations

from enum import IntEnum

from mpijob.api.errors import ApiError
from mpijob.client.errors import ServerUnavailable, WaitTimeout


class Exit(IntEnum):
    OK = 0  # success (for `run`/`wait`: the TrainJob Completed)
    JOB_FAILED = 1  # the TrainJob ended Failed
    USAGE = 2  # the command line is wrong: unknown command/option, missing argument, a flag value outside its choices
    INVALID = 3  # bad input: unparsable file, bad kubeconfig/context, rejected object (400/409/422)
    NOT_FOUND = 4  # the named object does not exist (404)
    FORBIDDEN = 5  # not allowed (401/403)
    QUOTA = 6  # quota exceeded (403 "exceeded quota", 429 with a quota message)
    TIMEOUT = 7  # a wait or request timed out (504, --timeout)
    UNAVAILABLE = 8  # the server could not be reached / is not running / internal error (5xx)


MEANINGS: dict[Exit, str] = {
    Exit.OK: "ok",
    Exit.JOB_FAILED: "job failed",
    Exit.USAGE: "usage error",
    Exit.INVALID: "invalid input",
    Exit.NOT_FOUND: "not found",
    Exit.FORBIDDEN: "forbidden",
    Exit.QUOTA: "quota exceeded",
    Exit.TIMEOUT: "timed out",
    Exit.UNAVAILABLE: "server unavailable",
}


def summary(per_line: int = 4) -> str:
    """The contract for `--help`: `0 ok · 1 job failed · …`, in short paragraphs (rich re-wraps a
    long line, which could split `4 not found` across two lines)."""
    items = [f"{int(e)} {MEANINGS[e]}" for e in Exit]
    rows = [" · ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "\n\n".join(["Exit codes:", *rows])


class UsageError(Exception):
    """A flag or argument value the command cannot take (exit 2, like click's own usage errors).

    Raised for values click cannot check by itself (`get widgets`, `-o xml`); the message names the
    value and the choices.
    """


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
    if isinstance(exc, UsageError):
        return Exit.USAGE
    if isinstance(exc, ApiError):
        return for_api_error(exc)
    if isinstance(exc, ServerUnavailable):
        return Exit.UNAVAILABLE
    if isinstance(exc, WaitTimeout | TimeoutError):
        return Exit.TIMEOUT
    raise TypeError(f"no exit code for {type(exc).__name__}")
