"""Fixtures for end-to-end tests: an HTTPS client to the session's shared server (`api`), and its home.

Tests that must kill or restart a server start their own with `new_server` (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mpijob.server.daemon import ServerInfo


@pytest.fixture(scope="session")
def api(connect: Callable[..., httpx.Client]) -> Iterator[httpx.Client]:
    """One client to the shared server (admin token), for the whole session."""
    with connect(timeout=60) as c:
        yield c


@pytest.fixture(scope="session")
def home(server: ServerInfo) -> Path:
    """`$MPIJOB_HOME` of the shared server."""
    return server.home
