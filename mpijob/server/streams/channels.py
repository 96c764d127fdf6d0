"""Kubernetes' channel protocol over a WebSocket: what `kubectl exec`, `attach` and `cp` speak.

Each binary message starts with a byte naming its channel: 0 stdin (client to server), 1 stdout, 2 stderr,
3 the error channel (the server's one last word: a `Status`, Success or the command's exit code as
`NonZeroExitCode`), 4 terminal resize (`{"Width": w, "Height": h}`). `v5.channel.k8s.io` (kubectl ≥ 1.30) adds
a close message, `255 <channel>`, with which the client ends its stdin; `v4.channel.k8s.io` (the `kubernetes`
Python client) has none, and its stdin ends with the connection. The server opens by sending an empty message
on the lowest channel it writes, as the kubelet does, then the streams, then the Status, then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import struct
import termios
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpijob.server.streams.messages import Messages

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
SUBPROTOCOLS = (V5, V4)  # best first
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
CHUNK = 32 * 1024  # bytes read from the command at a time, and so the largest message sent
# After the command exits, what it left running may still hold its output open (`sleep 100 &`): the
# session ends once output has been quiet this long, leaving such a process running, as the kubelet does
DRAIN_QUIET = 1.0
HANGUP_GRACE = 1.0  # seconds between SIGHUP and SIGKILL for a session whose client went away


@dataclass(frozen=True)
class Options:
    """Which streams the client asked for (the request's `stdin`, `stdout`, `stderr` and `tty`)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @property
    def first(self) -> int:
        """The channel the opening empty message goes on."""
        return STDOUT if self.stdout else STDERR if self.stderr and not self.tty else ERROR


def negotiate(offered: Sequence[str]) -> str | None:
    """The best of our protocols the client offered (None: none)."""
    return next((p for p in SUBPROTOCOLS if p in offered), None)


def status(code: int | None, command: Sequence[str]) -> dict[str, Any]:
    """The error channel's Status for an exit `code` (None: killed with the session), worded as the kubelet's."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    shown = code if code is not None and code >= 0 else 128 - (code or -signal.SIGKILL)
    return {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command {list(command)}, "
                       f"exit code {shown}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(shown)}]}}


def json_status(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def failure(message: str) -> dict[str, Any]:
    """The error channel's Status for a command that could not run at all (kubectl prints the message)."""
    return {"metadata": {}, "status": "Failure", "reason": "InternalError", "message": message}


async def serve(messages: Messages, protocol: str, argv: Sequence[str], command: Sequence[str], options: Options,
                end_with_client_only: bool = False) -> int | None:
    """Run `argv` with the client's streams; return its exit code (None: the client went first). The command
    leads a session of its own, started by `argv`'s first process or a child of it (`entry.PodEntry.argv`:
    inside the pod's PID namespace); `end_with_client_only`: end what it left running with it too."""
    master = slave = -1
    if options.tty:
        master, slave = os.openpty()
        os.set_blocking(master, False)
        streams: dict[str, Any] = {"stdin": slave, "stdout": slave, "stderr": slave}
    else:
        pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
        streams = {"stdin": pipe if options.stdin else null, "stdout": pipe if options.stdout else null,
                   "stderr": pipe if options.stderr else null}
    try:
        proc = await asyncio.create_subprocess_exec(*argv, **streams)
    finally:
        if slave >= 0:
            os.close(slave)
    await messages.send(bytes([options.first]))
    session = _Session(messages, proc, master, protocol)
    output = [asyncio.ensure_future(session.pump(r, ch)) for r, ch in session.readers(options)]
    inbound = asyncio.ensure_future(session.inbound())
    exited = asyncio.ensure_future(_exit(proc))
    try:
        await asyncio.wait([exited, inbound], return_when=asyncio.FIRST_COMPLETED)
        if not exited.done():  # the client went: hang the session up, as a closed terminal would
            await _end_sessions(_session_ids(proc.pid))
            await proc.wait()
            return None
        await session.drained(output)
        code = await _returncode(proc)
        with contextlib.suppress(ConnectionError):  # `kubectl cp` leaves once the archive has ended
            await messages.send(bytes([ERROR]) + json_status(status(code, command)))
        return code
    finally:
        for task in (*output, inbound, exited):
            task.cancel()
        await asyncio.gather(*output, inbound, exited, return_exceptions=True)
        if end_with_client_only or proc.returncode is None:
            await _end_sessions(_session_ids(proc.pid))
        if proc.returncode is None:  # reaped by asyncio's watcher first, not by the close below, which would
            await _returncode(proc)  # leave the watcher a pid it can no longer wait for
        # Our ends of its pipes close now: a process it left running that writes to them then gets EPIPE, as
        # after a kubelet's exec, rather than blocking once they fill (asyncio offers no public close for them)
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        if master >= 0:
            os.close(master)


class _Session:
    def __init__(self, messages: Messages, proc: asyncio.subprocess.Process, master: int, protocol: str) -> None:
        self.messages, self.proc, self.master, self.protocol = messages, proc, master, protocol
        self.last_output = asyncio.get_running_loop().time()

    def readers(self, options: Options) -> list[tuple[Any, int]]:
        if self.master >= 0:
            return [(self.master, STDOUT)]
        return [(r, ch) for r, ch in ((self.proc.stdout, STDOUT), (self.proc.stderr, STDERR)) if r is not None]

    async def pump(self, reader: Any, channel: int) -> None:
        while chunk := await (self._read_pty() if isinstance(reader, int) else reader.read(CHUNK)):
            self.last_output = asyncio.get_running_loop().time()
            await self.messages.send(bytes([channel]) + chunk)

    async def _read_pty(self) -> bytes:
        """The next output of the terminal; b"" once every process holding it has gone (EIO)."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(self.master, _settle, ready)
        try:
            await ready
        finally:
            loop.remove_reader(self.master)
        try:
            return os.read(self.master, CHUNK)
        except OSError:
            return b""

    async def drained(self, output: Sequence[asyncio.Future[None]]) -> None:
        """Output to its end, or until it has been quiet DRAIN_QUIET since the command exited."""
        loop = asyncio.get_running_loop()
        while not all(t.done() for t in output):
            quiet = loop.time() - self.last_output
            if quiet >= DRAIN_QUIET:
                return
            await asyncio.wait(output, timeout=DRAIN_QUIET - quiet)

    async def inbound(self) -> None:
        """The client's stdin, resizes and closes, until it goes."""
        stdin = self.proc.stdin
        while (message := await self.messages.receive()) is not None:
            if not message:
                continue
            channel, data = message[0], message[1:]
            if channel == STDIN and data:
                if self.master >= 0:
                    await _write_all(self.master, data)
                elif stdin is not None and not stdin.is_closing():
                    with contextlib.suppress(ConnectionError):
                        stdin.write(data)
                        await stdin.drain()
            elif channel == RESIZE and self.master >= 0:
                self._resize(data)
            elif channel == CLOSE and data[:1] == bytes([STDIN]) and self.protocol == V5:
                if self.master >= 0:
                    await _write_all(self.master, b"\x04")  # a terminal's end of input
                elif stdin is not None:
                    stdin.close()

    def _resize(self, data: bytes) -> None:
        try:
            size = json.loads(data)
            rows, cols = int(size.get("Height", 0)), int(size.get("Width", 0))
        except (ValueError, TypeError, AttributeError):
            return
        if 0 < rows < 65536 and 0 < cols < 65536:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


async def _returncode(proc: asyncio.subprocess.Process) -> int:
    """The exit code of a command that has exited, once the child watcher has reaped it (at once, mostly)."""
    for _ in range(500):  # 5 s
        if proc.returncode is not None:
            return proc.returncode
        await asyncio.sleep(0.01)
    return -signal.SIGKILL  # not reaped: reported as killed


async def _exit(proc: asyncio.subprocess.Process) -> None:
    """The command's exit. Not `proc.wait()`, which also waits for its output to close: a process it left
    running (`sleep 100 &`) may hold that open for as long as it runs."""
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(proc.pid)
    try:
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(pidfd, _settle, ready)
        try:
            await ready
        finally:
            loop.remove_reader(pidfd)
    finally:
        os.close(pidfd)


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _write_all(fd: int, data: bytes) -> None:
    """Write to the terminal without blocking the loop (its input buffer may be full)."""
    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            await asyncio.sleep(0.01)
        except OSError:
            return


def _session_ids(pid: int) -> set[int]:
    """The sessions the command may lead: its own first process's, or that process's child's (`nsenter`
    forks into the pod's PID namespace)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return {pid, *map(int, children)}


async def _end_sessions(sids: set[int]) -> None:
    """SIGHUP, then SIGKILL, every process of the sessions `sids` (the command and what it started)."""
    for sig in (signal.SIGHUP, signal.SIGKILL):
        members = [pid for sid in sids for pid in session_members(sid)]
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = asyncio.get_running_loop().time() + HANGUP_GRACE
        while members and sig == signal.SIGHUP and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            members = [pid for sid in sids for pid in session_members(sid)]
        if not members:
            return


def session_members(sid: int) -> list[int]:
    """The processes whose session is `sid` (read from /proc; field 6 of `stat`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            found.append(int(entry.name))
    return found
