"""The exit-code contract: each API failure maps to its documented code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpijob.api import errors
from mpijob.api.errors import ApiError
from mpijob.cli.exitcodes import Exit, for_api_error, for_exception
from mpijob.client.errors import ServerUnavailable, WaitTimeout

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
    ],
)
def test_api_errors_map_to_contract(err: ApiError, code: Exit) -> None:
    assert for_api_error(err) == code
    assert for_exception(err) == code


def test_transport_and_wait_errors() -> None:
    assert for_exception(ServerUnavailable("https://x", "refused")) == Exit.UNAVAILABLE
    assert for_exception(WaitTimeout("slow")) == Exit.TIMEOUT


def test_codes_are_the_documented_ones() -> None:
    assert [int(e) for e in Exit] == list(range(8))
    table = README.read_text()
    for e in Exit:
        assert f"| {int(e)} |" in table, f"README lacks the row for exit code {int(e)}"
