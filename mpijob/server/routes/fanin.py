"""`GET /dashboard/api/watch?path=LIST&path=LIST…`: many watches over one connection, for the dashboard.

A browser opens at most 6 HTTP/1.1 connections to a server, and every Kubernetes watch holds one for
as long as it lasts. A page that follows a job, its pods, its events and its Workload, or the queues,
the nodes and the pods of the machine, would use them all and stall its own next request. So the page
sends every list it follows here at once. Each `path` is a list URL of the Kubernetes API, with its own
`resourceVersion`, `labelSelector` and `fieldSelector`. Each one is authorized as its own watch would
be (RBAC `watch` for the session's user) and followed by the same `watch.changes` as its own watch. Every
event is one line, `{"stream": i, "type", "object"}`, where `i` is the index of its path.

When a stream is refused or falls too far behind (a 403, or a 410 Expired), only that stream ends, with
an ERROR line; the others go on. The page re-lists that one and sends the set again. Kubernetes has
no such API; only the dashboard uses this one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mpijob.api import Obj
from mpijob.api.core import errors, rbac
from mpijob.api.core.resources import Resource
from mpijob.api.core.selectors import Requirement, parse_fields, parse_labels
from mpijob.api.kueue.conversion import from_storage
from mpijob.server.http import JSON, Disconnect, parse_resource_version
from mpijob.server.routes.paths import Target, parse
from mpijob.server.routes.watch import DEFAULT_TIMEOUT, POLL, changes
from mpijob.server.state import Cluster
from mpijob.store.authorizer import enabled, index

MAX_STREAMS = 64  # more than any page follows; a bound on what one request may hold open


@dataclass(frozen=True)
class Stream:
    res: Resource
    namespace: str | None
    labels: list[Requirement]
    fields: list[Requirement]
    since: str | None


def open_stream(cluster: Cluster, user: rbac.User, url: str) -> Stream:
    """The watch a list URL asks for, if the user may watch it; the ApiError its own watch would get else."""
    parts = urlsplit(url)
    prefix, _, rest = parts.path.lstrip("/").partition("/")
    if prefix not in ("api", "apis") or parts.scheme or parts.netloc:
        raise errors.bad_request(f"path {url!r} is not a list of the Kubernetes API (/api/... or /apis/...)")
    target = parse(prefix, rest)
    if not isinstance(target, Target) or target.name is not None or target.subresource is not None:
        raise errors.bad_request(f"path {url!r} is not a list: name a resource, e.g. /api/v1/namespaces/NS/pods")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    since = query.get("resourceVersion")
    parse_resource_version(since)
    stream = Stream(target.res, target.namespace, parse_labels(query.get("labelSelector")),
                    parse_fields(query.get("fieldSelector")), since)
    if enabled():
        attrs = rbac.request_attributes(user, "GET", parts.path, "watch=1")
        decision = index(cluster.store).authorizer().authorize(attrs)
        if not decision.allowed:
            raise rbac.forbidden(attrs, decision.reason)
    return stream


def _line(i: int, kind: str, obj: Obj) -> bytes:
    return json.dumps({"stream": i, "type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


def watch_many(request: Request, cluster: Cluster, user: rbac.User) -> Response:
    urls = request.query_params.getlist("path")
    if not urls or len(urls) > MAX_STREAMS:
        raise errors.bad_request(f"give 1 to {MAX_STREAMS} `path` parameters, each a list URL to watch")
    opened: list[Stream | errors.ApiError] = []
    for url in urls:
        try:
            opened.append(open_stream(cluster, user, url))
        except errors.ApiError as err:
            if err.code != 403:  # a malformed path is the request's fault; a forbidden one only that stream's
                raise
            opened.append(err)

    async def events() -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue()

        async def pump(i: int, s: Stream | errors.ApiError) -> None:
            try:
                if isinstance(s, errors.ApiError):
                    raise s
                async for kind, obj in changes(cluster, s.res, s.namespace, s.labels, s.fields, s.since):
                    await queue.put(_line(i, kind, from_storage(s.res, obj)))
            except errors.ApiError as err:
                await queue.put(_line(i, "ERROR", err.to_status()))

        tasks = [asyncio.create_task(pump(i, s)) for i, s in enumerate(opened)]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEFAULT_TIMEOUT
        try:
            async with Disconnect(request) as client:
                while not cluster.stopping.is_set() and not client.gone and loop.time() < deadline:
                    try:
                        yield await asyncio.wait_for(queue.get(), POLL)
                    except TimeoutError:
                        continue
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    return StreamingResponse(events(), media_type=JSON, headers={"Cache-Control": "no-cache, private"})
