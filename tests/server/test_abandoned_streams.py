"""A watch or a followed log whose client has gone ends at once, not at its timeout: otherwise a client
that opens and abandons streams piles them up in the server (uvicorn drops writes to a gone client
without telling the writer, and an idle stream writes nothing anyway)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from mpijob.api.core.resources import CONFIGMAPS, PODS
from mpijob.server.routes import logs, watch
from mpijob.server.routes.paths import Target
from mpijob.server.state import Cluster
from mpijob.store.home import Home
from mpijob.store.objects import Store
from starlette.requests import Request


def _request(path: str, query: str, gone: asyncio.Event) -> Request:
    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    scope = {"type": "http", "method": "GET", "path": path, "query_string": query.encode(), "headers": []}
    return Request(scope, receive)


async def _drain(body: Any, gone: asyncio.Event, leave_after: float) -> float:
    """Read the stream; the client leaves after `leave_after` s. Returns how long the stream ran."""
    start = time.monotonic()
    asyncio.get_running_loop().call_later(leave_after, gone.set)
    async for _ in body:
        pass
    return time.monotonic() - start


def test_an_abandoned_watch_ends_within_a_poll(tmp_path: Path) -> None:
    async def run() -> float:
        store = Store(tmp_path / "store.db")
        try:
            cluster = Cluster(home=Home(tmp_path), store=store)
            gone = asyncio.Event()
            request = _request("/api/v1/namespaces/default/configmaps", "watch=true", gone)
            resp = watch.stream(request, cluster, CONFIGMAPS, "default", [], [], since=None, timeout=300,
                                table=False, include_object="")
            return await asyncio.wait_for(_drain(resp.body_iterator, gone, 0.2), 10)
        finally:
            store.close()

    assert asyncio.run(run()) < watch.POLL + 1.0


def test_an_abandoned_followed_log_ends(tmp_path: Path) -> None:
    async def run() -> float:
        store = Store(tmp_path / "store.db")
        try:
            home = Home(tmp_path).ensure()
            cluster = Cluster(home=home, store=store)
            store.create(PODS, {"metadata": {"name": "p", "namespace": "default"},
                                "spec": {"containers": [{"name": "node", "image": "x"}]},
                                "status": {"phase": "Running", "containerStatuses": [
                                    {"name": "node", "ready": True, "restartCount": 0, "image": "x", "imageID": "",
                                     "state": {"running": {}}}]}}, "default")
            gone = asyncio.Event()
            request = _request("/api/v1/namespaces/default/pods/p/log", "follow=true&container=node", gone)
            resp = await logs.serve(request, cluster, Target(PODS, "default", "p", "log"))
            return await asyncio.wait_for(_drain(resp.body_iterator, gone, 0.2), 10)
        finally:
            store.close()

    assert asyncio.run(run()) < 2.0  # the pod still runs: only the client's leaving ends it
