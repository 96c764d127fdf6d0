"""What every request handler shares: the store, the log store, the home and the stop signal."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from mpijob.store.home import Home
from mpijob.store.objects import Store


@dataclass
class Cluster:
    home: Home
    store: Store
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    sandbox_mode: str = "none"
    manager: Any = None
    _logs: Any = None

    @property
    def logs(self) -> Any:
        """The `LogStore`, imported on first use so the API serves without the runtime modules."""
        if self._logs is None:
            from mpijob.store.logs import LogStore

            self._logs = LogStore(self.home.logs)
        return self._logs
