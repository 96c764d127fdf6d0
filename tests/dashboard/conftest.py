"""Fixtures for the dashboard's browser tests: the session's shared server (controllers on, from
tests/conftest.py), the built page, one headless Chromium per module logged in as the admin, an admin
HTTP client, kubectl, and a directory for screenshots (printed at the end of the run).

The tests fail, never skip, when Chromium, ChromeDriver, the built page (web/dist) or axe-core is missing:
`make test` installs the first two and builds the page, `npm ci` in web/ brings axe-core.

`connect`-like fixtures are defined here rather than taken from tests/conftest.py for the reason given in
tests/e2e/conftest.py: session fixtures there bind to whichever `server` asked first.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_support import Browsers, Dashboard, log_in, missing_tools, ranks_job
from mpijob.store.server_process import ServerInfo

from support import create, finished_as, https_client, kubectl_runner, wait_finished

SHOTS_ENV = "MPIJOB_DASHBOARD_SHOTS"  # keep the screenshots there instead of pytest's temp dir
_shots: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _dashboard_tools() -> None:
    problems = missing_tools()
    if problems:
        pytest.fail("the dashboard's browser tests need what is missing here:\n  " + "\n  ".join(problems),
                    pytrace=False)


@pytest.fixture(scope="session")
def api(server: ServerInfo) -> Iterator[httpx.Client]:
    """The admin's client to the shared server."""
    with https_client(server.kubeconfig) as c:
        yield c


@pytest.fixture(scope="session")
def kubectl(server: ServerInfo, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    return kubectl_runner(server.kubeconfig, tmp_path_factory.mktemp("dashboard-kubectl-cache"))


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where every screenshot of the run goes (printed in the terminal summary)."""
    chosen = os.environ.get(SHOTS_ENV)
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("dashboard-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    _shots.append(path)
    return path


@pytest.fixture(scope="module")
def browsers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browsers]:
    b = Browsers(tmp_path_factory.mktemp("chromium"))
    try:
        yield b
    finally:
        b.quit_all()


@pytest.fixture(scope="module")
def new_dashboard(browsers: Browsers, server: ServerInfo, shots: Path, request: pytest.FixtureRequest
                  ) -> Callable[..., Dashboard]:
    """`new_dashboard(name)`: a new browser (fresh profile) on the shared server's dashboard, not logged in;
    its screenshots go to `shots/<module>-<name>/`."""
    module = request.module.__name__.removeprefix("test_")

    def make(name: str = "admin", **kw: Any) -> Dashboard:
        return Dashboard(browsers.new(**kw), server.url, shots / f"{module}-{name}")

    return make


@pytest.fixture(scope="module")
def dash(new_dashboard: Callable[..., Dashboard], server: ServerInfo) -> Dashboard:
    """One browser per module, logged in as the admin through `mpijob dashboard --print-url`."""
    d = new_dashboard("admin")
    log_in(d, server.home, server.kubeconfig)
    return d


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for path in _shots:
        pngs = sorted(path.rglob("*.png"))
        if pngs:
            terminalreporter.write_line(f"dashboard screenshots ({len(pngs)}): {path}")


@pytest.fixture(scope="session")
def finished_job(api: httpx.Client) -> dict[str, Any]:
    """A 2-node TrainJob in `default` that ran and completed: each rank printed a line (`says hello`)."""
    import uuid

    name = f"done-{uuid.uuid4().hex[:5]}"
    create(api, ranks_job(name, seconds=1))
    tj = wait_finished(api, name)
    assert finished_as(tj) == "Complete", tj.get("status")
    return tj
