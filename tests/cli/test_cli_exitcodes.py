"""The exit-code contract: each API failure maps to its documented code (the client layer's one
table, `mpijob.client.errors.category`; tests/sdk/test_sdk_errors.py checks the SDK agrees)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mpijob.api.core import errors
from mpijob.api.core.errors import ApiError
from mpijob.cli.exitcodes import (
    MEANINGS,
    Exit,
    UsageError,
    for_exception,
    summary,
)
from mpijob.client.errors import InvalidArgument, NoLauncher, Unreachable, WaitTimeout

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize(
    "err, code",
    [
        (errors.invalid("TrainJob", "x", [errors.Cause("spec", "bad")], "trainer.kubeflow.org"), Exit.INVALID),
        (errors.bad_request("nope"), Exit.INVALID),
        (errors.already_exists("trainjobs", "x"), Exit.INVALID),
        (errors.not_found("trainjobs", "x"), Exit.NOT_FOUND),
        (errors.forbidden('trainjobs is forbidden: User "u" cannot create'), Exit.FORBIDDEN),
        (errors.unauthorized(), Exit.FORBIDDEN),
        (errors.forbidden('trainjobs "x" is forbidden: exceeded quota: q, requested: cpu=4'), Exit.QUOTA),
        (ApiError(504, "Timeout", "the server timed out"), Exit.TIMEOUT),
        (ApiError(500, "InternalError", "boom"), Exit.UNAVAILABLE),
        (ApiError(404, "BadRequest", "the reason decides, as in client-go"), Exit.INVALID),
        (ApiError(404, "", "no reason: the code decides"), Exit.NOT_FOUND),
    ],
)
def test_api_errors_map_to_contract(err: ApiError, code: Exit) -> None:
    assert for_exception(err) == code


def test_transport_wait_and_usage_errors() -> None:
    assert for_exception(Unreachable("https://x", "refused")) == Exit.UNAVAILABLE
    assert for_exception(WaitTimeout("slow")) == Exit.TIMEOUT
    assert for_exception(TimeoutError("no answer")) == Exit.TIMEOUT
    assert for_exception(UsageError("-o xml")) == Exit.USAGE
    assert for_exception(InvalidArgument("timeout", -1, "is negative")) == Exit.INVALID
    assert for_exception(NoLauncher("no launcher yet")) == Exit.NOT_FOUND
    with pytest.raises(TypeError):
        for_exception(ValueError("not a CLI failure"))


def test_codes_are_the_issue_5_contract() -> None:
    assert [(int(e), MEANINGS[e]) for e in Exit] == [
        (0, "ok"), (1, "job failed"), (2, "usage error"), (3, "invalid input"), (4, "not found"),
        (5, "forbidden"), (6, "quota exceeded"), (7, "timed out"), (8, "server unavailable")]
    assert all(f"{int(e)} {MEANINGS[e]}" in summary() for e in Exit)


def test_readme_documents_every_code() -> None:
    table = README.read_text()
    for e in Exit:
        assert f"| {int(e)} |" in table, f"README lacks the row for exit code {int(e)}"
