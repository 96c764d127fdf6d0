"""Port forwarding to a pod over a WebSocket, in the two protocols clients speak; what kubelet serves.

A forwarded connection is one TCP connection to a port of the pod (`Connect` opens it), its bytes
copied both ways through the client's WebSocket. Which protocol a session speaks is the WebSocket
subprotocol the client asked for (`negotiate`):

`SPDY/3.1+portforward.k8s.io` (kubectl ≥ 1.31 by default; client-go's tunneling dialer): the binary
messages are only a byte stream, cut anywhere, carrying a whole SPDY/3.1 connection (`spdy.py`) with
kubectl as the SPDY client; the apiserver unwraps it and hands the SPDY on to kubelet unchanged. For
each local connection kubectl opens two streams with the headers `streamtype` (`error`, then
`data`), `port` and `requestid` (the same for both: it pairs them), and waits for each one's
SYN_REPLY. It half-closes the error stream at once and reads it to its end: text there is a failure,
which kubectl prints before it ends the whole port-forward. The data stream carries the bytes; a FIN
ends one side's sending, and kubectl resets the data stream once it has the pod's FIN. On leaving,
kubectl resets every stream and sends GOAWAY.

`v4.channel.k8s.io` (the kubernetes Python client's `portforward`): the ports come in the query
(`parse_ports`), a connection to each is opened at once, and every message starts with a channel
byte: for the i-th port 2i carries data (both ways) and 2i+1 errors (to the client); the server
first sends each channel its port, 2 bytes little-endian. There is no half-close: a port's connection
lasts until the pod closes it or the WebSocket ends, and the session ends when all of them have.

Flow control: spdystream (client-go's SPDY) neither sends WINDOW_UPDATE nor heeds one, nor does
kubelet's, so SPDY windows are ignored here (keeping to the 64 KiB initial window would stall every
transfer past it). Backpressure is TCP's instead: a pod that reads slowly stops this side reading the
WebSocket (a few chunks queue per connection), and a client that reads slowly stops this side reading
the pod.

Every task here lives no longer than its session; when the session ends (the client leaves, a
malformed frame, GOAWAY, every port done) the connections to the pod are closed and the tasks ended
before `serve_*` returns. The caller closes the WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import struct
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mpijob.server.streams import spdy
from mpijob.server.streams.messages import Messages

log = logging.getLogger(__name__)

SPDY_SUBPROTOCOL = "SPDY/3.1+portforward.k8s.io"  # client-go's "SPDY/3.1+" tunnelling prefix + kubelet's protocol
CHANNEL_SUBPROTOCOL = "v4.channel.k8s.io"
SUBPROTOCOLS = (SPDY_SUBPROTOCOL, CHANNEL_SUBPROTOCOL)  # preferred first

CONNECT_SECONDS = 10.0  # to open the pod's port; a dropped SYN would otherwise take the kernel's two minutes
PAIR_SECONDS = 30.0  # kubelet's stream creation timeout: a request's second stream comes within it or never
CLOSE_SECONDS = 5.0  # for a closed connection to the pod to flush what is still owed to it
CHUNK = 64 * 1024  # read from the pod at a time: one DATA frame or channel message
QUEUED_CHUNKS = 64  # client-to-pod chunks held per connection (kubectl's are ≤ 32 KiB) before the reading stops


# Opens a connection to a port of the pod; raises OSError when it cannot (its errno words the client's error)
Connect = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def negotiate(offered: Sequence[str]) -> str | None:
    """The subprotocol to accept among those the client offers (`Sec-WebSocket-Protocol`), or None."""
    return next((p for p in SUBPROTOCOLS if p in offered), None)


def parse_ports(values: Iterable[str]) -> list[int]:
    """The `ports` query parameters, repeated or comma-separated (the Python client sends `ports=80,443`)."""
    ports = []
    for value in values:
        for text in value.split(","):
            if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
                raise ValueError(f'unable to parse "{text}" as a port (1-65535)')
            ports.append(int(text))
    if not ports:
        raise ValueError('query parameter "ports" is required')
    if len(ports) > 128:
        raise ValueError(f"{len(ports)} ports: at most 128 (two channels each, numbered by a byte)")
    return ports


class _Forward:
    """One forwarded connection: the pod's port, and the client's bytes queued for it (bounded)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUED_CHUNKS)
        self._open = True

    async def put(self, data: bytes | None) -> None:
        """Queue bytes for the pod (None: the client sends no more); waits while the pod is behind."""
        if self._open:
            await self._queue.put(data)

    def close(self) -> None:
        """Drop what is queued and all that comes: nothing reads it any more (this frees a waiting `put`)."""
        self._open = False
        while not self._queue.empty():
            self._queue.get_nowait()

    async def run(self, connect: Connect, send: Callable[[bytes], Awaitable[None]]) -> str | None:
        """Connect, then copy both ways until the pod's side ends. What went wrong, for the client, or None."""
        try:
            reader, writer = await asyncio.wait_for(connect(self.port), CONNECT_SECONDS)
        except TimeoutError:
            return "connect: i/o timeout"
        except OSError as e:  # in Go's words where the errno has them: "connect: connection refused"
            if e.errno and e.errno in errno.errorcode:
                return f"connect: {os.strerror(e.errno).lower()}"
            return f"connect: {e}"
        to_pod = asyncio.create_task(self._to_pod(writer), name=f"portforward to port {self.port}")
        graceful = False
        try:
            while chunk := await reader.read(CHUNK):
                await send(chunk)
            graceful = True
        except ConnectionError:
            graceful = True  # the pod reset it: an end like any other, as the client cannot be told apart
        finally:
            self.close()
            to_pod.cancel()
            await _close(writer, graceful)
        return None

    async def _to_pod(self, writer: asyncio.StreamWriter) -> None:
        try:
            while (chunk := await self._queue.get()) is not None:
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()  # the client's half-close, passed on: the pod may still answer
        except ConnectionError:
            pass  # the pod is gone; reading from it ends the forward
        finally:
            self.close()


async def _close(writer: asyncio.StreamWriter, graceful: bool) -> None:
    """Close a connection to the pod: at once, or once what it is owed is flushed (within CLOSE_SECONDS).
    Closed even when this is cancelled (a session ending while a forward ends)."""
    if not graceful:
        writer.transport.abort()
        return
    writer.close()
    try:
        with contextlib.suppress(TimeoutError, OSError):
            await asyncio.wait_for(writer.wait_closed(), CLOSE_SECONDS)
    finally:
        writer.transport.abort()  # a no-op once closed


def _failure(port: int, pod: str, uid: str, reason: str) -> str:
    return f"error forwarding port {port} to pod {pod}, uid {uid}: {reason}"  # kubelet's wording


class _Sender:
    """Sends whole messages one at a time; once the client is gone (or the session over), sends nothing."""

    def __init__(self, messages: Messages) -> None:
        self._messages = messages
        self._lock = asyncio.Lock()
        self.ended = False

    async def __call__(self, data: bytes) -> None:
        async with self._lock:
            if self.ended:
                return
            try:
                await self._messages.send(data)
            except ConnectionError:
                self.ended = True  # receive() will say so too, and the session ends


async def _end(tasks: Iterable[asyncio.Task[None]]) -> None:
    """Cancel the tasks and wait for them (their `finally` closes their connections); a bug in one is logged."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task, result in zip(tasks, await asyncio.gather(*tasks, return_exceptions=True)):
        if isinstance(result, Exception):
            log.error("port-forward: %s failed", task.get_name(), exc_info=result)


@dataclass(eq=False)
class _Pair:
    """The error and data streams of one kubectl request, and the connection they forward."""

    request_id: str
    forward: _Forward
    error_id: int = 0
    data_id: int = 0
    complete: asyncio.Event = field(default_factory=asyncio.Event)
    done: set[int] = field(default_factory=set)  # streams this side sends no more on: FIN sent, or reset
    task: asyncio.Task[None] | None = None


class _SpdySession:
    """One kubectl port-forward: SPDY frames in, a `_Pair` and its task per forwarded connection."""

    def __init__(self, messages: Messages, connect: Connect, pod: str, uid: str) -> None:
        self._messages, self._connect, self._pod, self._uid = messages, connect, pod, uid
        self._send = _Sender(messages)
        self._writer = spdy.Writer()
        self._pairs: dict[str, _Pair] = {}  # by request id
        self._streams: dict[int, _Pair] = {}  # by the id of either stream
        self._last_id = 0

    async def run(self) -> None:
        reader = spdy.Reader()
        try:
            while (message := await self._messages.receive()) is not None:
                for frame in reader.feed(message):
                    if isinstance(frame, spdy.GoAway):
                        return  # kubectl leaving (it has reset every stream first)
                    await self._handle(frame)
        except spdy.ProtocolError as e:
            log.warning("port-forward to pod %s: %s; closing the connection", self._pod, e)
            await self._send(self._writer.goaway(self._last_id, spdy.GOAWAY_PROTOCOL_ERROR))
        finally:
            self._send.ended = True
            await _end(p.task for p in self._pairs.values() if p.task)

    async def _handle(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.SynStream):
            await self._open(frame)
        elif isinstance(frame, spdy.Data | spdy.HeadersFrame):
            pair = self._streams.get(frame.stream_id)
            if pair is None or frame.stream_id != pair.data_id:
                return  # the error stream's FIN, or a stream already over: dropped, as spdystream does
            if isinstance(frame, spdy.Data) and frame.data:
                await pair.forward.put(frame.data)
            if frame.fin:
                await pair.forward.put(None)
        elif isinstance(frame, spdy.RstStream):
            if (pair := self._streams.get(frame.stream_id)) is not None and pair.task is not None:
                pair.done.add(frame.stream_id)
                if not pair.task.cancelling():
                    pair.task.cancel()  # either stream reset: the client has given up on the connection
        elif isinstance(frame, spdy.Ping) and frame.id % 2:
            await self._send(self._writer.ping(frame.id))  # the client's pings are odd; even would answer ours

    async def _open(self, syn: spdy.SynStream) -> None:
        sid = syn.stream_id
        if sid % 2 == 0 or sid <= self._last_id:  # a client's stream ids are odd and increasing
            await self._send(self._writer.rst_stream(sid, spdy.PROTOCOL_ERROR))
            return
        self._last_id = sid

        def header(name: str) -> str:
            return (syn.headers.get(name) or [""])[0]

        kind, port, request_id = header("streamtype"), header("port"), header("requestid")
        if not request_id:  # clients before requestid: kubelet pairs a data stream with the one 2 before it
            request_id = str(sid - 2 if kind == "data" else sid)
        pair = self._pairs.get(request_id)
        problem = None
        if kind not in ("error", "data"):
            problem = f'invalid stream type "{kind}"'
        elif not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            problem = f'unable to parse "{port}" as a port'
        elif pair is not None and (pair.error_id if kind == "error" else pair.data_id):
            problem = f"{kind} stream already assigned"
        elif pair is not None and pair.forward.port != int(port):
            problem = f"port {port} differs from the other stream's, {pair.forward.port}"
        if problem:
            log.warning("port-forward to pod %s: stream %d of request %s refused: %s", self._pod, sid, request_id,
                        problem)
            await self._send(self._writer.rst_stream(sid, spdy.REFUSED_STREAM))
            return
        if pair is None:
            pair = self._pairs[request_id] = _Pair(request_id, _Forward(int(port)))
            pair.task = asyncio.create_task(self._serve(pair), name=f"portforward request {request_id}")
        await self._send(self._writer.syn_reply(sid))
        self._streams[sid] = pair
        if kind == "error":
            pair.error_id = sid
        else:
            pair.data_id = sid
            if syn.fin:
                await pair.forward.put(None)
        if pair.error_id and pair.data_id:
            pair.complete.set()

    async def _serve(self, pair: _Pair) -> None:
        """Forward one request's connection, then end both its streams: kubectl reads the error stream to its end."""
        try:
            try:
                await asyncio.wait_for(pair.complete.wait(), PAIR_SECONDS)
            except TimeoutError:
                failure: str | None = f"timed out waiting for the streams of request {pair.request_id}"
            else:
                failure = await pair.forward.run(self._connect, lambda chunk: self._data(pair, pair.data_id, chunk))
                if failure:
                    failure = _failure(pair.forward.port, self._pod, self._uid, failure)
            if failure:
                log.info("port-forward to pod %s: %s", self._pod, failure)
                await self._data(pair, pair.error_id, failure.encode())
        finally:
            pair.forward.close()
            del self._pairs[pair.request_id]
            for sid in (pair.data_id, pair.error_id):  # first: kubectl resets the data stream on our FIN, and
                self._streams.pop(sid, None)  # that reset must not cut short the error stream's FIN it waits for
            for sid in (pair.data_id, pair.error_id):
                await self._data(pair, sid, b"", fin=True)

    async def _data(self, pair: _Pair, sid: int, data: bytes, fin: bool = False) -> None:
        if sid and sid not in pair.done:
            if fin:
                pair.done.add(sid)
            await self._send(self._writer.data(sid, data, fin))


async def serve_spdy(messages: Messages, connect: Connect, pod: str, uid: str = "") -> None:
    """Serve kubectl's port-forward (subprotocol SPDY_SUBPROTOCOL) until it leaves; `pod` and `uid`
    name the pod in error messages, as kubelet's do."""
    await _SpdySession(messages, connect, pod, uid).run()


async def serve_channels(messages: Messages, connect: Connect, ports: list[int], pod: str, uid: str = "") -> None:
    """Serve the channel protocol (CHANNEL_SUBPROTOCOL) for `ports` (from `parse_ports`) until the
    client leaves or every port's connection has ended."""
    send = _Sender(messages)
    forwards = [_Forward(port) for port in ports]

    async def serve(index: int, forward: _Forward) -> None:
        data, error = bytes([2 * index]), bytes([2 * index + 1])
        try:
            if failure := await forward.run(connect, lambda chunk: send(data + chunk)):
                failure = _failure(forward.port, pod, uid, failure)
                log.info("port-forward to pod %s: %s", pod, failure)
                await send(error + failure.encode())
        finally:
            forward.close()

    async def receive() -> None:
        while (message := await messages.receive()) is not None:
            if len(message) < 2:
                continue  # a channel with no data, or not even a channel
            if message[0] % 2 or message[0] >= 2 * len(forwards):
                log.debug("port-forward to pod %s: message on channel %d ignored", pod, message[0])
            else:
                await forwards[message[0] // 2].put(message[1:])

    try:
        for index, port in enumerate(ports):  # before any data: the client checks them first
            prefix = struct.pack("<H", port)
            await send(bytes([2 * index]) + prefix)
            await send(bytes([2 * index + 1]) + prefix)
        tasks = [asyncio.create_task(serve(i, f), name=f"portforward port {f.port}") for i, f in enumerate(forwards)]
        reading = asyncio.create_task(receive(), name="portforward channels")
        pending = {reading, *tasks}
        try:
            while reading in pending and len(pending) > 1:  # the client is there, and so is a port's connection
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            send.ended = True
            await _end([reading, *tasks])
    finally:
        for forward in forwards:
            forward.close()
