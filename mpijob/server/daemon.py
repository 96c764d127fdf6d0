"""Running the server: in the foreground (`run`), as a detached background process (`start`),
and finding or stopping the one that serves a home (`status`, `stop`).

One server per home, enforced with an exclusive lock on the pidfile, so a stale pidfile left by a
killed server is simply overwritten. The state file is written once the server answers.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mpijob
from mpijob.store.home import Home

log = logging.getLogger("mpijob.server")

_children: dict[int, subprocess.Popen[bytes]] = {}


class ServerError(RuntimeError):
    """The server could not be started; the message carries the tail of its log."""


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    url: str
    kubeconfig: Path
    home: Path
    sandbox_mode: str
    version: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["kubeconfig"], d["home"] = str(self.kubeconfig), str(self.home)
        return d


# -- foreground ------------------------------------------------------------------------------------


def run(home: Home) -> None:
    """Serve until SIGTERM/SIGINT, then shut down gracefully (controllers stopped, store closed)."""
    import uvicorn

    from mpijob.server import auth, kubeconfig, tls
    from mpijob.server.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    home.ensure()
    lock = _lock_pidfile(home)
    try:
        files = tls.ensure(home)
        token = auth.ensure_admin_token(home)
        sock = kubeconfig.bind(kubeconfig.previous_port(home.kubeconfig))
        url = f"https://127.0.0.1:{sock.getsockname()[1]}"
        kubeconfig.write(home.kubeconfig, url, files.ca_pem(), token)
        app = create_app(home)
        config = uvicorn.Config(
            app, ssl_certfile=str(files.cert), ssl_keyfile=str(files.key), log_level="warning",
            access_log=False, timeout_graceful_shutdown=5, lifespan="on", timeout_keep_alive=30,
        )
        server = _server_class()(config)
        asyncio.run(_serve(server, sock, home, url))
    finally:
        home.state_file.unlink(missing_ok=True)
        home.pidfile.unlink(missing_ok=True)
        lock.close()


def _server_class() -> Any:
    """uvicorn.Server that ends open watch/log streams on a signal and closes connections that go
    idle during shutdown (a finished watch leaves a keep-alive connection the stock server waits on)."""
    import uvicorn

    class Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            cluster = getattr(self.config.app.state, "cluster", None)
            if cluster is not None:
                cluster.stopping.set()
            super().handle_exit(sig, frame)

        async def _wait_tasks_to_complete(self) -> None:
            while self.server_state.connections and not self.force_exit:
                for conn in list(self.server_state.connections):
                    cycle = getattr(conn, "cycle", None)
                    if cycle is None or cycle.response_complete:
                        conn.transport.abort()  # idle: a TLS close would wait for the client's reply
                    else:
                        conn.shutdown()
                await asyncio.sleep(0.1)
            await super()._wait_tasks_to_complete()

    return Server


async def _serve(server: Any, sock: Any, home: Home, url: str) -> None:
    # uvicorn re-raises the signal that stopped it under the previous handler once it is done; make
    # that handler a graceful one so `run`'s cleanup still happens instead of the default death.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, server.handle_exit)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        mode = server.config.app.state.cluster.sandbox_mode
        _write_json(home.state_file, {"pid": os.getpid(), "url": url, "sandbox_mode": mode,
                                      "version": mpijob.__version__, "kubeconfig": str(home.kubeconfig)})
        log.info("mpijob server ready at %s (home %s, sandbox %s)", url, home.root, mode)
    await task
    if not server.started:
        raise ServerError("the server did not start; see the log above")


def _lock_pidfile(home: Home) -> Any:
    f = open(home.pidfile, "a+")  # noqa: SIM115 — held open for the server's lifetime
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise ServerError(f"another mpijob server is already running for {home.root}") from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    home.state_file.unlink(missing_ok=True)
    return f


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


# -- background ------------------------------------------------------------------------------------


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
        time.sleep(0.05)
    _terminate(proc.pid, 5)
    raise ServerError(f"mpijob server did not become ready within {timeout:.0f}s:\n{_log_tail(home)}")


def _log_tail(home: Home, lines: int = 30) -> str:
    try:
        return "\n".join(home.server_log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def status(home: Home) -> ServerInfo | None:
    """The server serving `home`, if its process is alive and it answers `/readyz`."""
    try:
        state = json.loads(home.state_file.read_text())
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid) or not _ready(state["url"], home.root / "tls" / "ca.crt"):
        return None
    return ServerInfo(pid=pid, url=state["url"], kubeconfig=home.kubeconfig, home=home.root,
                      sandbox_mode=state.get("sandbox_mode", "unknown"), version=state.get("version", ""))


def _alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _children.pop(pid, None)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a reused pid belongs to some other program
        return b"mpijob" in Path(f"/proc/{pid}/cmdline").read_bytes()  # `-m mpijob.server` or `mpijob server run`
    except OSError:
        return True


def _ready(url: str, ca: Path) -> bool:
    try:
        ctx = ssl.create_default_context(cafile=str(ca))
        with urllib.request.urlopen(f"{url}/readyz", timeout=2, context=ctx) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except (OSError, ValueError, ssl.SSLError):
        return False


def stop(home: Home, timeout: float = 30) -> bool:
    """SIGTERM the server and wait; SIGKILL after `timeout`. False when none was running."""
    try:
        pid = int(home.pidfile.read_text().strip() or 0)
    except (OSError, ValueError):
        pid = 0
    if not pid or not _alive(pid):
        home.state_file.unlink(missing_ok=True)
        return False
    _terminate(pid, timeout)
    home.state_file.unlink(missing_ok=True)
    return True


def _terminate(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _reap(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while not _reap(pid):
        time.sleep(0.05)


def _reap(pid: int) -> bool:
    """True once `pid` is gone; waits on it when it is our own child (no zombie left)."""
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
    return False
