"""Killing a child started with asyncio without taking it from asyncio's child watcher.

`asyncio.subprocess.Process.kill()` goes through `Popen.send_signal`, which polls first (`waitpid`, WNOHANG):
a child that has just exited is reaped right there, and the watcher's own `waitpid` then finds nothing, logs
"Unknown child process pid", and reports exit code 255. A signal sent by pid cannot reach another process
instead: until the watcher reaps the child, its pid stays its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


def kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL `proc` unless it is known to have ended; its exit is still the watcher's to collect."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
