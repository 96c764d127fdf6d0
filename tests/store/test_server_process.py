"""Process management: start/status/stop, restarts, stale state, two homes side by side."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from mpijob.store import server_process
from mpijob.store.home import Home


def test_two_servers_side_by_side(new_server, connect, kubectl) -> None:  # type: ignore[no-untyped-def]
    a, b = new_server("side-a", controllers=False), new_server("side-b", controllers=False)
    assert a.url != b.url and a.pid != b.pid and a.kubeconfig != b.kubeconfig
    with connect(a) as ca, connect(b) as cb:
        assert ca.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "only-in-a"}}).status_code == 201
        assert ca.get("/api/v1/namespaces/default/configmaps/only-in-a").status_code == 200
        assert cb.get("/api/v1/namespaces/default/configmaps/only-in-a").status_code == 404
        # one server's token is not valid on the other
        with connect(b, token=ca.headers["Authorization"].split()[1]) as crossed:
            assert crossed.get("/api/v1/namespaces").status_code == 401


def test_start_returns_running_server_and_restart_keeps_identity(new_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    info = new_server("restart", controllers=False)
    home = Home(info.home)
    assert server_process.start(home, env={"MPIJOB_NO_CONTROLLERS": "1"}).pid == info.pid
    assert server_process.status(home) == info
    kubeconfig, ca = info.kubeconfig.read_text(), (info.home / "tls" / "ca.crt").read_bytes()
    assert server_process.stop(home) is True
    assert server_process.status(home) is None and not home.state_file.exists()
    assert server_process.stop(home) is False
    again = server_process.start(home, env={"MPIJOB_NO_CONTROLLERS": "1"})
    try:
        assert again.pid != info.pid
        assert again.url == info.url  # the port was still free, so it was reused
        assert again.kubeconfig.read_text() == kubeconfig  # same CA, token and port
        assert (info.home / "tls" / "ca.crt").read_bytes() == ca
    finally:
        server_process.stop(home)


def test_killed_server_leaves_stale_files_that_start_handles(new_server) -> None:  # type: ignore[no-untyped-def]
    info = new_server("killed", controllers=False)
    home = Home(info.home)
    os.kill(info.pid, signal.SIGKILL)
    assert server_process.status(home) is None  # pid gone although server.json and server.pid remain
    assert home.state_file.exists()
    fresh = server_process.start(home, env={"MPIJOB_NO_CONTROLLERS": "1"})
    try:
        assert fresh.pid != info.pid and server_process.status(home) == fresh
    finally:
        server_process.stop(home)


def test_second_server_in_same_home_refuses(new_server) -> None:  # type: ignore[no-untyped-def]
    info = new_server("locked", controllers=False)
    env = dict(os.environ, MPIJOB_HOME=str(info.home), MPIJOB_NO_CONTROLLERS="1")
    proc = subprocess.run([sys.executable, "-m", "mpijob.server"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0 and "already running" in proc.stderr
    assert server_process.status(Home(info.home)) == info  # the first one is untouched


def test_failed_start_reports_log_tail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path / "broken").ensure()
    (home.tls / "ca.crt").write_text("not a certificate")
    (home.tls / "ca.key").write_text("not a key")
    with pytest.raises(server_process.ServerError) as err:
        server_process.start(home, timeout=60, env={"MPIJOB_NO_CONTROLLERS": "1"})
    assert "exited with code" in str(err.value) and "Traceback" in str(err.value)


def test_sigterm_ends_open_streams_and_shuts_down_gracefully(new_server, connect) -> None:  # type: ignore[no-untyped-def]
    info = new_server("graceful", controllers=False)
    home = Home(info.home)
    with connect(info, timeout=60) as c:
        listed = c.get("/api/v1/namespaces/default/configmaps").json()["metadata"]["resourceVersion"]
        params = {"watch": "true", "timeoutSeconds": "300", "resourceVersion": listed}  # only what changes
        with c.stream("GET", "/api/v1/namespaces/default/configmaps", params=params) as resp:
            lines = resp.iter_lines()
            assert server_process.stop(home, timeout=30) is True
            assert [ln for ln in lines if ln.strip()] == []  # the stream was closed by the server
    assert not home.pidfile.exists()  # removed by the server's own shutdown path, not by a SIGKILL
