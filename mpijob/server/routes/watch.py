"""`watch=true`: a chunked stream of newline-delimited `{"type", "object"}` events.

Without a resourceVersion (or with "0") the stream starts with a synthetic ADDED per existing object,
as kube-apiserver does; with one it replays the store's change log after it. Objects are sent in the
version the client watches (Kueue v1beta1 watches get converted objects). A version older than
the kept history is reported in-stream as an ERROR event with a 410 Expired Status.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from mpijob.api import Obj
from mpijob.api.core import tables
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import Resource
from mpijob.api.core.selectors import Requirement
from mpijob.api.kueue.conversion import from_storage
from mpijob.server.http import JSON, Disconnect
from mpijob.server.state import Cluster

DEFAULT_TIMEOUT = 1800.0
POLL = 1.0  # how often an idle stream checks for server shutdown and a client that has gone

_END = object()


async def changes(cluster: Cluster, res: Resource, namespace: str | None, labels: list[Requirement],
                  fields: list[Requirement], since: str | None) -> AsyncIterator[tuple[str, Obj]]:
    """One watch's events, stored form: an ADDED per existing object when `since` is unset or "0", then
    the store's changes after it (an ApiError 410 when it is older than the kept history)."""
    start = since
    if not since or since == "0":
        items, start = cluster.store.list(res, namespace, labels, fields)
        for obj in items:
            yield "ADDED", obj
    async for event in cluster.store.watch(res, namespace, start, labels, fields):
        yield event


def stream(
    request: Request,
    cluster: Cluster,
    res: Resource,
    namespace: str | None,
    labels: list[Requirement],
    fields: list[Requirement],
    *,
    since: str | None,
    timeout: int | None,
    table: bool,
    include_object: str,
) -> StreamingResponse:
    def encode(kind: str, obj: dict[str, Any]) -> bytes:
        if kind != "ERROR":
            obj = from_storage(res, obj)  # a v1beta1 watch sees v1beta1 objects
        if table and kind != "ERROR":
            obj = tables.table(res, [obj], obj.get("metadata", {}).get("resourceVersion", ""),
                               include_object=include_object)
        return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

    async def events() -> AsyncIterator[bytes]:
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for event in changes(cluster, res, namespace, labels, fields, since):
                    await queue.put(event)
            except ApiError as err:
                await queue.put(err)
            finally:
                await queue.put(_END)

        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout if timeout and timeout > 0 else DEFAULT_TIMEOUT)
        task = asyncio.create_task(pump())
        try:
            async with Disconnect(request) as client:
                while not cluster.stopping.is_set() and not client.gone:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return
                    try:
                        item = await asyncio.wait_for(queue.get(), min(remaining, POLL))
                    except TimeoutError:
                        continue
                    if item is _END:
                        return
                    if isinstance(item, ApiError):
                        yield encode("ERROR", item.to_status())
                        return
                    kind, obj = item
                    yield encode(kind, obj)
        finally:
            task.cancel()

    return StreamingResponse(events(), media_type=JSON, headers={"Cache-Control": "no-cache, private"})
