"""The typed Python SDK: `Client` (sync), `AsyncClient` (asyncio), the `TrainJob` builder and the
exceptions whose categories are the CLI's exit codes. Import from `mpijob` directly:
`from mpijob import Client, AsyncClient, TrainJob`.
"""

from __future__ import annotations

from mpijob.sdk import errors
from mpijob.sdk.aio import AsyncClient
from mpijob.sdk.client import Client
from mpijob.sdk.errors import *  # noqa: F403 — the exception classes, `errors.__all__`
from mpijob.sdk.trainjob import TrainJob

__all__ = ["AsyncClient", "Client", "TrainJob"]
__all__ += errors.__all__
