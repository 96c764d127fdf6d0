"""Running the server in the foreground until a signal: the process `store.server_process.start` launches.

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
from pathlib import Path
from typing import Any

from mpijob._version import __version__
from mpijob.api import sandbox_mode
from mpijob.store.home import Home
from mpijob.store.server_process import ServerError

log = logging.getLogger("mpijob.server")


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
            # kubectl exec and port-forward's WebSockets (routes/connect.py); no client of them compresses
            ws="wsproto", ws_per_message_deflate=False,
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

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            cluster = getattr(self.config.app.state, "cluster", None)  # type: ignore[union-attr]  # app: our FastAPI app
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
        cluster = server.config.app.state.cluster
        mode = cluster.sandbox_mode or sandbox_mode.NONE
        _write_json(home.state_file, {"pid": os.getpid(), "url": url, "sandbox_mode": mode, **cluster.sandbox,
                                      "version": __version__, "kubeconfig": str(home.kubeconfig),
                                      "auditLog": str(home.audit_log)})
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
