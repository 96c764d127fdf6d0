"""The typed Python SDK: `Client` (sync), `AsyncClient` (asyncio), the `TrainJob` builder, what they
answer about a job's progress and its wait (`Progress`, `Waiting`), and the exceptions whose categories
are the CLI's exit codes. Import from `mpijob` directly: `from mpijob import Client, AsyncClient, TrainJob`.
"""

from __future__ import annotations

from mpijob.api.trainer.progress import Progress
from mpijob.api.trainer.waiting import Waiting
from mpijob.sdk import errors
from mpijob.sdk.aio import AsyncClient
from mpijob.sdk.client import Client
from mpijob.sdk.errors import *  # noqa: F403 — the exception classes, `errors.__all__`
from mpijob.sdk.trainjob import TrainJob

__all__ = ["AsyncClient", "Client", "Progress", "TrainJob", "Waiting"]
__all__ += errors.__all__
