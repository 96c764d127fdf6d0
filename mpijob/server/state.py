"""What every request handler shares: the store, the log store, the home and the stop signal."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mpijob.store.home import Home
from mpijob.store.objects import Store

if TYPE_CHECKING:  # both load on first use, so the API serves without the runtime modules
    from mpijob.controllers.manager import Manager
    from mpijob.controllers.metrics import Metrics
    from mpijob.store.logs import LogStore


@dataclass
class Cluster:
    home: Home
    store: Store
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    sandbox_mode: str = "none"  # the controllers' sandbox (Manager.sandbox_mode); "none" without them
    manager: Manager | None = None  # the controllers; None when the server runs without them
    metrics: Metrics | None = None  # the server's metrics registry (docs/metrics.md), made at start
    _logs: LogStore | None = None

    @property
    def logs(self) -> LogStore:
        """The `LogStore`, imported on first use so the API serves without the runtime modules."""
        if self._logs is None:
            from mpijob.store.logs import LogStore

            self._logs = LogStore(self.home.logs)
        return self._logs
