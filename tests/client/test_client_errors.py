"""Errors survive the trip: a server `Status` becomes the same `ApiError`; a dead server is typed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

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
