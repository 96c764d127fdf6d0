"""Typed API errors that render as Kubernetes `Status` objects.

Every layer raises these; the server turns them into HTTP responses, the client back into exceptions,
so the code, reason and field-level causes survive the whole trip unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One field-level problem: kubectl prints it as `* field: message`."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "field": self.field, "message": self.message}


@dataclass
class ApiError(Exception):
    """An error with an HTTP code and a Kubernetes `StatusReason`."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    continue_token: str = ""  # a list's `metadata.continue`: kube sends one with an expired token's 410

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.continue_token} if self.continue_token else {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if details:
            status["details"] = details
        return status


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> ApiError:
    """422 Invalid, worded as kube-apiserver words it so kubectl renders each cause."""
    label = f"{kind}.{group}" if group else kind
    joined = ", ".join(f"{c.field}: {c.message}" for c in causes)
    return ApiError(422, "Invalid", f'{label} "{name}" is invalid: {joined}', name, group, kind, causes)


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    label = f"{resource}.{group}" if group else resource
    return ApiError(404, "NotFound", f'{label} "{name}" not found', name, group, resource)


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    label = f"{resource}.{group}" if group else resource
    return ApiError(409, "AlreadyExists", f'{label} "{name}" already exists', name, group, resource)


def conflict(resource: str, name: str, message: str, group: str = "") -> ApiError:
    label = f"{resource}.{group}" if group else resource
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {label} "{name}": {message}', name, group, resource
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def gone(message: str, continue_token: str = "") -> ApiError:
    """410 Expired: a watch or a continued list asked for a resourceVersion older than the kept history."""
    return ApiError(410, "Expired", message, continue_token=continue_token)


def invalid_continue(detail: str) -> ApiError:
    """400 for a `continue` token this server did not issue (kube-apiserver's wording)."""
    return bad_request(f"invalid continue token: continue key is not valid: {detail}")


def continue_expired(inconsistent_token: str) -> ApiError:
    """410 for a token whose snapshot is gone, with a token that resumes at the latest version, as kube
    gives it: the client may restart the list, or accept an inconsistent one."""
    return gone(
        "The provided continue parameter is too old to display a consistent list result. You can start a "
        "new list without the continue parameter, or use the continue token in this response to retrieve "
        "the remainder of the results. Continuing with the provided token results in an inconsistent list "
        "- objects that were created, modified, or deleted between the time the first chunk was returned "
        "and now may show up in the list.",
        inconsistent_token,
    )


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)
