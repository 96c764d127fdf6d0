"""`AsyncClient` against a real local cluster: concurrent waits, async logs, typed exceptions, and
no thread per call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from mpijob import AsyncClient, TrainJob
from mpijob.sdk.errors import InvalidInput, JobFailed, NotFound, Timeout
from mpijob.store.server_process import ServerInfo
from sdk_support import hello


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_three_jobs_awaited_concurrently_without_threads(server: ServerInfo) -> None:
    names = ["sdk-aio-1", "sdk-aio-2", "sdk-aio-3"]

    async def main() -> tuple[list[dict], int, int]:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as c:
            await asyncio.gather(*(c.create(TrainJob(**hello(n, nodes=2, sleep=1))) for n in names))
            before = threading.active_count()
            peak = before
            stop = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not stop.is_set():
                    peak = max(peak, threading.active_count())
                    await asyncio.sleep(0.01)

            sampler = asyncio.create_task(sample())
            try:
                done = await asyncio.gather(*(c.wait(n, timeout=120) for n in names))
            finally:
                stop.set()
                await sampler
            listed = {j["metadata"]["name"] for j in await c.list()}
            assert set(names) <= listed
            await asyncio.gather(*(c.delete(n) for n in names))
            return done, before, peak

    done, before, peak = run(main())
    assert [j["metadata"]["name"] for j in done] == names
    for job in done:
        assert any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"]["conditions"])
    assert peak == before, f"threads grew from {before} to {peak} while awaiting"


def test_logs_events_suspend_resume(server: ServerInfo) -> None:
    async def main() -> None:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as c:
            await c.create(TrainJob(**hello("sdk-aio-logs", nodes=2, sleep=1)))
            try:
                followed = [line async for line in c.logs("sdk-aio-logs", follow=True, timeout=120)]
                assert sorted(x for x in followed if x.startswith("sdk rank=")) == ["sdk rank=0 of 2",
                                                                                     "sdk rank=1 of 2"]
                await c.wait("sdk-aio-logs", timeout=120)
                after = [line async for line in c.logs("sdk-aio-logs")]
                assert [x for x in after if x.startswith("sdk rank=")] == \
                    [x for x in followed if x.startswith("sdk rank=")]
                assert [line async for line in c.logs("sdk-aio-logs", rank=0)] == ["sdk rank=0 of 2"]
                events = await c.events("sdk-aio-logs")
                assert "TrainJob" in {e["involvedObject"]["kind"] for e in events}
            finally:
                await c.delete("sdk-aio-logs")

            await c.create(TrainJob(**hello("sdk-aio-susp", nodes=1, sleep=30)))
            try:
                assert (await c.suspend("sdk-aio-susp"))["spec"]["suspend"] is True
                assert (await c.get("sdk-aio-susp"))["spec"]["suspend"] is True
                assert (await c.resume("sdk-aio-susp"))["spec"]["suspend"] is False
                running = await c.wait("sdk-aio-susp", for_="Running", timeout=120)
                assert running["metadata"]["name"] == "sdk-aio-susp"
                with pytest.raises(Timeout) as info:
                    await c.wait("sdk-aio-susp", timeout=0.3)
                assert info.value.exit_code == 7
            finally:
                await c.delete("sdk-aio-susp")

    run(main())


def test_async_exceptions_are_typed(server: ServerInfo) -> None:
    async def main() -> None:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as c:
            with pytest.raises(NotFound) as nf:
                await c.get("sdk-aio-none")
            assert nf.value.code == 404 and nf.value.exit_code == 4
            with pytest.raises(NotFound):
                [x async for x in c.logs("sdk-aio-none")]

            bad = TrainJob(name="sdk-aio-bad").to_object()
            bad["spec"]["trainer"] = {"numNodes": 2, "env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "x"}]}
            with pytest.raises(InvalidInput) as inv:
                await c.create(bad)
            assert inv.value.code == 422 and "spec.trainer.env[0].name" in [x.field for x in inv.value.causes]

            await c.create(TrainJob(**hello("sdk-aio-fail", nodes=2, fail=True)))
            try:
                with pytest.raises(JobFailed) as failed:
                    await c.wait("sdk-aio-fail", timeout=120)
                assert failed.value.exit_code == 1 and failed.value.trainjob is not None
            finally:
                await c.delete("sdk-aio-fail")

    run(main())
