"""The typed Python SDK: `Client` (sync), `AsyncClient` (asyncio), the `TrainJob` builder and the
exceptions whose categories are the CLI's exit codes. Import from `mpijob` directly:
`from mpijob import Client, AsyncClient, TrainJob`.
"""

from __future__ import annotations

from mpijob.sdk.aio import AsyncClient
from mpijob.sdk.client import Client
from mpijob.sdk.errors import (
    Forbidden,
    InvalidInput,
    JobFailed,
    MpijobError,
    NotFound,
    QuotaExceeded,
    ServerUnavailable,
    Timeout,
)
from mpijob.sdk.trainjob import TrainJob

__all__ = [
    "AsyncClient",
    "Client",
    "Forbidden",
    "InvalidInput",
    "JobFailed",
    "MpijobError",
    "NotFound",
    "QuotaExceeded",
    "ServerUnavailable",
    "Timeout",
    "TrainJob",
]
