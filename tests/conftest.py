"""Shared fixtures: real servers in temporary `MPIJOB_HOME`s, an HTTP client and a kubectl runner.

`server` is one server per test session with the controllers on; tests/server/conftest.py overrides
it with one that runs without controllers (`MPIJOB_NO_CONTROLLERS=1`). `new_server(...)` starts
extra servers in fresh homes; every server started here is stopped (and reaped) at the end.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from mpijob.store import server_process
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

from support import https_client, kubectl_runner, scaled

NO_CONTROLLERS = {"MPIJOB_NO_CONTROLLERS": "1"}
TESTS = Path(__file__).resolve().parent
# The tiers (markers registered in pyproject.toml): a folder's tests all carry its tier; `slow` names
# modules that take long on their own (measured with `--durations`), wherever they are.
FOLDER_TIERS = {"e2e": "e2e", "dashboard": "browser"}
SLOW = frozenset({
    "server/test_fuzz.py", "server/test_fuzz_api.py",  # thousands of generated requests
    "store/test_server_process.py", "cli/test_cli_server.py",  # start and stop servers of their own
    "cli/test_cli_run.py", "cli/test_cli_wait_logs.py", "cli/test_cli_describe_hint.py", "sdk/test_sdk_async.py",
    "sdk/test_sdk_readme.py", "sdk/test_sdk_client.py", "sdk/test_sdk_trainjob.py", "cli/test_cli_contract.py",
    "docs/test_quickstart.py", "controllers/test_process_mode.py", "controllers/test_oom.py",  # real jobs
    "test_web_build.py",  # two esbuild bundles
})


@pytest.hookimpl(trylast=True)  # after pytest-timeout has read its settings
def pytest_configure(config: pytest.Config) -> None:
    limit = getattr(config, "_env_timeout", None)  # pytest-timeout's per-test limit, on this machine's scale
    if limit:
        config._env_timeout = scaled(limit)  # type: ignore[attr-defined]  # pytest-timeout keeps it there


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test's tier, and run the tiered (long) modules first: with the suite spread over workers
    (`make test`, pytest-xdist by module), the many short modules then fill the gaps at the end, rather
    than one long module running alone while the other workers idle."""
    if missing := sorted(p for p in SLOW if not (TESTS / p).is_file()):
        raise pytest.UsageError(f"tests/conftest.py SLOW names modules that do not exist: {missing}")
    for item in items:
        path = item.path.relative_to(TESTS)
        if tier := FOLDER_TIERS.get(path.parts[0]):
            item.add_marker(tier)
        if path.as_posix() in SLOW:
            item.add_marker("slow")
    items.sort(key=lambda item: all(item.get_closest_marker(t) is None for t in ("e2e", "browser", "slow")))


UNKNOWN_CHILD = "Unknown child process pid"  # asyncio's words


class Servers:
    """Starts servers in fresh homes under one temp dir and stops them all."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Home] = []

    def start(self, name: str, *, controllers: bool = True, home: Path | None = None,
              env: dict[str, str] | None = None) -> ServerInfo:
        h = Home(home or self.root / name).ensure()
        info = server_process.start(h, timeout=scaled(60), env={**(env or {}), **({} if controllers else NO_CONTROLLERS)})
        self.started.append(h)
        return info

    def stop_all(self) -> None:
        for h in self.started:
            server_process.stop(h, timeout=scaled(20), drain=True)  # nothing of a test outlives its session
        # a child reaped behind asyncio's back had its exit code replaced by 255 (controllers/trainer/children.py)
        stolen = {str(h.root): n for h in self.started
                  if h.server_log.exists() and (n := h.server_log.read_text(errors="replace").count(UNKNOWN_CHILD))}
        self.started.clear()
        assert not stolen, f"servers that lost a child's exit code ('{UNKNOWN_CHILD}'): {stolen}"


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

    def make(info: ServerInfo | None = None, token: str | None = None, timeout: float = 30) -> httpx.Client:
        return https_client((info or server).kubeconfig, timeout, token)

    return make


@pytest.fixture()
def http(server: ServerInfo) -> Iterator[httpx.Client]:
    with https_client(server.kubeconfig, 30) as c:
        yield c


@pytest.fixture(scope="session")
def kubectl(server: ServerInfo, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the machine's kubectl against `server`: `kubectl("get", "pods", check=False)`."""
    return kubectl_runner(server.kubeconfig, tmp_path_factory.mktemp("kubectl-cache"))
