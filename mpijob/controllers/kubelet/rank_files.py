"""The launcher's side of rank output capture (`rank_agent.py`): the files the ranks' agents append to,
read into the launcher's log with each line's rank beside it, as `kubectl logs` and `mpijob logs --rank`
read it. The launcher's supervisor (`shim.py`) polls them while its pod runs, before it stores each chunk
mpirun wrote (so a rank's last lines come before mpirun's report of its exit), and once more at the end.
What one poll finds is stored in the order the agents read it, across ranks, each line stamped with that
time: rank 0's result after the other ranks' lines that came before it."""

from __future__ import annotations

import os
from pathlib import Path

from mpijob.controllers.kubelet.rank_agent import FILE, records
from mpijob.store.logfile import LogWriter

READ_SIZE = 1 << 20


class RankFiles:
    """Every rank file of one directory, each read from where the last read stopped."""

    def __init__(self, directory: Path, log: Path) -> None:
        self.directory, self.log = directory, log
        self._open: dict[str, tuple[int, LogWriter]] = {}  # file name → (its fd, the writer of its rank's lines)
        self._rest: dict[str, bytes] = {}  # file name → the start of a record still being written

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
        found: list[tuple[int, int, LogWriter, bytes]] = []  # (when read, order, writer, bytes)
        for name, (fd, writer) in self._open.items():
            data = self._rest.pop(name, b"")
            while chunk := os.read(fd, READ_SIZE):
                data += chunk
            complete, self._rest[name] = records(data)
            found += [(ns, len(found) + i, writer, part) for i, (ns, part) in enumerate(complete)]
        for ns, _, writer, part in sorted(found, key=lambda r: r[:2]):
            writer.write(part, at_ns=ns)

    def close(self) -> None:
        """Store the rest, each rank's last line without a newline included."""
        self.poll()
        for fd, writer in self._open.values():
            os.close(fd)
            writer.close()
        self._open.clear()
