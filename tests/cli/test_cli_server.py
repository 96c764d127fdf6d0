"""The local cluster's lifecycle through the CLI: on-demand start, status, stop (each server reaped)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_support import MPIJOB_BIN
from mpijob.store import server_process
from mpijob.store.home import Home


def _mpijob(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(MPIJOB_HOME=str(home), MPIJOB_NO_CONTROLLERS="1")
    return subprocess.run([str(MPIJOB_BIN), *args], env=env, capture_output=True, text=True, timeout=120)


def test_kubeconfig_starts_the_local_cluster_on_demand(tmp_path: Path) -> None:
    home = tmp_path / "home"
    try:
        first = _mpijob(home, "kubeconfig")
        assert first.returncode == 0, first.stderr
        assert "starting local cluster" in first.stderr
        assert Path(first.stdout.strip()) == home / "kubeconfig" and (home / "kubeconfig").is_file()

        again = _mpijob(home, "kubeconfig")
        assert again.stdout == first.stdout and "starting" not in again.stderr  # reused, not restarted

        status = _mpijob(home, "server", "status", "-o", "json")
        assert status.returncode == 0, status.stderr
        info = json.loads(status.stdout)
        assert info["url"].startswith("https://127.0.0.1:") and info["kubeconfig"] == str(home / "kubeconfig")
        assert info["home"] == str(home) and info["sandbox_mode"]

        text = _mpijob(home, "server", "status").stdout
        for key in ("url:", "pid:", "kubeconfig:", "home:", "sandbox mode:"):
            assert key in text

        listed = _mpijob(home, "get", "trainjobs", "-o", "json")
        assert listed.returncode == 0 and json.loads(listed.stdout)["items"] == []

        stopped = _mpijob(home, "server", "stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stderr
        assert _mpijob(home, "server", "status").returncode == 8
    finally:
        server_process.stop(Home(home), timeout=20)


def test_server_start_prints_where_it_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    try:
        r = _mpijob(home, "server", "start")
        assert r.returncode == 0, r.stderr
        assert f"home:         {home}" in r.stdout and "url:          https://127.0.0.1:" in r.stdout
        assert _mpijob(home, "server", "start").returncode == 0  # already running: fine
    finally:
        server_process.stop(Home(home), timeout=20)
