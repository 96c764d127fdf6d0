"""The port-forward wire protocols (mpijob/server/streams/portforward.py) against real clients: the machine's
kubectl (SPDY/3.1 tunnelled in a WebSocket) and the kubernetes Python client (the v4 channel protocol).

The server here is a stand-in, not the mpijob server: a small starlette app under uvicorn on 127.0.0.1 with
just what kubectl asks for (discovery, the pod, its portforward subresource), its WebSocket route calling
`serve_spdy`/`serve_channels` with a `connect` that opens 127.0.0.1:<port>, where the test's TCP servers
stand in for the pod. The real route (auth, RBAC, audit, the pod's network) is wired and tested separately;
what is checked here is the protocols: bytes both ways, 20 MB (no stall past SPDY's 64 KiB window), two
connections at once, a refused port's error as kubectl prints it, everything ended when the client goes,
a malformed frame ending the session, and the refusal a SPDY-only kubectl gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import queue
import signal
import socket
import struct
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from kubernetes import client as k8s
from kubernetes.stream import portforward as k8s_portforward
from mpijob.server.routes import connect
from mpijob.server.streams import portforward, spdy
from mpijob.server.streams.messages import WebSocketMessages
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from support import KUBECTL, scaled, wait_for

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "x", "namespace": "default", "uid": "0f0e0d0c-0000-4000-8000-000000000001"},
       "spec": {"containers": [{"name": "c", "image": "none"}]}, "status": {"phase": "Running"}}
PODS = {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"],
        "shortNames": ["po"]}
PORTFORWARD = {"name": "pods/portforward", "singularName": "", "namespaced": True, "kind": "PodPortForwardOptions",
               "verbs": ["create", "get"]}


# --- the pod: TCP servers on 127.0.0.1 ----------------------------------------------------------------------


class EchoServer:
    """Echoes each connection's bytes until its EOF, then closes; counts the connections still open."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.open = 0
        self.served = 0
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.open += 1
                self.served += 1
            thread = threading.Thread(target=self._echo, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _echo(self, conn: socket.socket) -> None:
        try:
            while data := conn.recv(1 << 16):
                conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()
            with self._lock:
                self.open -= 1

    def close(self) -> None:
        self.sock.close()
        for thread in self._threads:
            thread.join(timeout=scaled(5))


def free_port() -> int:
    """A port nothing listens on (just released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the stand-in API server ------------------------------------------------------------------------------


@dataclass
class StandIn:
    """The app under uvicorn in a thread: its URL, its loop, and how many port-forward sessions run."""

    url: str = ""
    loop: asyncio.AbstractEventLoop | None = None
    active: int = 0
    ended: int = 0
    protocols: list[str] = field(default_factory=list)

    def tasks(self) -> list[str]:
        """The names of the port-forward tasks alive in the server's loop."""
        async def names() -> list[str]:
            return sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("portforward"))

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(names(), self.loop).result(timeout=scaled(10))

    def idle(self) -> bool:
        return self.active == 0 and not self.tasks()


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


def make_app(state: StandIn) -> Starlette:
    async def api(request: Request) -> JSONResponse:
        address = state.url.removeprefix("http://")
        return JSONResponse({"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]})

    async def apis(request: Request) -> JSONResponse:
        return JSONResponse({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})

    async def core(request: Request) -> JSONResponse:
        return JSONResponse({"kind": "APIResourceList", "groupVersion": "v1", "resources": [PODS, PORTFORWARD]})

    async def version(request: Request) -> JSONResponse:
        return JSONResponse({"major": "1", "minor": "32", "gitVersion": "v1.32.0-standin", "platform": "linux/amd64"})

    async def pod(request: Request) -> JSONResponse:
        return JSONResponse(POD)

    async def spdy_upgrade(request: Request) -> JSONResponse:
        """A request that is not a WebSocket: kubectl's plain SPDY/3.1 upgrade, refused with a Status."""
        assert "spdy/3.1" in request.headers.get("upgrade", "").lower(), request.headers
        refusal = connect.spdy_refusal("portforward")
        return JSONResponse(refusal.to_status(), status_code=refusal.code)

    async def forward(websocket: WebSocket) -> None:
        chosen = portforward.negotiate(websocket.scope.get("subprotocols", []))
        if chosen is None:
            await websocket.close()
            return
        await websocket.accept(subprotocol=chosen)
        state.protocols.append(chosen)
        state.active += 1
        messages = WebSocketMessages(websocket)
        try:
            if chosen == portforward.SPDY_SUBPROTOCOL:
                await portforward.serve_spdy(messages, _connect, "default/x")
            else:
                ports = portforward.parse_ports(websocket.query_params.getlist("ports"))
                await portforward.serve_channels(messages, _connect, ports, "default/x")
        finally:
            state.active -= 1
            state.ended += 1
            with contextlib.suppress(WebSocketDisconnect, RuntimeError):  # the client may have closed it already
                await websocket.close()

    path = "/api/v1/namespaces/default/pods/x"
    return Starlette(routes=[
        Route("/api", api), Route("/apis", apis), Route("/api/v1", core), Route("/version", version),
        Route(path, pod), Route(f"{path}/portforward", spdy_upgrade, methods=["GET", "POST"]),
        WebSocketRoute(f"{path}/portforward", forward),
    ])


@pytest.fixture()
def standin() -> Iterator[StandIn]:
    state = StandIn()
    sock = socket.create_server(("127.0.0.1", 0))
    state.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(make_app(state), log_level="warning", ws="wsproto", lifespan="off")
    server = uvicorn.Server(config)

    def run() -> None:
        async def serve() -> None:
            state.loop = asyncio.get_running_loop()
            await server.serve(sockets=[sock])

        asyncio.run(serve())

    thread = threading.Thread(target=run, name="standin", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, "the stand-in server to start", timeout=20)
        yield state
    finally:
        server.should_exit = True
        thread.join(timeout=scaled(15))
        sock.close()
        assert not thread.is_alive(), "the stand-in server did not stop"


@pytest.fixture()
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    try:
        yield server
    finally:
        server.close()


# --- kubectl ----------------------------------------------------------------------------------------------


class KubectlForward:
    """`kubectl port-forward pod/x :<remote>` running; `local` is the port it listens on."""

    def __init__(self, standin: StandIn, tmp: Path, remote: int, env: dict[str, str] | None = None) -> None:
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
            f"clusters: [{{name: t, cluster: {{server: '{standin.url}'}}}}]\n"
            "users: [{name: t, user: {token: standin}}]\n"
            "contexts: [{name: t, context: {cluster: t, user: t, namespace: default}}]\n")
        cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp / "cache"), "port-forward",
               "--address", "127.0.0.1", "pod/x", f":{remote}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "HOME": str(tmp), **(env or {})})
        self.stdout: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout.put), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr.append), daemon=True)]
        for reader in self._readers:
            reader.start()
        self.local = 0

    @staticmethod
    def _read(stream: Any, put: Any) -> None:
        for line in stream:
            put(line)

    def ready(self) -> int:
        """Wait for `Forwarding from 127.0.0.1:<local> -> <remote>`; the local port."""
        deadline = time.monotonic() + scaled(30)
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.stdout.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            if line.startswith("Forwarding from 127.0.0.1:"):
                self.local = int(line.split(":")[1].split()[0])
                return self.local
        raise AssertionError(f"kubectl port-forward never got ready (exit {self.proc.poll()}):\n"
                             f"{''.join(seen)}{self.err()}")

    def err(self) -> str:
        """What kubectl printed on stderr: all of it once it has exited."""
        if self.proc.poll() is not None:
            for reader in self._readers:
                reader.join(timeout=scaled(5))
        return "".join(self.stderr)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=scaled(timeout))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=scaled(10))
        for reader in self._readers:
            reader.join(timeout=scaled(5))


@contextlib.contextmanager
def kubectl_forward(standin: StandIn, tmp: Path, remote: int, env: dict[str, str] | None = None
                    ) -> Iterator[KubectlForward]:
    forward = KubectlForward(standin, tmp, remote, env)
    try:
        yield forward
    finally:
        forward.stop()


def dial(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(20))
    return sock


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(1 << 20, n - len(out)))
        assert chunk, f"EOF after {len(out)} of {n} bytes"
        out += chunk
    return bytes(out)


def recv_all(sock: socket.socket) -> bytes:
    out = bytearray()
    while chunk := sock.recv(1 << 16):
        out += chunk
    return bytes(out)


# --- kubectl: SPDY/3.1 in a WebSocket ---------------------------------------------------------------------


def test_kubectl_round_trip_and_half_close(standin: StandIn, echo: EchoServer, tmp_path: Path) -> None:
    with kubectl_forward(standin, tmp_path, echo.port) as kubectl:
        local = kubectl.ready()
        with dial(local) as sock:
            for message in (b"hello", b"\0\xff" * 1000, b"third"):
                sock.sendall(message)
                assert recv_exactly(sock, len(message)) == message
            sock.sendall(b"last words")
            sock.shutdown(socket.SHUT_WR)  # FIN on the data stream → EOF at the pod, which closes → FIN back
            assert recv_all(sock) == b"last words"
        wait_for(lambda: echo.open == 0, "the pod's connection to close after both sides ended", timeout=10)
        assert kubectl.proc.poll() is None, f"kubectl ended:\n{kubectl.err()}"
        assert standin.protocols == [portforward.SPDY_SUBPROTOCOL]


def test_kubectl_20_mb_both_ways(standin: StandIn, echo: EchoServer, tmp_path: Path) -> None:
    """Far past SPDY's 64 KiB initial window: kubectl's spdystream has no flow control, nor does this side."""
    payload = os.urandom(20 * 1024 * 1024)
    with kubectl_forward(standin, tmp_path, echo.port) as kubectl:
        local = kubectl.ready()
        with dial(local) as sock:
            sock.settimeout(scaled(60))
            start = time.monotonic()
            sender = threading.Thread(target=sock.sendall, args=(payload,), daemon=True)
            sender.start()
            received = recv_exactly(sock, len(payload))
            elapsed = time.monotonic() - start
            sender.join(timeout=scaled(10))
        assert hashlib.sha256(received).hexdigest() == hashlib.sha256(payload).hexdigest()
        print(f"20 MB each way through kubectl port-forward in {elapsed:.2f}s ({20 / elapsed:.1f} MB/s)")


def test_kubectl_two_connections_at_once(standin: StandIn, echo: EchoServer, tmp_path: Path) -> None:
    with kubectl_forward(standin, tmp_path, echo.port) as kubectl:
        local = kubectl.ready()
        with dial(local) as a, dial(local) as b:
            for i in range(20):  # interleaved: each connection gets its own bytes back, in order
                a.sendall(f"a{i:02d}".encode())
                b.sendall(f"b{i:02d}".encode() * 100)
                assert recv_exactly(b, 300) == f"b{i:02d}".encode() * 100
                assert recv_exactly(a, 3) == f"a{i:02d}".encode()
            wait_for(lambda: echo.open == 2, "two connections open at the pod", timeout=10)
        wait_for(lambda: echo.open == 0, "both connections closed at the pod", timeout=10)
        assert echo.served == 2


def test_kubectl_refused_port_prints_kubelets_error(standin: StandIn, tmp_path: Path) -> None:
    port = free_port()
    with kubectl_forward(standin, tmp_path, port) as kubectl:
        local = kubectl.ready()
        with dial(local) as sock:
            assert recv_all(sock) == b""  # kubectl closes the local connection
        kubectl.wait(timeout=20)  # and, as kubectl does after an error from the pod, ends the port-forward
        expected = f"error forwarding port {port} to pod default/x, uid : connect: connection refused"
        assert expected in kubectl.err(), kubectl.err()
    wait_for(standin.idle, "the session to end", timeout=10)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["interrupted", "killed"])
def test_kubectl_gone_ends_the_session(sig: signal.Signals, standin: StandIn, echo: EchoServer, tmp_path: Path
                                       ) -> None:
    """Interrupted, kubectl resets its streams and says GOAWAY; killed, its WebSocket just drops. Either way the
    pod's connections close and the session's tasks end."""
    with kubectl_forward(standin, tmp_path, echo.port) as kubectl:
        local = kubectl.ready()
        with dial(local) as a, dial(local) as b:
            for sock in (a, b):
                sock.sendall(b"ping")
                assert recv_exactly(sock, 4) == b"ping"
            assert standin.active == 1 and echo.open == 2
            assert len(standin.tasks()) >= 2, standin.tasks()  # one per forwarded connection, and their helpers
            kubectl.proc.send_signal(sig)
            kubectl.wait(timeout=10)
            wait_for(lambda: echo.open == 0, "the pod's connections to close once kubectl is gone", timeout=15)
            wait_for(standin.idle, "the session and its tasks to end", timeout=10)
        assert standin.ended == 1


def test_kubectl_without_websockets_is_told_why(standin: StandIn, echo: EchoServer, tmp_path: Path) -> None:
    """KUBECTL_PORT_FORWARD_WEBSOCKETS=false (or kubectl < 1.31): a plain SPDY/3.1 upgrade, which this server
    refuses with a Status whose message kubectl prints."""
    with kubectl_forward(standin, tmp_path, echo.port, env={"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}) as kubectl:
        code = kubectl.wait(timeout=30)
        out = kubectl.err()
        assert code != 0, out
        assert f"error upgrading connection: {connect.spdy_refusal('portforward').message}" in out, out
        assert standin.protocols == []


# --- the kubernetes Python client: the v4 channel protocol ---------------------------------------------------


def python_client(standin: StandIn) -> k8s.CoreV1Api:
    config = k8s.Configuration(host=standin.url)
    return k8s.CoreV1Api(k8s.ApiClient(config))


def test_python_client_two_ports_and_a_refused_one(standin: StandIn, echo: EchoServer) -> None:
    other = EchoServer()
    refused = free_port()
    try:
        api = python_client(standin)
        forward = k8s_portforward(api.connect_get_namespaced_pod_portforward, "x", "default",
                                  ports=f"{echo.port},{other.port},{refused}")
        try:
            for port, message in ((echo.port, b"to the first"), (other.port, b"to the second" * 5000)):
                sock = forward.socket(port)
                sock.settimeout(scaled(20))
                sock.sendall(message)
                assert recv_exactly(sock, len(message)) == message
            sock = forward.socket(refused)
            sock.settimeout(scaled(20))
            assert sock.recv(10) == b""  # the client closes a port's socket on an error
            wait_for(lambda: forward.error(refused), "the refused port's error", timeout=10)
            assert forward.error(refused) == (
                f"error forwarding port {refused} to pod default/x, uid : connect: connection refused")
            assert forward.error(echo.port) is None
            assert standin.protocols == [portforward.CHANNEL_SUBPROTOCOL]
        finally:
            forward.close()
        wait_for(lambda: echo.open == 0 and other.open == 0, "the pod's connections to close", timeout=15)
        wait_for(standin.idle, "the session and its tasks to end", timeout=10)
    finally:
        other.close()


def test_python_client_session_ends_when_the_pod_closes(standin: StandIn) -> None:
    """kubelet's rule: the session (and so the WebSocket) ends once every port's connection has."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        api = python_client(standin)
        forward = k8s_portforward(api.connect_get_namespaced_pod_portforward, "x", "default",
                                  ports=str(listener.getsockname()[1]))
        try:
            listener.settimeout(scaled(10))
            conn, _ = listener.accept()
            with conn:
                conn.sendall(b"bye")
            sock = forward.socket(listener.getsockname()[1])
            sock.settimeout(scaled(20))
            assert recv_all(sock) == b"bye"
            wait_for(lambda: not forward.connected, "the WebSocket to close", timeout=10)
        finally:
            forward.close()
        wait_for(standin.idle, "the session and its tasks to end", timeout=10)
    finally:
        listener.close()


# --- malformed input ----------------------------------------------------------------------------------------


class Scripted:
    """`Messages` that deliver given bytes, then wait as an open WebSocket would; records what is sent."""

    def __init__(self, *incoming: bytes) -> None:
        self.incoming = list(incoming)
        self.sent: list[bytes] = []

    async def receive(self) -> bytes | None:
        if self.incoming:
            return self.incoming.pop(0)
        await asyncio.sleep(3600)
        return None

    async def send(self, data: bytes) -> None:
        self.sent.append(data)


def syn_stream(stream_id: int, headers: dict[str, str], deflate: Any) -> bytes:
    raw = struct.pack(">I", len(headers)) + b"".join(
        struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in headers.items())
    block = deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)
    body = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
    return struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(body)) + body


@pytest.mark.parametrize(("what", "frame"), [
    ("SPDY version 2", struct.pack(">HHI", 0x8002, spdy.PING, 4) + struct.pack(">I", 1)),
    ("header block does not inflate", struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, 14) + b"\0\0\0\1" + bytes(10)),
    ("DATA frame on stream 0", struct.pack(">II", 0, 3) + b"abc"),
    ("needs 8", struct.pack(">HHI", 0x8003, spdy.RST_STREAM, 4) + b"\0\0\0\1"),
])
def test_malformed_frame_ends_the_session(what: str, frame: bytes, caplog: pytest.LogCaptureFixture) -> None:
    messages = Scripted(frame[:5], frame[5:])  # cut mid-frame, as client-go's writes are

    async def refused(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise AssertionError("no connection is opened")

    with caplog.at_level(logging.WARNING, logger="mpijob.server.streams.portforward"):
        asyncio.run(asyncio.wait_for(portforward.serve_spdy(messages, refused, "default/x"), scaled(5)))
    assert what in caplog.text, caplog.text
    assert messages.sent == [spdy.Writer.goaway(0, spdy.GOAWAY_PROTOCOL_ERROR)]


def test_stream_without_its_pair_times_out_and_pings_are_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error stream whose data stream never comes: kubelet's "timed out waiting for streams", bounded."""
    monkeypatch.setattr(portforward, "PAIR_SECONDS", 0.2)
    deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
    ping = struct.pack(">HHI", 0x8003, spdy.PING, 4) + struct.pack(">I", 7)
    messages = Scripted(syn_stream(1, {"streamtype": "error", "port": "80", "requestid": "0"}, deflate), ping)

    async def session() -> None:
        task = asyncio.create_task(portforward.serve_spdy(messages, _connect, "default/x"))
        await asyncio.sleep(1)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(session())
    reader = spdy.Reader()
    inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)
    reply, pong, error, fin = messages.sent
    assert reply[:4] == struct.pack(">HH", 0x8003, spdy.SYN_REPLY) and reply[8:12] == struct.pack(">I", 1)
    assert inflate.decompress(reply[12:]) == struct.pack(">I", 0)  # no headers, in the SPDY/3 zlib stream
    assert pong == ping
    assert reader.feed(error) == [spdy.Data(1, b"timed out waiting for the streams of request 0", False)]
    assert reader.feed(fin) == [spdy.Data(1, b"", True)]


def test_negotiation_and_ports() -> None:
    assert portforward.negotiate(["v4.channel.k8s.io", "SPDY/3.1+portforward.k8s.io"]) == portforward.SPDY_SUBPROTOCOL
    assert portforward.negotiate(["v4.channel.k8s.io"]) == portforward.CHANNEL_SUBPROTOCOL
    assert portforward.negotiate(["v4.base64.channel.k8s.io"]) is None
    assert portforward.parse_ports(["80,443", "8080"]) == [80, 443, 8080]
    for bad in (["0"], ["65536"], ["80,"], ["x"], ["٣"], [], [",".join(["80"] * 129)]):
        with pytest.raises(ValueError, match="port"):
            portforward.parse_ports(bad)
