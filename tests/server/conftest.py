"""Server tests run without the controllers (`MPIJOB_NO_CONTROLLERS=1`), so they exercise the API alone."""

from __future__ import annotations

from typing import Any

import pytest

from mpijob.store.supervisor import ServerInfo


@pytest.fixture(scope="session")
def server(servers: Any) -> ServerInfo:
    return servers.start("api", controllers=False)
