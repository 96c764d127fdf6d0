"""The dashboard's login and session as a real browser lives them (tests/server/test_dashboard_session.py
has the same rules over bare HTTPS): the link from `mpijob dashboard --print-url` logs in once and
leaves neither the URL nor the history; the cookie is HttpOnly, Secure, SameSite=Strict and invisible to
the page's scripts; every answer under /dashboard/ carries the strict CSP, which the browser enforces; a
write with the stolen cookie but without the CSRF header, or from another origin, is refused; and no page
makes the browser report a CSP violation or an unexplained error.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from browser_support import DIST, Dashboard, describe, log_in, login_link, wait_for
from mpijob.api import names
from mpijob.server.routes.dashboard import CSP
from mpijob.store.server_process import ServerInfo

from support import https_client

PAGES = ("#/jobs", "#/create", "#/queues", "#/cluster", "#/history")
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
# A logged-out page asks GET /dashboard/api/session and is told 401: Chromium logs every non-2xx fetch
# as "Failed to load resource" (SEVERE), though the page handled it. The reused ticket's POST likewise.
LOGGED_OUT_401 = r"/dashboard/api/session - Failed to load resource: the server responded with a status of 401"


def session_cookie(dash: Dashboard) -> dict[str, Any]:
    """The session cookie as the browser holds it (CDP sees HttpOnly cookies; the page cannot)."""
    cookies = dash.driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    found = [c for c in cookies if c["name"] == names.SESSION_COOKIE]
    assert len(found) == 1, f"cookies in the browser: {[c['name'] for c in cookies]}"
    return found[0]


def cookie_client(server: ServerInfo, cookie: str, **headers: str) -> httpx.Client:
    """A client with the session cookie only (no bearer token), verifying the server's real CA."""
    c = https_client(server.kubeconfig, token="")
    c.headers["Cookie"] = f"{names.SESSION_COOKIE}={cookie}"
    c.headers.update(headers)
    return c


def test_the_login_link_logs_in_once_and_leaves_no_trace(new_dashboard: Any, server: ServerInfo) -> None:
    dash: Dashboard = new_dashboard("login-once")
    url = log_in(dash, server.home, server.kubeconfig, user="mpijob-admin")
    ticket = url.split("#login=", 1)[1]
    assert "login=" not in dash.driver.current_url and ticket not in dash.driver.current_url
    assert dash.driver.current_url.endswith("/dashboard/#/jobs"), dash.driver.current_url
    assert ticket not in dash.js("return document.location.href + document.title + document.body.innerHTML")
    dash.screenshot("logged-in")
    # the history holds no entry with the ticket: walk back through every dashboard entry
    dash.go("#/queues")
    wait_for(lambda: dash.driver.current_url.endswith("#/queues"), "the queues route")
    length = dash.js("return history.length")
    seen = []
    for _ in range(length):
        dash.driver.back()
        seen.append(dash.driver.current_url)
        if "/dashboard/" not in dash.driver.current_url:
            break
    assert not [u for u in seen if "login=" in u or ticket in u], seen
    assert any(u.endswith("/dashboard/#/jobs") for u in seen), seen
    # the same link again, in a browser with no session: the logged-out page says why
    other: Dashboard = new_dashboard("reused-link")
    other.driver.get(url)
    alert = other.wait_text('[role="alert"]', lambda t: "used already or has expired" in t,
                            "the logged-out page's message about the used link")
    assert "mpijob dashboard" in alert
    assert "Log in to mpijob" in other.text_of("h1")
    assert not other.find('[data-testid="user"]')
    assert "login=" not in other.driver.current_url
    assert not [c for c in other.driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
                if c["name"] == names.SESSION_COOKIE]
    other.screenshot("link-used-already")
    assert not other.console.csp_violations(), describe(other.console.csp_violations())
    # the only errors: the refused ticket (401) and the page's question "who am I?" answered 401
    errors = other.console.severe([LOGGED_OUT_401])
    assert not errors, describe(errors)


def test_a_link_opened_in_a_tab_already_on_the_dashboard_logs_in_and_leaves_the_url(dash: Dashboard,
                                                                                   server: ServerInfo) -> None:
    """Opening a second link where the dashboard is already shown is a same-document (fragment)
    navigation: no new page load, so the page itself must notice the ticket, trade it and drop it."""
    dash.load("#/jobs")
    dash.one('[data-testid="user"]')
    dash.js("window.__noReload = 1")
    url = login_link(server.home, server.kubeconfig)
    ticket = url.split("#login=", 1)[1]
    dash.driver.get(url)
    wait_for(lambda: "login=" not in dash.driver.current_url, "the ticket to leave the URL", timeout=10)
    assert ticket not in dash.driver.current_url
    with https_client(server.kubeconfig, token="") as anon:  # it was traded, not left lying unused
        used = anon.post(f"{names.DASHBOARD_API}/session", json={"ticket": ticket})
        assert used.status_code == 401, used.text


def test_the_session_cookie_is_httponly_secure_strict(dash: Dashboard) -> None:
    cookie = session_cookie(dash)
    assert cookie["httpOnly"] is True, cookie
    assert cookie["secure"] is True, cookie
    assert cookie["sameSite"] == "Strict", cookie
    assert cookie["path"] == "/" and cookie["domain"] == "127.0.0.1", cookie
    assert cookie["session"] is True, cookie  # gone with the browser, as the server's session ends at restart
    visible = dash.js("return document.cookie")
    assert names.SESSION_COOKIE not in visible and cookie["value"] not in visible, visible


def test_every_dashboard_answer_carries_the_strict_csp(server: ServerInfo) -> None:
    with https_client(server.kubeconfig, token="") as anon:
        index = anon.get("/dashboard/")
        assert index.status_code == 200 and 'src="app.js"' in index.text
        assets = ["/dashboard/", "/dashboard/app.js", "/dashboard/style.css", "/dashboard/#/jobs"]
        assets += [f"/dashboard/chunks/{p.name}" for p in sorted((DIST / "chunks").glob("*.js"))[:2]]
        for path in assets:
            r = anon.get(path)
            assert r.status_code == 200, (path, r.status_code)
            assert r.headers.get("content-security-policy") == CSP, (path, r.headers.get("content-security-policy"))
            assert r.headers.get("x-frame-options") == "DENY" and r.headers.get("x-content-type-options") == "nosniff"
        csp = index.headers["content-security-policy"]
        for rule in ("default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"):
            assert rule in csp, csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
        missing = anon.get("/dashboard/no-such-file.js")
        assert missing.status_code == 404


def test_the_browser_enforces_the_csp(dash: Dashboard) -> None:
    """An inline script that found its way into the page does not run, and the browser says so."""
    dash.console.forget()
    marker = f"inline-{uuid.uuid4().hex[:6]}"
    ran = dash.driver.execute_async_script(
        """
        const [marker, done] = arguments;
        const seen = [];
        document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective));
        const s = document.createElement('script');
        s.textContent = `window.__inline = '${marker}'`;
        document.body.appendChild(s);
        setTimeout(() => done({ran: window.__inline === marker, seen}), 300);
        """, marker)
    assert ran["ran"] is False, "an inline script ran despite the page's CSP"
    assert any(d.startswith("script-src") for d in ran["seen"]), ran
    assert dash.console.csp_violations(), "Chromium reported no CSP violation for the blocked inline script"
    dash.console.forget()  # the violation was ours; every later one is the page's
    # WebDriver's own script injection is not subject to the CSP: axe-core loads and runs
    assert dash.axe("the jobs list (CSP check)") is not None
    assert dash.js("return typeof window.axe.run") == "function"
    assert not dash.console.csp_violations(), describe(dash.console.csp_violations())


def test_a_write_with_the_cookie_needs_the_csrf_token_and_the_page_origin(dash: Dashboard, server: ServerInfo) -> None:
    cookie = session_cookie(dash)["value"]
    name = f"csrf-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    with cookie_client(server, cookie) as c:
        who = c.get(f"{names.DASHBOARD_API}/session")
        assert who.status_code == 200 and who.json()["user"] == "mpijob-admin", who.text
        csrf = who.json()["csrfToken"]
        assert c.get(CONFIGMAPS).status_code == 200  # a read needs only the cookie
        no_token = c.post(CONFIGMAPS, json=body)
        assert no_token.status_code == 403, no_token.text
        assert names.CSRF_HEADER in no_token.json()["message"], no_token.text
        wrong = c.post(CONFIGMAPS, json=body, headers={names.CSRF_HEADER: csrf[:-2] + "xx"})
        assert wrong.status_code == 403, wrong.text
        foreign = c.post(CONFIGMAPS, json=body, headers={names.CSRF_HEADER: csrf, "Origin": "https://evil.example"})
        assert foreign.status_code == 403 and "https://evil.example" in foreign.json()["message"], foreign.text
        assert c.get(f"{CONFIGMAPS}/{name}").status_code == 404  # none of them wrote anything
        # the control: the same write with the token, from the page's own origin, is allowed
        own = c.post(CONFIGMAPS, json=body, headers={names.CSRF_HEADER: csrf, "Origin": server.url.rstrip("/")})
        assert own.status_code == 201, own.text
        assert c.delete(f"{CONFIGMAPS}/{name}", headers={names.CSRF_HEADER: csrf}).status_code == 200
        # a forged cookie is no session at all
    with cookie_client(server, cookie[:-3] + "abc") as forged:
        assert forged.get(CONFIGMAPS).status_code == 401


def test_no_page_reports_a_csp_violation_or_an_error(dash: Dashboard) -> None:
    dash.console.forget()
    dash.load("#/jobs")  # a full load: the page's own scripts, styles and fonts, all under the CSP
    dash.one('[data-testid="user"]')
    for route in PAGES:
        dash.go(route)
        dash.settled(route)
        dash.screenshot(f"page-{route.strip('#/').replace('/', '-')}")
    violations = dash.console.csp_violations()
    assert not violations, "CSP violations:\n" + describe(violations)
    errors = dash.console.severe()
    assert not errors, "errors in the browser console:\n" + describe(errors)


def test_a_made_up_ticket_is_refused_and_burns_no_real_one(new_dashboard: Any,
                                                                                 server: ServerInfo) -> None:
    other: Dashboard = new_dashboard("made-up-ticket")
    real = login_link(server.home, server.kubeconfig)
    other.driver.get(real.split("#login=")[0] + "#login=" + "x" * 43)
    other.wait_text('[role="alert"]', lambda t: "used already or has expired" in t, "the refusal of a made-up ticket")
    assert "login=" not in other.driver.current_url
    # and the real one still works afterwards (a refused guess does not burn real tickets); a new
    # document, as a link opened from a terminal is
    other.driver.get("about:blank")
    other.driver.get(real)
    other.wait_text('[data-testid="user"]', lambda t: t.strip() == "mpijob-admin", "the logged-in user")
