"""Server tests run without the controllers (`MPIJOB_NO_CONTROLLERS=1`), so they exercise the API alone."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from mpijob.store.server_process import ServerInfo


@pytest.fixture(scope="session")
def server(servers: Any) -> ServerInfo:
    return servers.start("api", controllers=False)


USERS = "/apis/mpijob.io/v1alpha1/users"


@pytest.fixture()
def new_user(http: httpx.Client, connect: Callable[..., httpx.Client]) -> Iterator[Callable[..., httpx.Client]]:
    """`new_user(groups=[...])`: a fresh user and a client with its token (`.user` is its name)."""
    made: list[httpx.Client] = []

    def make(groups: list[str] | None = None) -> httpx.Client:
        name = f"u-{uuid.uuid4().hex[:6]}"
        resp = http.post(USERS, json={"metadata": {"name": name}, "spec": {"groups": groups or []}})
        assert resp.status_code == 201, resp.text
        client = connect(token=resp.json()["status"]["token"])
        client.user = name  # type: ignore[attr-defined]
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()
