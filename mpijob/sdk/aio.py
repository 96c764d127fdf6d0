"""`AsyncClient`: the SDK as coroutines, for services and for awaiting many jobs at once.

Truly asynchronous: one `httpx.AsyncClient` (a connection pool on the event loop, no thread per
call) configured from the same kubeconfig the sync client uses — contexts, exec plugins and
`:`-joined `$KUBECONFIG` lists behave as they do for kubectl. It runs the very operations `Client`
runs (the client core), so it has the same methods, the same answers and the same exceptions;
`logs` is an async iterator.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TypeVar

from mpijob.api import Obj, names
from mpijob.api.trainer.progress import Progress
from mpijob.api.trainer.waiting import Waiting
from mpijob.client import core
from mpijob.client.config import choose_cluster
from mpijob.client.connection import AsyncConnection
from mpijob.client.core import Op
from mpijob.client.logs import PodLog, log_call, ranked
from mpijob.client.wait import POLL
from mpijob.sdk import _core
from mpijob.sdk.errors import translated
from mpijob.sdk.trainjob import TrainJob

T = TypeVar("T")


class AsyncClient:
    """`async with AsyncClient() as c: await c.wait("pi")` — the same cluster choice as `Client`.

    Constructing it resolves the cluster once (and may start the local one), so build it before the
    hot path; every call after that is a coroutine on the event loop."""

    def __init__(self, context: str | None = None, namespace: str | None = None,
                 kubeconfig: str | os.PathLike[str] | None = None) -> None:
        with translated():
            self.target = choose_cluster(kubeconfig, context, namespace)
            self._conn = AsyncConnection(self.target)
        self.namespace = self.target.namespace

    async def close(self) -> None:
        await self._conn.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, op: Op[T]) -> T:
        with translated():
            return await self._conn.run(op)

    # -- TrainJobs -------------------------------------------------------------------------------

    async def create(self, job: TrainJob | Obj) -> Obj:
        """Create a TrainJob (a `TrainJob` builder or a manifest dict); returns the stored object."""
        return await self._run(core.create(_core.trainjob_object(job), self.namespace))

    async def get(self, name: str) -> Obj:
        """The TrainJob as stored, status included; `NotFound` when it does not exist."""
        return await self._run(core.get_trainjob(self.namespace, name))

    async def list(self, label_selector: str | None = None) -> list[Obj]:
        """The namespace's TrainJobs, optionally filtered by a label selector."""
        return await self._run(core.list_trainjobs(self.namespace, label_selector))

    async def delete(self, name: str) -> None:
        """Delete a TrainJob; its pods, keys and workload go with it."""
        await self._run(core.delete_trainjob(self.namespace, name))

    async def suspend(self, name: str) -> Obj:
        """Stop a TrainJob and free its quota (`spec.suspend=true`)."""
        return await self._run(core.set_suspend(self.namespace, name, True))

    async def resume(self, name: str) -> Obj:
        """Put a suspended TrainJob back in its queue (`spec.suspend=false`)."""
        return await self._run(core.set_suspend(self.namespace, name, False))

    async def wait(self, name: str, for_: str = names.COMPLETE, timeout: float | None = 600,
                   poll: float = POLL, show_progress: bool = False) -> Obj:
        """Await `Complete`, `Failed`, `Running` or `Finished`; returns the TrainJob. Raises `JobFailed`
        when it fails while awaiting Complete or Running, `Timeout` after `timeout` seconds.
        `show_progress=True`: the live bar `Client.wait` shows (HTML in a notebook, else a terminal bar)."""
        with _core.shown(show_progress) as show:
            return await self._run(_core.wait(self.namespace, name, for_, timeout, poll, show))

    # -- logs and events ---------------------------------------------------------------------------

    async def logs(self, name: str, follow: bool = False, pod: str | None = None, rank: int | None = None,
                   timeout: float | None = 600) -> AsyncIterator[str]:
        """`async for line in c.logs(name, follow=True)`: the launcher's (or `pod`'s) log lines as the
        ranks printed them; `rank=N` keeps what rank N printed."""
        with translated():
            target = await self._conn.run(_core.log_target(self.namespace, name, pod, follow, timeout))
            async with self._conn.stream(log_call(target, self.namespace, follow=follow), follow) as (chunks, headers):
                log = PodLog(target, ranked(headers))
                async for chunk in chunks:
                    for line in log.feed(chunk):
                        if _core.keep(line, rank):
                            yield line.text
                for line in log.close():
                    if _core.keep(line, rank):
                        yield line.text

    async def progress(self, name: str) -> Progress | None:
        """How far the job has got, as its program last reported it (`update_trainjob_status()` or a POST
        to `$KUBEFLOW_TRAINER_SERVER_URL`): percentage, seconds left, metrics; None before its first report."""
        return await self._run(_core.progress(self.namespace, name))

    async def waiting(self, name: str) -> Waiting | None:
        """Why the job still waits for admission, in one sentence with numbers (`.sentence()`), and when it
        should start (`.estimated_start`, None without a basis); None once it is admitted."""
        return await self._run(_core.waiting(self.namespace, name))

    async def events(self, name: str) -> list[Obj]:  # type: ignore[valid-type]  # the `list` method shadows the builtin; docs/sdk.md shows this spelling
        """Events about the TrainJob, its pods and its Workload, oldest first."""
        return await self._run(core.job_events(self.namespace, name))
