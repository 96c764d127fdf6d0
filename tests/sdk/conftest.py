"""Fixtures for SDK tests: a sync `Client` on the session's shared server (controllers on)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mpijob import Client
from mpijob.store.server_process import ServerInfo


@pytest.fixture()
def client(server: ServerInfo) -> Iterator[Client]:
    with Client(kubeconfig=str(server.kubeconfig)) as c:
        yield c
