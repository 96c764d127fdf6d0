"""Starting, finding and stopping the local cluster's server for a home, from outside it.

The server itself (`mpijob.server.daemon.run`) is the process this module starts; nothing here imports
it, so the CLI and the SDK can bring a local cluster up without loading the server's code. One
server per home: the server holds an exclusive lock on the pidfile and writes the state file once it
answers, so a stale pidfile left by a killed server is simply overwritten.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpijob.api import sandbox_mode
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.store.home import Home

POLL_S = 0.05
_children: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started, waited on when they end


class ServerError(RuntimeError):
    """The server could not be started; the message carries the tail of its log."""


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    url: str
    kubeconfig: Path
    home: Path
    sandbox_mode: SandboxMode | None  # None: a server that runs no controllers (its state file says "none")
    version: str
    audit_log: Path | None = None  # the audit.k8s.io/v1 Event log (Home.audit_log), from the state file
    why: str = ""  # why this sandbox mode and not a stronger one, with what would enable it
    guarantees: dict[str, bool] = field(default_factory=dict)  # `sandbox_mode.GUARANTEES` key → holds here

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "pid": self.pid, "kubeconfig": str(self.kubeconfig), "home": str(self.home),
                "sandbox_mode": self.sandbox_mode or sandbox_mode.NONE, "why": self.why,
                "guarantees": self.guarantees, "version": self.version,
                "auditLog": str(self.audit_log or Home(self.home).audit_log)}


def start(home: Home, timeout: float = 30, env: dict[str, str] | None = None) -> ServerInfo:
    """Start a detached server for `home` (or return the running one) once it answers `/readyz`.

    `env` adds variables for the server process (e.g. `MPIJOB_NO_CONTROLLERS=1` in tests)."""
    home.ensure()
    running = status(home)
    if running is not None:
        return running
    env = dict(os.environ, **(env or {}), MPIJOB_HOME=str(home.root))
    with open(home.server_log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mpijob.server"], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            env=env, start_new_session=True, close_fds=True,
        )
    _children[proc.pid] = proc
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _children.pop(proc.pid, None)
            if (info := status(home)) is not None:  # lost a race with another starter
                return info
            raise ServerError(f"mpijob server exited with code {proc.returncode}:\n{_log_tail(home)}")
        info = status(home)
        if info is not None and info.pid == proc.pid:
            return info
        time.sleep(POLL_S)
    _terminate(proc.pid, 5)
    raise ServerError(f"mpijob server did not become ready within {timeout:.0f}s:\n{_log_tail(home)}")


def status(home: Home) -> ServerInfo | None:
    """The server serving `home`, if its process is alive and it answers `/readyz`."""
    info = running(home)
    if info is None or not _ready(info.url, home.root / "tls" / "ca.crt"):
        return None
    return info


def running(home: Home) -> ServerInfo | None:
    """The server serving `home` as its state file says, if its process is alive: no request made.

    The server writes the state file once it answers and removes it when it stops, so this is what a
    client needs before its first request (which says itself when a live server does not answer)."""
    try:
        state = json.loads(home.state_file.read_text())
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if _gone(pid) or _is_other_program(pid):
        return None
    return ServerInfo(pid=pid, url=state["url"], kubeconfig=home.kubeconfig, home=home.root,
                      sandbox_mode=SandboxMode.parse(state.get("sandbox_mode")), version=state.get("version", ""),
                      audit_log=Path(state.get("auditLog") or home.audit_log), why=state.get("why", ""),
                      guarantees=state.get("guarantees") or {})


DRAIN_SIGNAL = signal.SIGUSR1  # stop, but first stop the running jobs (`Manager.stop(drain=True)`)


def stop(home: Home, timeout: float = 30, drain: bool = False) -> bool:
    """SIGTERM the server and wait; SIGKILL after `timeout`. False when none was running. Running jobs
    run on, for the next server to re-adopt, unless `drain`: then the server stops them first."""
    try:
        pid = int(home.pidfile.read_text().strip() or 0)
    except (OSError, ValueError):
        pid = 0
    if not pid or _gone(pid) or _is_other_program(pid):
        home.state_file.unlink(missing_ok=True)
        return False
    _terminate(pid, timeout, DRAIN_SIGNAL if drain else signal.SIGTERM)
    home.state_file.unlink(missing_ok=True)
    return True


def _log_tail(home: Home, lines: int = 30) -> str:
    try:
        return "\n".join(home.server_log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _gone(pid: int) -> bool:
    """True once `pid` has ended; waits on it when it is our own child, so no zombie is left."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return False
        _children.pop(pid, None)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _is_other_program(pid: int) -> bool:
    """A reused pid: the process is not a server (`-m mpijob.server` or `mpijob server run`)."""
    try:
        return b"mpijob" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _ready(url: str, ca: Path) -> bool:
    try:
        ctx = ssl.create_default_context(cafile=str(ca))
        with urllib.request.urlopen(f"{url}/readyz", timeout=2, context=ctx) as resp:  # noqa: S310 — the server's own https URL
            return bool(resp.status == 200)
    except (OSError, ValueError, ssl.SSLError):
        return False


def _terminate(pid: int, timeout: float, first: int = signal.SIGTERM) -> None:
    for sig, wait in ((first, timeout), (signal.SIGKILL, None)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = None if wait is None else time.monotonic() + wait
        while deadline is None or time.monotonic() < deadline:
            if _gone(pid):
                return
            time.sleep(POLL_S)
