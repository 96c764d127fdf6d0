"""The SDK's exceptions: one class per exit-code category of the CLI, so a notebook and a CI script
branch on the same facts (`except NotFound:` here is exit code 4 there).

Each carries what the server's `Status` said — HTTP `code`, `reason`, `message`, field-level
`causes` — and `exit_code`, the number the CLI would exit with for the same failure. Which class a
failure is comes from the client layer's one table (`mpijob.client.errors.category`), the table the
CLI's exit codes come from too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mpijob.api.core.errors import ApiError, Cause
from mpijob.client.errors import Category, category, hint


class MpijobError(Exception):
    """Base of every SDK error; `exit_code` is the CLI's exit code for the same failure."""

    exit_code: int = int(Category.JOB_FAILED)

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

    exit_code = int(Category.JOB_FAILED)


class InvalidInput(MpijobError):
    """The input was rejected before anything was created (exit code 3); `causes` name each field.

    Not a `ValueError` on purpose: pydantic would wrap a ValueError raised while building a `TrainJob`."""

    exit_code = int(Category.INVALID)


class NotFound(MpijobError):
    """The named object does not exist (exit code 4)."""

    exit_code = int(Category.NOT_FOUND)


class Forbidden(MpijobError):
    """RBAC (or authentication) refused the request (exit code 5)."""

    exit_code = int(Category.FORBIDDEN)


class QuotaExceeded(MpijobError):
    """The job can never fit its queue's quota (exit code 6)."""

    exit_code = int(Category.QUOTA)


class Timeout(MpijobError, TimeoutError):
    """A wait or request gave up before the awaited state (exit code 7)."""

    exit_code = int(Category.TIMEOUT)


class ServerUnavailable(MpijobError, ConnectionError):
    """The API server could not be reached or answered with a server error (exit code 8)."""

    exit_code = int(Category.UNAVAILABLE)


BY_CATEGORY: dict[int, type[MpijobError]] = {
    cls.exit_code: cls
    for cls in (JobFailed, InvalidInput, NotFound, Forbidden, QuotaExceeded, Timeout, ServerUnavailable)
}
# The Status reason an SDK error carries when no server answered (the failure was the client's own).
LOCAL_REASONS = {Category.INVALID: "BadRequest", Category.NOT_FOUND: "NotFound", Category.TIMEOUT: "Timeout",
                 Category.UNAVAILABLE: "ServiceUnavailable"}


def sdk_error(exc: BaseException) -> BaseException:
    """The SDK exception for a failure of the client layer (its class from the one category table);
    SDK exceptions and exceptions of no category are returned unchanged."""
    if isinstance(exc, MpijobError):
        return exc
    found = category(exc)
    if found is None:
        return exc
    cls = BY_CATEGORY[found]
    if isinstance(exc, ApiError):
        return cls(hint(exc), code=exc.code, reason=exc.reason, causes=exc.causes)
    return cls(str(exc), reason=LOCAL_REASONS.get(found, ""), trainjob=getattr(exc, "trainjob", None))


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise client-layer failures inside the block as SDK exceptions (`sdk_error`)."""
    try:
        yield
    except Exception as exc:
        mapped = sdk_error(exc)
        if mapped is exc:
            raise
        raise mapped from exc


__all__ = ["Forbidden", "InvalidInput", "JobFailed", "MpijobError", "NotFound", "QuotaExceeded", "ServerUnavailable",
           "Timeout"]
