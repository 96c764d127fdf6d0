"""Shared fixtures: real servers in temporary `MPIJOB_HOME`s, an HTTP client and a kubectl runner.

`server` is one server per test session with the controllers on; tests/server/conftest.py overrides
it with one that runs without controllers (`MPIJOB_NO_CONTROLLERS=1`). `new_server(...)` starts
extra servers in fresh homes; every server started here is stopped (and reaped) at the end.
"""

from __future__ import annotations

import base64
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mpijob.store import supervisor
from mpijob.store.home import Home
from mpijob.store.supervisor import ServerInfo

KUBECTL = "/usr/bin/kubectl"
NO_CONTROLLERS = {"MPIJOB_NO_CONTROLLERS": "1"}


class Servers:
    """Starts servers in fresh homes under one temp dir and stops them all."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Home] = []

    def start(self, name: str, *, controllers: bool = True, home: Path | None = None,
              env: dict[str, str] | None = None) -> ServerInfo:
        h = Home(home or self.root / name).ensure()
        info = supervisor.start(h, timeout=60, env={**(env or {}), **({} if controllers else NO_CONTROLLERS)})
        self.started.append(h)
        return info

    def stop_all(self) -> None:
        for h in self.started:
            supervisor.stop(h, timeout=20, drain=True)  # nothing of a test outlives its session
        self.started.clear()


def kubeconfig_token(info: ServerInfo) -> str:
    config = yaml.safe_load(info.kubeconfig.read_text())
    return str(config["users"][0]["user"]["token"])


def ca_context(info: ServerInfo) -> ssl.SSLContext:
    config = yaml.safe_load(info.kubeconfig.read_text())
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    return ssl.create_default_context(cadata=ca)


def client(info: ServerInfo, *, token: str | None = None, timeout: float = 30) -> httpx.Client:
    """An HTTPS client that trusts the server's CA and sends the admin token (or `token`)."""
    bearer = kubeconfig_token(info) if token is None else token
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.Client(base_url=info.url, verify=ca_context(info), headers=headers, timeout=timeout)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    s = Servers(tmp_path_factory.mktemp("homes"))
    try:
        yield s
    finally:
        s.stop_all()


@pytest.fixture(scope="session")
def server(servers: Servers) -> ServerInfo:
    """A running local cluster with controllers, shared by the session."""
    return servers.start("main", controllers=True)


@pytest.fixture()
def new_server(servers: Servers) -> Callable[..., ServerInfo]:
    """Start another server in a fresh home: `new_server("name", controllers=False)`."""
    return servers.start


@pytest.fixture(scope="session")
def connect(server: ServerInfo) -> Callable[..., httpx.Client]:
    """`connect(info=server, token=None)`: a new client (close it; `token=""` sends none)."""

    def make(info: ServerInfo | None = None, token: str | None = None, **kw: Any) -> httpx.Client:
        return client(info or server, token=token, **kw)

    return make


@pytest.fixture()
def http(server: ServerInfo) -> Iterator[httpx.Client]:
    with client(server) as c:
        yield c


@pytest.fixture(scope="session")
def kubectl(server: ServerInfo, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the machine's kubectl against `server`: `kubectl("get", "pods", check=False)`."""
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 60,
            **kw: Any) -> subprocess.CompletedProcess[str]:
        cmd = [KUBECTL, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache), *args]
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    return run
