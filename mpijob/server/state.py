"""What every request handler shares: the store, the log store, the home, the stop signal and the
controllers' code (`ports.py`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mpijob.api.sandbox_mode import SandboxMode
from mpijob.server.ports import Controllers, connect
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
    controllers: Controllers = field(default_factory=connect)  # what the server calls of the controllers' code
    sandbox_mode: SandboxMode | None = None  # the controllers' sandbox (Manager.sandbox_mode); None without them
    sandbox: dict[str, Any] = field(default_factory=dict)  # why that mode, what holds in it (Manager.sandbox)
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
