"""Client-side errors: what went wrong talking to a cluster, typed so callers can branch on it.

Server answers come back as the same `ApiError` the server raised (code, reason, causes survive the
trip through the `Status` body); transport failures become `ServerUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from mpijob.api.errors import ApiError, Cause


class ServerUnavailable(Exception):
    """The API server could not be reached (refused, reset, TLS failure, DNS)."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"cannot reach the API server at {url}: {detail}")
        self.url = url
        self.detail = detail


class WaitTimeout(Exception):
    """A wait gave up before the awaited state was reached."""


def from_api_exception(exc: ApiException) -> ApiError:
    """Rebuild the server's `ApiError` from the `Status` body of an `ApiException`."""
    code = int(exc.status or 0)
    body: Any = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    status: dict[str, Any] = {}
    if isinstance(body, str) and body.strip():
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                status = parsed
        except ValueError:
            status = {}
    if status.get("kind") != "Status":
        text = (body or "").strip() if isinstance(body, str) else ""
        return ApiError(code, exc.reason or "Unknown", text or f"HTTP {code} {exc.reason or ''}".strip())
    details = status.get("details") or {}
    causes = [
        Cause(str(c.get("field", "")), str(c.get("message", "")), str(c.get("reason", "FieldValueInvalid")))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    return ApiError(
        int(status.get("code") or code),
        str(status.get("reason") or exc.reason or "Unknown"),
        str(status.get("message") or exc.reason or ""),
        str(details.get("name", "")),
        str(details.get("group", "")),
        str(details.get("kind", "")),
        causes,
    )


CREDENTIALS_HINT = ("the server rejected the kubeconfig's credentials; use a current kubeconfig — for the local "
                    "cluster `mpijob kubeconfig` prints its path")
P = ParamSpec("P")
R = TypeVar("R")


def call(url: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run one client call: `ApiException` → `ApiError`, transport errors → `ServerUnavailable`."""
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        if exc.status in (None, 0):
            raise ServerUnavailable(url, str(exc.reason or exc)) from exc
        raise from_api_exception(exc) from exc
    except urllib3.exceptions.HTTPError as exc:
        raise ServerUnavailable(url, _transport_detail(exc)) from exc
    except ConnectionError as exc:
        raise ServerUnavailable(url, str(exc)) from exc


def _transport_detail(exc: BaseException) -> str:
    """The innermost reason, e.g. `Connection refused`, not urllib3's whole retry story."""
    reason: BaseException | None = getattr(exc, "reason", None)
    inner = reason if isinstance(reason, BaseException) else exc
    text = str(inner)
    if "Connection refused" in text:
        return "connection refused (is the server running? `mpijob server status`)"
    if "CERTIFICATE_VERIFY_FAILED" in text or "SSLError" in type(inner).__name__:
        return f"TLS verification failed ({text}); check certificate-authority-data in the kubeconfig"
    return text
