"""The server's refusals as the SDK raises them, against a real local cluster: a wrong bearer token is
`Forbidden` (HTTP 401, exit code 5) and a job its queue could never admit is `QuotaExceeded` (exit
code 6, nothing created) — from `Client` and from `AsyncClient` alike."""

from __future__ import annotations

import asyncio
import secrets
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob import AsyncClient, Client, TrainJob
from mpijob.sdk.errors import Forbidden, MpijobError, NotFound, QuotaExceeded
from mpijob.store.server_process import ServerInfo


def _wrong_token_kubeconfig(server: ServerInfo, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the server's kubeconfig whose bearer token is wrong (mode 0600, as token files are)."""
    config = yaml.safe_load(Path(server.kubeconfig).read_text())
    token = "wrong-" + secrets.token_hex(16)
    (user,) = config["users"]
    assert user["user"]["token"] != token
    user["user"]["token"] = token
    path = tmp_path / "wrong-token.kubeconfig"
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path, token


def _assert_unauthorized(err: MpijobError, token: str) -> None:
    assert isinstance(err, Forbidden) and err.exit_code == 5
    assert err.code == 401 and err.reason == "Unauthorized"
    assert "Unauthorized" in err.message  # authentication failed (kube-apiserver's words), not RBAC
    assert "mpijob kubeconfig" in err.message  # and how to fix it
    assert token not in str(err) and token not in repr(err.args)


def test_wrong_token_is_forbidden_401_from_the_sync_client(server: ServerInfo, tmp_path: Path) -> None:
    kubeconfig, token = _wrong_token_kubeconfig(server, tmp_path)
    with Client(kubeconfig=str(kubeconfig)) as c:
        with pytest.raises(Forbidden) as listing:
            c.list()
        _assert_unauthorized(listing.value, token)
        with pytest.raises(Forbidden) as getting:
            c.get("anything")  # refused before the server looks for the job: 401, not 404
        _assert_unauthorized(getting.value, token)


def test_wrong_token_is_forbidden_401_from_the_async_client(server: ServerInfo, tmp_path: Path) -> None:
    kubeconfig, token = _wrong_token_kubeconfig(server, tmp_path)

    async def main() -> list[BaseException | Any]:
        async with AsyncClient(kubeconfig=str(kubeconfig)) as c:
            return await asyncio.gather(c.list(), c.get("anything"), return_exceptions=True)

    for outcome in asyncio.run(main()):
        assert isinstance(outcome, Forbidden), outcome
        _assert_unauthorized(outcome, token)


def test_the_right_token_is_not_refused(client: Client) -> None:
    """The same calls with the real kubeconfig succeed, so the refusals above are about the token."""
    assert isinstance(client.list(), list)
    with pytest.raises(NotFound):
        client.get("sdk-refusals-none")


def _assert_over_quota(err: QuotaExceeded, resource: str) -> None:
    assert err.exit_code == 6 and err.code == 403
    assert "exceeded quota" in err.message and resource in err.message


@pytest.mark.parametrize(
    ("name", "resources", "resource"),
    [("sdk-huge-gpu", {"nvidia.com/gpu": 64}, "nvidia.com/gpu"), ("sdk-huge-cpu", {"cpu": 4096}, "cpu")],
)
def test_a_job_its_queue_could_never_admit_is_quota_exceeded_and_not_created(
        client: Client, name: str, resources: dict[str, int], resource: str) -> None:
    job = TrainJob(name=name, num_nodes=2, resources_per_node=resources, command=["true"])
    with pytest.raises(QuotaExceeded) as err:
        client.create(job)
    _assert_over_quota(err.value, resource)
    with pytest.raises(NotFound):
        client.get(name)


def test_quota_exceeded_from_the_async_client(server: ServerInfo) -> None:
    name = "sdk-huge-async"

    async def main() -> tuple[QuotaExceeded, NotFound]:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as c:
            job = TrainJob(name=name, num_nodes=4, resources_per_node={"nvidia.com/gpu": 16}, command=["true"])
            with pytest.raises(QuotaExceeded) as refused:
                await c.create(job)
            with pytest.raises(NotFound) as lookup:
                await c.get(name)
            return refused.value, lookup.value

    refused, lookup = asyncio.run(main())
    _assert_over_quota(refused, "nvidia.com/gpu")
    assert name in lookup.message
