"""What can go wrong talking to a cluster, and the one table that sorts every failure into a category.

Server answers come back as the same `ApiError` the server raised (code, reason and causes survive the
trip through the `Status` body, `decode_status`); a server that cannot be reached is `Unreachable`; a
wait or a request that runs out of time is a `TimeoutError`; input the client refuses before sending
anything is `InvalidArgument`, which names the parameter, the value and the fix.

`category(exc)` is the only place that decides what kind of failure an exception is. The CLI's exit
codes (`mpijob.cli.exitcodes`) and the SDK's exception classes (`mpijob.sdk.errors`) are both read from
it, so `mpijob get` and `Client.get` can never disagree. The rule for a server `Status` is
client-go's (`k8s.io/apimachinery/pkg/api/errors`, e.g. `IsNotFound`): the reason decides when it is
one Kubernetes defines, and the HTTP code only when the reason is empty or unknown — so a 404 whose
reason is `BadRequest` is invalid input, not "not found".
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

from mpijob.api.core.errors import ApiError, Cause

CREDENTIALS_HINT = ("the server rejected the kubeconfig's credentials; use a current kubeconfig — for the local "
                    "cluster `mpijob kubeconfig` prints its path")


class Category(IntEnum):
    """Why a call failed. The values are the CLI's exit codes, which the SDK's exceptions carry too."""

    JOB_FAILED = 1  # the TrainJob ended Failed (or, waiting for Failed, it completed)
    INVALID = 3  # the input was refused: by the server (400/409/422) or before sending (bad argument, kubeconfig)
    NOT_FOUND = 4  # the named object does not exist
    FORBIDDEN = 5  # authentication or RBAC refused the request (401/403)
    QUOTA = 6  # the job can never fit its queue's quota
    TIMEOUT = 7  # a wait or a request ran out of time
    UNAVAILABLE = 8  # the server could not be reached, or failed (5xx, 429)


class Unreachable(Exception):
    """The API server could not be reached (refused, reset, TLS failure, DNS)."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"cannot reach the API server at {url}: {detail}")
        self.url = url
        self.detail = detail


class WaitTimeout(TimeoutError):
    """A wait gave up before the awaited state was reached; `trainjob` is the job as last seen."""

    def __init__(self, message: str, trainjob: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.trainjob = trainjob


class InvalidArgument(ValueError):
    """A value the client refuses before sending anything: `param` is the parameter's name as the
    caller knows it (`timeout`, `context`, …), `value` what was given, `fix` how to put it right."""

    def __init__(self, param: str, value: Any, problem: str, fix: str = "") -> None:
        self.param, self.value, self.problem, self.fix = param, value, problem, fix
        super().__init__(self.describe())

    def describe(self, param: str | None = None) -> str:
        """The message, naming the parameter `param` (e.g. a CLI flag) instead of `self.param`."""
        given = "" if self.value is None else f" {self.value!r}"
        text = f"{param or self.param}{given} {self.problem}"
        return f"{text}; {self.fix}" if self.fix else text


class NoLauncher(LookupError):
    """The TrainJob has no launcher pod to read (not created yet, or the job ended without one)."""


# -- the table ---------------------------------------------------------------------------------------

# client-go's StatusReasons (k8s.io/apimachinery/pkg/apis/meta/v1/types.go) and what each one means here.
REASONS: dict[str, Category] = {
    "BadRequest": Category.INVALID,
    "Invalid": Category.INVALID,
    "AlreadyExists": Category.INVALID,
    "Conflict": Category.INVALID,
    "Gone": Category.INVALID,
    "Expired": Category.INVALID,
    "MethodNotAllowed": Category.INVALID,
    "NotAcceptable": Category.INVALID,
    "RequestEntityTooLarge": Category.INVALID,
    "UnsupportedMediaType": Category.INVALID,
    "NotFound": Category.NOT_FOUND,
    "Unauthorized": Category.FORBIDDEN,
    "Forbidden": Category.FORBIDDEN,
    "Timeout": Category.TIMEOUT,
    "ServerTimeout": Category.TIMEOUT,
    "TooManyRequests": Category.UNAVAILABLE,
    "InternalError": Category.UNAVAILABLE,
    "ServiceUnavailable": Category.UNAVAILABLE,
    "StoreReadError": Category.UNAVAILABLE,
}


def status_category(err: ApiError) -> Category:
    """The category of a server `Status`: quota first (Kubernetes sends it as 403 Forbidden, or 429,
    with "exceeded quota" in the message), then the reason when Kubernetes defines it, else the code."""
    if err.reason == "QuotaExceeded" or "exceeded quota" in err.message.lower():
        return Category.QUOTA
    if err.reason in REASONS:
        return REASONS[err.reason]
    if err.code == 404:
        return Category.NOT_FOUND
    if err.code in (401, 403):
        return Category.FORBIDDEN
    if err.code in (408, 504):
        return Category.TIMEOUT
    if err.code >= 500 or err.code == 429:
        return Category.UNAVAILABLE
    return Category.INVALID


def category(exc: BaseException) -> Category | None:
    """The category of any failure of the client layer; None for an exception it does not raise."""
    if isinstance(exc, ApiError):
        return status_category(exc)
    if isinstance(exc, Unreachable):
        return Category.UNAVAILABLE
    if isinstance(exc, TimeoutError):
        return Category.TIMEOUT
    if isinstance(exc, InvalidArgument):
        return Category.INVALID
    if isinstance(exc, NoLauncher):
        return Category.NOT_FOUND
    return None


def hint(exc: BaseException) -> str:
    """The message to show for a failure: a refused credential also says how to fix it."""
    if isinstance(exc, ApiError) and exc.code == 401:
        return f"{exc.message} ({CREDENTIALS_HINT})"
    return str(exc)


# -- decoding an error answer ------------------------------------------------------------------------


def decode_status(code: int, phrase: str, body: bytes | str) -> ApiError:
    """The server's `ApiError` rebuilt from an error answer: its `Status` body, or plain text."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    status: dict[str, Any] = {}
    if text.strip():
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        status = parsed if isinstance(parsed, dict) else {}
    if status.get("kind") != "Status":
        return ApiError(code, phrase or "Unknown", text.strip() or f"HTTP {code} {phrase}".strip())
    details = status.get("details") or {}
    causes = [
        Cause(str(c.get("field", "")), str(c.get("message", "")), str(c.get("reason", "FieldValueInvalid")))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    return ApiError(
        int(status.get("code") or code),
        str(status.get("reason") or phrase or "Unknown"),
        str(status.get("message") or phrase or ""),
        str(details.get("name", "")),
        str(details.get("group", "")),
        str(details.get("kind", "")),
        causes,
    )
