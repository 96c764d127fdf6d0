"""The SDK's exceptions: one class per exit-code category of the CLI, so a notebook and a CI script
branch on the same facts (`except NotFound:` here is exit code 4 there).

Each carries what the server's `Status` said — HTTP `code`, `reason`, `message`, field-level
`causes` — and `exit_code`, the number the CLI would exit with for the same failure.
"""

from __future__ import annotations

from typing import Any

from mpijob.api.errors import ApiError, Cause
from mpijob.client.errors import ServerUnavailable as _TransportError
from mpijob.client.errors import CREDENTIALS_HINT, WaitTimeout


class MpijobError(Exception):
    """Base of every SDK error; `exit_code` is the CLI's exit code for the same failure."""

    exit_code: int = 1

    def __init__(self, message: str, *, code: int = 0, reason: str = "", causes: list[Cause] | None = None,
                 trainjob: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code  # the HTTP status code (0 when no server answered)
        self.reason = reason  # the Status reason, e.g. "Invalid", "NotFound"
        self.causes: list[Cause] = list(causes or [])
        self.trainjob = trainjob  # the TrainJob as last seen, for JobFailed and Timeout

    def __str__(self) -> str:
        if not self.causes or all(c.field and c.field in self.message for c in self.causes):
            return self.message
        return self.message + "".join(f"\n  * {c.field}: {c.message}" for c in self.causes)


class JobFailed(MpijobError):
    """The TrainJob ended `Failed` (exit code 1); `reason`/`message` are its Failed condition's."""

    exit_code = 1


class InvalidInput(MpijobError):
    """The input was rejected before anything was created (exit code 3); `causes` name each field.

    Not a `ValueError` on purpose: pydantic would wrap a ValueError raised while building a `TrainJob`."""

    exit_code = 3


class NotFound(MpijobError):
    """The named object does not exist (exit code 4)."""

    exit_code = 4


class Forbidden(MpijobError):
    """RBAC (or authentication) refused the request (exit code 5)."""

    exit_code = 5


class QuotaExceeded(MpijobError):
    """The job can never fit its queue's quota (exit code 6)."""

    exit_code = 6


class Timeout(MpijobError, TimeoutError):
    """A wait or request gave up before the awaited state (exit code 7)."""

    exit_code = 7


class ServerUnavailable(MpijobError, ConnectionError):
    """The API server could not be reached or answered with a server error (exit code 8)."""

    exit_code = 8


def from_api_error(err: ApiError) -> MpijobError:
    """The SDK exception for a server `Status` (same rules as the CLI's exit codes)."""
    kw: dict[str, Any] = {"code": err.code, "reason": err.reason, "causes": err.causes}
    text = err.message.lower()
    cls: type[MpijobError]
    if "exceeded quota" in text or err.reason == "QuotaExceeded":
        cls = QuotaExceeded
    elif err.code == 404 or err.reason == "NotFound":
        cls = NotFound
    elif err.code in (400, 409, 422) or err.reason in ("Invalid", "BadRequest", "AlreadyExists"):
        cls = InvalidInput
    elif err.code in (401, 403):
        cls = Forbidden
    elif err.code in (408, 504) or err.reason == "Timeout":
        cls = Timeout
    elif err.code >= 500 or err.code == 429:
        cls = ServerUnavailable
    else:
        cls = InvalidInput
    return cls(f"{err.message} ({CREDENTIALS_HINT})" if err.code == 401 else err.message, **kw)


def translate(exc: BaseException) -> BaseException:
    """The SDK exception for any client-layer failure; other exceptions are returned unchanged."""
    if isinstance(exc, MpijobError):
        return exc
    if isinstance(exc, ApiError):
        return from_api_error(exc)
    if isinstance(exc, _TransportError):
        return ServerUnavailable(str(exc), reason="ServiceUnavailable")
    if isinstance(exc, WaitTimeout):
        return Timeout(str(exc), reason="Timeout")
    return exc


__all__ = [
    "Cause",
    "Forbidden",
    "InvalidInput",
    "JobFailed",
    "MpijobError",
    "NotFound",
    "QuotaExceeded",
    "ServerUnavailable",
    "Timeout",
    "from_api_error",
    "translate",
]
