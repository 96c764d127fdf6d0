"""`wait(..., show_progress=True)` outside a notebook, against real jobs: the terminal bar (rich, on stderr)
ends at the job's end — 100% with the program's last metrics, or Failed with the reason — for the sync and
the async client alike, and a timeout still raises. The notebook's HTML bar: tests/e2e/test_notebook.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from mpijob import AsyncClient, Client, TrainJob
from mpijob.sdk.errors import JobFailed, Timeout
from mpijob.store.server_process import ServerInfo

from support import REPO, scaled

PROGRAM = (REPO / "examples" / "notebooks" / "train.py").read_text()


@pytest.fixture()
def client(server: ServerInfo) -> Iterator[Client]:
    with Client(kubeconfig=str(server.kubeconfig)) as c:
        yield c


def reporting_job(name: str) -> TrainJob:
    """examples/notebooks/train.py, short: 6 steps, each reporting its loss to trainerStatus."""
    return TrainJob(name=name, num_nodes=2, command=["mpirun", "python", "-c", PROGRAM],
                    env={"STEPS": "6", "STEP_SLEEP": "0.1"})


def test_the_terminal_bar_ends_at_100_with_the_programs_metrics(client: Client, capsys: pytest.CaptureFixture[str]
                                                                 ) -> None:
    client.create(reporting_job("bar-sync"))
    try:
        job = client.wait("bar-sync", show_progress=True, timeout=scaled(120))
        assert any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"]["conditions"])
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("bar-sync") and "100% Succeeded" in last and "step=6/6" in last, last
        assert f"loss={client.progress('bar-sync').metrics['loss']}" in last, last  # type: ignore[union-attr]
    finally:
        client.delete("bar-sync")


def test_the_async_bar_shows_a_failed_job_and_the_wait_raises(server: ServerInfo,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    script = 'echo "rank $OMPI_COMM_WORLD_RANK"; exit 3'

    async def run() -> None:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as c:
            await c.create(TrainJob(name="bar-async-fail", num_nodes=1, command=["mpirun", "bash", "-c", script]))
            try:
                with pytest.raises(JobFailed):
                    await c.wait("bar-async-fail", show_progress=True, timeout=scaled(120))
            finally:
                await c.delete("bar-async-fail")

    asyncio.run(run())
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("bar-async-fail") and "Failed" in last, last


def test_a_wait_with_the_bar_still_times_out(client: Client, capsys: pytest.CaptureFixture[str]) -> None:
    client.create(TrainJob(name="bar-timeout", num_nodes=1, command=["mpirun", "sleep", "60"]))
    try:
        with pytest.raises(Timeout, match="did not reach Complete within 1s"):
            client.wait("bar-timeout", show_progress=True, timeout=1)
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("bar-timeout")  # the bar was shown
    finally:
        client.delete("bar-timeout")
