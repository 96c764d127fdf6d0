"""The launcher's side of rank output capture (`rank_agent.py`): the files the ranks' agents append to,
read into the launcher's log with each line's rank beside it, as `kubectl logs` and `mpijob logs --rank`
read it. The launcher's supervisor (`shim.py`) polls them while its pod runs, before it stores each chunk
mpirun wrote (so a rank's last lines come before mpirun's report of its exit), and once more at the end."""

from __future__ import annotations

import os
from pathlib import Path

from mpijob.controllers.kubelet.rank_agent import FILE
from mpijob.store.logfile import LogWriter

READ_SIZE = 1 << 20


class RankFiles:
    """Every rank file of one directory, each read from where the last read stopped."""

    def __init__(self, directory: Path, log: Path) -> None:
        self.directory, self.log = directory, log
        self._open: dict[str, tuple[int, LogWriter]] = {}  # file name → (its fd, the writer of its rank's lines)

    def poll(self) -> None:
        """Store what the ranks have written since the last poll."""
        try:
            entries = os.listdir(self.directory)
        except OSError:
            return
        for name in sorted(entries):
            if name not in self._open and (m := FILE.fullmatch(name)):
                try:
                    fd = os.open(self.directory / name, os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
                self._open[name] = fd, LogWriter(self.log, rank=int(m["rank"]))
        for fd, writer in self._open.values():
            while data := os.read(fd, READ_SIZE):
                writer.write(data)

    def close(self) -> None:
        """Store the rest, each rank's last line without a newline included."""
        self.poll()
        for fd, writer in self._open.values():
            os.close(fd)
            writer.close()
        self._open.clear()
