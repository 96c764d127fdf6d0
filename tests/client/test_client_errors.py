"""Errors survive the trip: a server `Status` becomes the same `ApiError`; a dead server is typed."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.api.core import errors
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.errors import Unreachable, decode_status


def test_status_with_causes_round_trips() -> None:
    original = errors.invalid(
        "TrainJob", "pi", [errors.Cause("spec.trainer.numNodes", "Invalid value: 0: must be at least 1")],
        "trainer.kubeflow.org",
    )
    back = decode_status(422, "Unprocessable Entity", json.dumps(original.to_status()).encode())
    assert back == original


def test_not_found_status() -> None:
    back = decode_status(404, "Not Found", json.dumps(errors.not_found("trainjobs", "x").to_status()))
    assert (back.code, back.reason, back.message) == (404, "NotFound", 'trainjobs "x" not found')


def test_non_status_body_keeps_code_and_text() -> None:
    back = decode_status(502, "Bad Gateway", b"bad gateway from a proxy")
    assert (back.code, back.reason, back.message) == (502, "Bad Gateway", "bad gateway from a proxy")
    assert decode_status(503, "Service Unavailable", b"").code == 503


def test_refused_connection_is_server_unavailable(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kc"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
    }))
    with Connection(choose_cluster(kc)) as cluster, pytest.raises(Unreachable) as e:
        cluster.list_trainjobs()
    assert f"127.0.0.1:{port}" in str(e.value) and "connection refused" in str(e.value)


class _Dropping:
    """A TCP relay to the real server that cuts the first `drop` connections at once (a reset, as a loaded
    server's TLS handshake cut short), then relays: what a transient failure looks like to a client."""

    def __init__(self, target: tuple[str, int], drop: int) -> None:
        self.target, self.drop, self.seen = target, drop, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.seen += 1
            if self.seen <= self.drop:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
                continue
            up = socket.create_connection(self.target)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self.sock.close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := a.recv(65536):
            b.sendall(data)
    with contextlib.suppress(OSError):
        b.shutdown(socket.SHUT_WR)


def _through(kubeconfig: Path, port: int, tmp_path: Path) -> Path:
    config = yaml.safe_load(kubeconfig.read_text())
    for c in config["clusters"]:
        c["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = tmp_path / "through"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_read_survives_transient_connection_failures_and_a_write_is_not_repeated(server: Any,
                                                                                      tmp_path: Path) -> None:
    """Two connections cut before any answer: a list (a GET) is sent again and answers; a create is not
    repeated (it may have happened), and says why it failed."""
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    relay = _Dropping((host, int(port)), drop=2)
    try:
        through = choose_cluster(_through(server.kubeconfig, relay.port, tmp_path))
        with Connection(through) as c:
            assert isinstance(c.list_trainjobs(), list)
            assert relay.seen == 3
        relay.drop, relay.seen = 1, 0
        with Connection(through) as c, pytest.raises(Unreachable):  # a new connection: the first is cut
            c.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-made"}})
        assert relay.seen == 1
    finally:
        relay.close()
