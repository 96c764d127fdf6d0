"""How a container log file is written: stamped lines, each with the MPI rank that wrote it or `-`
(`logs.py` reads them). Kept apart from the reader, which needs asyncio, so a pod's supervisor
(`controllers/kubelet/shim.py`) writes its pod's log with nothing else imported."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mpijob.api.trainer.mpi_output import NO_RANK, LauncherOutput

UNRANKED = NO_RANK.encode() + b" "


def stamp(t: float | None = None) -> bytes:
    """A Kubernetes log timestamp (RFC 3339, nanoseconds, UTC)."""
    t = time.time() if t is None else t
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t)))
    return f"{whole}.{int((t % 1) * 1e9):09d}Z".encode()


def stamp_ns(ns: int) -> bytes:
    """The same for a time in nanoseconds since the epoch, to the nanosecond."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9))
    return f"{whole}.{ns % 10**9:09d}Z".encode()


class LogWriter:
    """Appends stamped lines for one output stream of a container; safe to reopen after a server
    restart. It writes whole lines only, with O_APPEND, so the writers of a container's stdout and
    stderr never split each other's lines. With `mpi`, each line's rank is read from Open MPI's tags; with
    `rank`, every line is that rank's (one rank's own stream, `controllers/kubelet/rank_files.py`)."""

    def __init__(self, path: Path, mpi: LauncherOutput | None = None, rank: int | None = None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._partial: list[bytes] = []  # the unfinished line's reads, joined once its newline comes
        self._mpi = mpi
        self._field = UNRANKED if rank is None else b"%d " % rank

    def write(self, data: bytes, at_ns: int | None = None) -> None:
        """Store `data`'s complete lines, stamped `at_ns` (nanoseconds since the epoch; now by default)."""
        if b"\n" not in data:  # a long line arriving read by read: kept, not copied again each read
            self._partial.append(data)
            return
        *lines, rest = b"".join([*self._partial, data]).split(b"\n")
        self._partial = [rest] if rest else []
        self._append(lines, at_ns=at_ns)

    def close(self) -> None:
        partial = b"".join(self._partial)
        self._append([partial] if partial else [], final=True)
        self._partial = []
        os.close(self._fd)

    def _append(self, lines: list[bytes], final: bool = False, at_ns: int | None = None) -> None:
        if self._mpi is None:
            out = [self._field + ln for ln in lines]
        else:
            out = [r for ln in lines for r in self._mpi.feed(ln)] + (self._mpi.flush() if final else [])
        if out:
            now = stamp() if at_ns is None else stamp_ns(at_ns)
            os.write(self._fd, b"".join(now + b" " + ln + b"\n" for ln in out))
