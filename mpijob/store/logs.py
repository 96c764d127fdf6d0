"""Container logs on disk, one file per container, every line stamped when it was read.

Lines are stored as `<RFC 3339 nanosecond timestamp> <rank> <text>\n` (the CRI log shape, with the MPI
rank that wrote the line, or `-`, where CRI keeps the stream), so `timestamps=true`, `sinceSeconds`,
`tailLines` and the ranks (`mpijob.api.trainer.mpi_output`) are answered from the file alone and the logs
outlive the job and the server.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

from mpijob.api.trainer.mpi_output import LauncherOutput
from mpijob.store.logfile import UNRANKED, LogWriter

FOLLOW_POLL = 0.02  # seconds between looks at a followed file (a read that finds nothing costs microseconds)
DONE_POLL = 0.25  # seconds between asking whether a followed container has ended (a store read, dearer than a stat)


def _parse_stamp(line: bytes) -> float:
    head = line.split(b" ", 1)[0].decode(errors="replace")
    try:
        whole, frac = head.rstrip("Z").split(".")
        base = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
        return base + int(frac) / 1e9
    except ValueError:
        return 0.0


def _render(line: bytes, timestamps: bool, ranks: bool) -> bytes:
    """A stored line as `pods/log` shows it: the text, after the stamp and the rank when asked for."""
    stamp, _, rest = line.partition(b" ")
    rank, sep, text = rest.partition(b" ")
    if not sep or not (rank == UNRANKED[:-1] or rank.isdigit()):  # stored before ranks were kept
        rank, text = UNRANKED[:-1], rest
    return (stamp + b" " if timestamps else b"") + (rank + b" " if ranks else b"") + text


def _lines(path: Path, since_seconds: int | None) -> tuple[list[bytes], int]:
    """The complete lines of a log file (newer than `since_seconds`), and the offset just past the last one."""
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        return [], 0
    if lines and not lines[-1].endswith(b"\n"):
        lines = lines[:-1]  # a line still being written
    end = sum(len(ln) for ln in lines)
    if since_seconds is not None:
        cutoff = time.time() - since_seconds
        lines = [ln for ln in lines if _parse_stamp(ln) >= cutoff]
    return lines, end


def _render_lines(lines: list[bytes], tail_lines: int | None, timestamps: bool, ranks: bool) -> bytes:
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    return b"".join(_render(ln, timestamps, ranks) for ln in lines)


class Tail:
    """One container log, followed: `first` is what it holds, then each `read()` the whole lines appended
    since. `skip_lines` leaves out the first lines of `first`, which a client resuming a stream already has.
    A `read()` that finds nothing new costs one stat: a request that follows a hundred pods looks at
    every file each FOLLOW_POLL."""

    def __init__(self, path: Path, *, tail_lines: int | None = None, since_seconds: int | None = None,
                 timestamps: bool = False, ranks: bool = False, skip_lines: int = 0) -> None:
        self.path, self.timestamps, self.ranks = path, timestamps, ranks
        lines, self.offset = _lines(path, since_seconds)  # one read: the follow continues where it ends
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines > 0 else []
        self.first = _render_lines(lines[skip_lines:], None, timestamps, ranks)  # after the tail, as sent
        self._pending = b""

    def read(self) -> bytes:
        """The whole lines written since the last read, as `pods/log` shows them; b"" when there are none."""
        try:
            if os.stat(self.path).st_size <= self.offset:
                return b""
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return b""
        self.offset += len(chunk)
        complete, _, self._pending = (self._pending + chunk).rpartition(b"\n")
        if not complete:
            return b""
        return b"".join(_render(ln, self.timestamps, self.ranks) for ln in (complete + b"\n").splitlines(True))


class LogStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, namespace: str, pod: str, container: str) -> Path:
        return self.root / namespace / pod / f"{container}.log"

    def writer(self, namespace: str, pod: str, container: str, mpi: LauncherOutput | None = None) -> LogWriter:
        """A writer for one output stream; `mpi` reads a launcher's Open MPI tags into ranks."""
        path = self.path(namespace, pod, container)
        path.parent.mkdir(parents=True, exist_ok=True)
        return LogWriter(path, mpi)

    def remove(self, namespace: str, pod: str) -> None:
        """Drop a deleted pod's logs."""
        folder = self.root / namespace / pod
        if folder.is_dir():
            for f in folder.iterdir():
                f.unlink(missing_ok=True)
            folder.rmdir()

    def first_rank_output(self, namespace: str, pod: str, container: str) -> float | None:
        """When a rank first printed a line in this container's log (a line stored with its rank); None
        when none has. Reads only as far as that line."""
        try:
            with self.path(namespace, pod, container).open("rb") as f:
                for line in f:
                    rank = line.split(b" ", 2)[1:2]
                    if rank and rank[0].isdigit():
                        return _parse_stamp(line)
        except FileNotFoundError:
            pass
        return None

    def read(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        timestamps: bool = False,
        ranks: bool = False,
        limit_bytes: int | None = None,
    ) -> bytes:
        lines, _ = _lines(self.path(namespace, pod, container), since_seconds)
        out = _render_lines(lines, tail_lines, timestamps, ranks)
        return out[:limit_bytes] if limit_bytes is not None else out

    def tail(self, namespace: str, pod: str, container: str, *, tail_lines: int | None = None,
             since_seconds: int | None = None, timestamps: bool = False, ranks: bool = False,
             skip_lines: int = 0) -> Tail:
        """A `Tail` of one container's log."""
        return Tail(self.path(namespace, pod, container), tail_lines=tail_lines, since_seconds=since_seconds,
                    timestamps=timestamps, ranks=ranks, skip_lines=skip_lines)

    async def follow(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        timestamps: bool = False,
        ranks: bool = False,
        done: Callable[[], bool],
    ) -> AsyncIterator[bytes]:
        """Yield what is there, then new lines as they arrive, until `done()` and drained. `done` is asked
        every DONE_POLL, before the read that may end the stream: what was written before it said so is sent."""
        tail = self.tail(namespace, pod, container, tail_lines=tail_lines, since_seconds=since_seconds,
                         timestamps=timestamps, ranks=ranks)
        if tail.first:
            yield tail.first
        loop = asyncio.get_running_loop()
        finished, asked = False, -DONE_POLL
        while True:
            if loop.time() - asked >= DONE_POLL:
                finished, asked = done(), loop.time()
            chunk = tail.read()
            if chunk:
                yield chunk
            elif finished:
                return
            await asyncio.sleep(FOLLOW_POLL)
