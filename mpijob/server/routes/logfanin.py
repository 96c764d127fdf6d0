"""`GET /dashboard/api/namespaces/NS/logs?pod=NAME&pod=NAME:LINES…`: many pods' logs followed over one
connection, for the dashboard.

A browser opens at most 6 HTTP/1.1 connections to a server, and a followed log holds one for as long as
its container runs: the Logs view of a 100-node job could follow only its launcher live, and read the
nodes' logs once. So the page sends every pod it follows here at once, as it does its watches
(`fanin`). Each `pod` is authorized as its own `GET .../pods/NAME/log` would be (RBAC `get pods/log` on
that pod, for the session's user) and followed as `?follow=true` follows it (`routes.logs`): until its
container has terminated and every line is sent, or its pod is deleted or replaced. `NAME:LINES` leaves
out the first LINES lines, which an earlier stream brought: a page that reconnects to add a pod does
not fetch the others' logs again. `container`, `timestamps` and the ranks header (`RANKS_HEADER`) mean
what they mean to `pods/log`, for every pod.

Every answer is one line of JSON, `{"stream": i, "type", ...}`, where `i` is the index of its `pod`:
`LINES` with `lines` (a batch of that pod's log lines, in order), `END` once that pod's log is complete,
or `ERROR` with `object`, the Status its own request would have got (403, 404, 400). One pod's error
ends only its stream; the answer ends when every stream has. Kubernetes has no such API; only the
dashboard uses this one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mpijob.api import Obj, names
from mpijob.api.core import errors, rbac
from mpijob.api.core.resources import PODS
from mpijob.api.trainer.mpi_output import RANKS_HEADER
from mpijob.server.http import JSON, Disconnect, parse_bool, parse_int
from mpijob.server.routes.logs import pick_container, terminated
from mpijob.server.state import Cluster
from mpijob.store.authorizer import enabled, index
from mpijob.store.logs import DONE_POLL, FOLLOW_POLL, Tail

MAX_PODS = 128  # a 100-node job and its launcher, with room: a bound on what one request may follow
NAME_MAX = 253  # a pod's name is a DNS subdomain


@dataclass
class Stream:
    """One pod's followed log within the answer."""

    index: int
    name: str
    uid: str
    container: str
    tail: Tail
    finished: bool = False  # its container had ended when last asked: the next empty read ends the stream


def parse_pod(value: str) -> tuple[str, int]:
    """`NAME` or `NAME:LINES` → (name, lines to leave out); 400 for anything else (the request's fault)."""
    name, sep, lines = value.partition(":")
    skip = parse_int(lines, "pod") if sep else 0
    if not (0 < len(name) <= NAME_MAX and names.DNS1123_SUBDOMAIN.fullmatch(name)) or skip is None or skip < 0:
        raise errors.bad_request(f"pod {value!r} is not NAME or NAME:LINES (a pod's name, then how many of its "
                                 "first lines the page has already)")
    return name, skip


def open_stream(cluster: Cluster, user: rbac.User, namespace: str, i: int, value: str, container: str | None,
                timestamps: bool, ranks: bool) -> Stream:
    """The pod's log from where the page asked, if the user may read it; else the ApiError its own
    request would get (403 before 404, as kube-apiserver authorizes before it looks)."""
    name, skip = parse_pod(value)
    if enabled():
        attrs = rbac.Attributes(user, "get", True, api_group="", api_version="v1", resource=PODS.plural,
                                subresource="log", namespace=namespace, name=name)
        decision = index(cluster.store).authorizer().authorize(attrs)
        if not decision.allowed:
            raise rbac.forbidden(attrs, decision.reason)
    pod = cluster.store.get(PODS, namespace, name)
    chosen = pick_container(pod, container)
    tail = cluster.logs.tail(namespace, name, chosen, timestamps=timestamps, ranks=ranks, skip_lines=skip)
    return Stream(i, name, pod["metadata"].get("uid", ""), chosen, tail)


def _event(i: int, kind: str, **fields: object) -> bytes:
    return json.dumps({"stream": i, "type": kind, **fields}, separators=(",", ":")).encode() + b"\n"


def _lines(s: Stream, chunk: bytes) -> bytes:
    return _event(s.index, "LINES", lines=chunk.decode("utf-8", "replace").split("\n")[:-1]) if chunk else b""


def _ended(cluster: Cluster, namespace: str, s: Stream) -> bool:
    """Its container has terminated, or its pod is gone or another pod took its name."""
    pod: Obj | None = cluster.store.try_get(PODS, namespace, s.name)
    if pod is not None and pod["metadata"].get("uid", "") != s.uid:
        return True
    return terminated(pod, s.container)


def follow_many(request: Request, cluster: Cluster, user: rbac.User, namespace: str) -> Response:
    q = request.query_params
    pods = q.getlist("pod")
    if not pods or len(pods) > MAX_PODS:
        raise errors.bad_request(f"give 1 to {MAX_PODS} `pod` parameters, each a pod's name (NAME or NAME:LINES)")
    for value in pods:
        parse_pod(value)  # a malformed one is the request's fault, before anything is sent
    timestamps = parse_bool(q.get("timestamps"), "timestamps")
    ranks = request.headers.get(RANKS_HEADER, "").lower() == "true"
    opened: list[Stream | errors.ApiError] = []
    for i, value in enumerate(pods):
        try:
            opened.append(open_stream(cluster, user, namespace, i, value, q.get("container"), timestamps, ranks))
        except errors.ApiError as err:  # this pod's own answer: only its stream ends
            opened.append(err)

    async def events() -> AsyncIterator[bytes]:
        live = [s for s in opened if isinstance(s, Stream)]
        first = b"".join(_event(i, "ERROR", object=s.to_status()) if isinstance(s, errors.ApiError)
                         else _lines(s, s.tail.first) for i, s in enumerate(opened))
        if first:
            yield first
        loop = asyncio.get_running_loop()
        asked = loop.time() - DONE_POLL  # a finished job's pods end at the first look
        async with Disconnect(request) as client:
            while live and not client.gone and not cluster.stopping.is_set():
                await asyncio.sleep(FOLLOW_POLL)
                if loop.time() - asked >= DONE_POLL:  # asked before the reads: what came before the end is sent
                    asked = loop.time()
                    for s in live:
                        s.finished = _ended(cluster, namespace, s)
                out = []
                for s in list(live):
                    chunk = s.tail.read()
                    if chunk:
                        out.append(_lines(s, chunk))
                    elif s.finished:
                        out.append(_event(s.index, "END"))
                        live.remove(s)
                if out:
                    yield b"".join(out)

    headers = {"Cache-Control": "no-cache, private"} | ({RANKS_HEADER: "true"} if ranks else {})
    return StreamingResponse(events(), media_type=JSON, headers=headers)
