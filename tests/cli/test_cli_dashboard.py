"""`mpijob dashboard --print-url`: a login link for the kubeconfig's user that works once; without
`--print-url` and without a browser, the link is printed with how long it lasts."""

from __future__ import annotations

import webbrowser
from typing import Any

import httpx
import pytest
from cli_support import Invoke
from mpijob.api import names

DASH = names.DASHBOARD_PATH


def trade(server: Any, url: str) -> httpx.Response:
    ticket = url.split(names.LOGIN_FRAGMENT, 1)[1]
    with httpx.Client(base_url=server.url, verify=False) as c:  # noqa: S501 — the link's own server
        return c.post(f"{DASH}/api/session", json={"ticket": ticket})


def test_print_url_gives_a_one_time_link_for_the_kubeconfig_user(mpijob: Invoke, server: Any) -> None:
    r = mpijob("dashboard", "--print-url")
    assert r.exit_code == 0, r.stderr
    url = r.stdout.strip()
    assert url.startswith(f"{server.url}{DASH}/{names.LOGIN_FRAGMENT}")
    first = trade(server, url)
    assert first.status_code == 201 and first.json()["user"] == "mpijob-admin"
    assert trade(server, url).status_code == 401


def test_without_a_browser_the_link_is_printed(mpijob: Invoke, server: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or False)
    r = mpijob("dashboard")
    assert r.exit_code == 0 and opened and r.stdout.strip() == opened[0]
    assert "within 60s (it works once)" in r.stderr
