"""One error table (`mpijob.client.errors.category`) for the CLI, the sync SDK and the async SDK.

Each row is a failure as it really reaches them — a `Status` answer from a stub API server, a closed
port, input refused before sending — and the test runs `mpijob get trainjob x`, `Client.get("x")` and
`AsyncClient.get("x")` against it: the CLI's exit code, the SDK exception's class and its `exit_code`
must be the same on every row. Plus the SDK's view of an unreachable wait."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob import AsyncClient, Client
from mpijob.api.core.errors import ApiError, Cause
from mpijob.cli.exitcodes import Exit, exit_code
from mpijob.cli.main import app
from mpijob.client.errors import Category, category
from mpijob.client.wait import WaitResult
from mpijob.sdk import _core, errors
from mpijob.sdk.errors import sdk_error
from typer.testing import CliRunner

STATUS_ROWS = [  # (code, reason, message) → the category client-go's rules give it
    (404, "NotFound", 'trainjobs.trainer.kubeflow.org "x" not found', Category.NOT_FOUND),
    (404, "BadRequest", "the reason decides: a malformed request, whatever the code", Category.INVALID),
    (422, "Invalid", 'TrainJob.trainer.kubeflow.org "x" is invalid', Category.INVALID),
    (400, "BadRequest", "bad body", Category.INVALID),
    (409, "AlreadyExists", "exists", Category.INVALID),
    (409, "Conflict", "the object has been modified", Category.INVALID),
    (403, "Forbidden", 'trainjobs is forbidden: User "u" cannot get', Category.FORBIDDEN),
    (401, "Unauthorized", "Unauthorized", Category.FORBIDDEN),
    (403, "Forbidden", "forbidden: exceeded quota: needs 32 gpus", Category.QUOTA),
    (504, "Timeout", "timed out", Category.TIMEOUT),
    (500, "InternalError", "boom", Category.UNAVAILABLE),
    (503, "ServiceUnavailable", "down", Category.UNAVAILABLE),
    (429, "TooManyRequests", "slow down", Category.UNAVAILABLE),
    (404, "", "no reason: the code decides", Category.NOT_FOUND),
    (418, "Teapot", "an unknown reason and code", Category.INVALID),
]


class Stub:
    """An API server that answers every request with the `Status` of the current row."""

    def __init__(self) -> None:
        self.row: tuple[int, str, str] = (500, "InternalError", "unset")
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, reason, message = stub.row
                body = json.dumps(ApiError(code, reason, message, causes=[Cause("spec.x", "bad")]).to_status()).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


def _kubeconfig(path: Path, server: str, context: str = "stub") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "stub", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
    }))
    return path


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.http.shutdown()


def _surfaces(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, BaseException, BaseException]:
    """What `mpijob get trainjob x`, `Client.get("x")` and `AsyncClient.get("x")` make of one failure."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    cli = CliRunner().invoke(app, ["get", "trainjob", "x", "--kubeconfig", kubeconfig])
    assert cli.exception is None or isinstance(cli.exception, SystemExit), cli.exception

    def sync() -> BaseException:
        try:
            with Client(kubeconfig=kubeconfig) as c:
                c.get("x")
        except Exception as exc:  # noqa: BLE001 — the test looks at whatever it is
            return exc
        raise AssertionError("no error")

    async def run_async() -> BaseException:
        try:
            async with AsyncClient(kubeconfig=kubeconfig) as c:
                await c.get("x")
        except Exception as exc:  # noqa: BLE001
            return exc
        raise AssertionError("no error")

    return cli.exit_code, sync(), asyncio.run(run_async())


def _agree(cli: int, sync: BaseException, aio: BaseException, expected: Category) -> None:
    assert isinstance(sync, errors.MpijobError) and type(sync) is type(aio)
    assert cli == sync.exit_code == aio.exit_code == int(expected), (cli, sync, aio)
    assert type(sync) is errors.BY_CATEGORY[expected]


@pytest.mark.parametrize("row", STATUS_ROWS, ids=[f"{c}-{r or 'none'}" for c, r, _, _ in STATUS_ROWS])
def test_cli_sync_and_async_sdk_agree_on_every_status(stub: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      row: tuple[int, str, str, Category]) -> None:
    code, reason, message, expected = row
    stub.row = (code, reason, message)
    assert category(ApiError(code, reason, message)) is expected
    cli, sync, aio = _surfaces(str(_kubeconfig(tmp_path / "kc", stub.url)), monkeypatch)
    _agree(cli, sync, aio, expected)
    assert isinstance(sync, errors.MpijobError) and isinstance(aio, errors.MpijobError)
    shown = reason or "Not Found"  # a Status without a reason keeps the HTTP phrase
    assert (sync.code, sync.reason, sync.causes) == (aio.code, aio.reason, aio.causes) == (code, shown, [Cause("spec.x", "bad")])
    assert sync.message.startswith(message) and ("mpijob kubeconfig" in sync.message) == (code == 401)


def test_cli_sync_and_async_sdk_agree_on_local_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"https://127.0.0.1:{s.getsockname()[1]}"
    down = _surfaces(str(_kubeconfig(tmp_path / "down", closed)), monkeypatch)
    _agree(*down, Category.UNAVAILABLE)
    assert isinstance(down[1], ConnectionError) and "connection refused" in str(down[1])
    unknown = _surfaces(str(_kubeconfig(tmp_path / "ctx", closed, context="nope")), monkeypatch)
    _agree(*unknown, Category.INVALID)
    assert "context 'nope'" in str(unknown[1]) and "available contexts: stub" in str(unknown[1])
    missing = _surfaces(str(tmp_path / "missing"), monkeypatch)
    _agree(*missing, Category.INVALID)
    assert "no such file" in str(missing[1]) and "--" not in str(missing[1])  # no CLI flag in an SDK error


def test_every_category_has_one_sdk_class_and_one_exit_code() -> None:
    assert sorted(errors.BY_CATEGORY) == sorted(int(c) for c in Category)
    assert all(int(Exit[c.name]) == int(c) for c in Category)
    assert exit_code(TimeoutError("slow")) == Exit.TIMEOUT and isinstance(sdk_error(TimeoutError("slow")), errors.Timeout)
    other = KeyError("x")
    assert exit_code(other) is None and sdk_error(other) is other


def test_causes_are_listed_when_the_message_does_not_name_them() -> None:
    err = errors.InvalidInput("TrainJob x is invalid", causes=[Cause("spec.trainer.numNodes", "must be >= 1")])
    assert str(err) == "TrainJob x is invalid\n  * spec.trainer.numNodes: must be >= 1"


def _job(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "j"},
            "status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": f"{t} msg"}
                                      for t, r in conditions]}}


def test_a_wait_that_can_no_longer_succeed_raises_job_failed_or_says_why() -> None:
    failed = _job(("Failed", "FailedJobs"))
    err = _core.unreachable(WaitResult("Complete", False, "Failed", "Failed msg", failed))
    assert isinstance(err, errors.JobFailed) and str(err) == "trainjob 'j' failed: FailedJobs: Failed msg"
    assert err.reason == "FailedJobs" and err.trainjob is failed and err.exit_code == Exit.JOB_FAILED
    err = _core.unreachable(WaitResult("Failed", False, "Succeeded", "", _job(("Complete", "AllJobsCompleted"))))
    assert type(err) is errors.MpijobError and "never be Failed" in str(err) and err.exit_code == Exit.JOB_FAILED
