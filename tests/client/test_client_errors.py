"""Errors survive the trip: a server `Status` becomes the same `ApiError`; a dead server is typed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from mpijob.api import errors
from mpijob.client.api import Cluster
from mpijob.client.config import resolve
from mpijob.client.errors import ServerUnavailable, from_api_exception


def _exception(status: int, body: str, reason: str = "Unprocessable Entity") -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = body
    return exc


def test_status_with_causes_round_trips() -> None:
    original = errors.invalid(
        "TrainJob", "pi", [errors.Cause("spec.trainer.numNodes", "Invalid value: 0: must be at least 1")],
        "trainer.kubeflow.org",
    )
    back = from_api_exception(_exception(422, json.dumps(original.to_status())))
    assert back == original


def test_not_found_status() -> None:
    back = from_api_exception(_exception(404, json.dumps(errors.not_found("trainjobs", "x").to_status()), "Not Found"))
    assert (back.code, back.reason, back.message) == (404, "NotFound", 'trainjobs "x" not found')


def test_non_status_body_keeps_code_and_text() -> None:
    back = from_api_exception(_exception(502, "bad gateway from a proxy", "Bad Gateway"))
    assert (back.code, back.message) == (502, "bad gateway from a proxy")
    assert from_api_exception(_exception(503, "", "Service Unavailable")).code == 503


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
    with Cluster(resolve(kc)) as cluster, pytest.raises(ServerUnavailable) as e:
        cluster.list_trainjobs()
    assert f"127.0.0.1:{port}" in str(e.value) and "connection refused" in str(e.value)
