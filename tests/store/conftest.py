"""Store tests that need a server use the API-only one of tests/server (`MPIJOB_NO_CONTROLLERS=1`), so
the session fixtures bound to it (`connect`, `kubectl`) are the same whichever folder runs first."""

from __future__ import annotations

from typing import Any

import pytest
from mpijob.store.server_process import ServerInfo


@pytest.fixture(scope="session")
def server(servers: Any) -> ServerInfo:
    return servers.start("api", controllers=False)
