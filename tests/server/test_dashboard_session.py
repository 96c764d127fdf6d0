"""The dashboard's login and its own API, over real HTTPS (no browser: tests/dashboard has those).

A ticket logs in once; the cookie is HttpOnly, Secure, SameSite=Strict and `__Host-`; a write with the
cookie needs the session's CSRF token and the page's own origin; the session is the user's, for RBAC
and for the audit log; it ends at logout and when the user is removed. Every page answer carries the
strict CSP. `namespaces` lists only what the user may list; `usage` needs the pods' metrics right."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from mpijob.api import names
from mpijob.server.routes.dashboard import CSP, DIST_ENV

API = names.DASHBOARD_API
NAMESPACES = "/api/v1/namespaces"


def login(c: httpx.Client, anonymous: httpx.Client) -> tuple[httpx.Cookies, dict[str, object]]:
    """A session for `c`'s user: a ticket from `c`, traded by a client without credentials."""
    ticket = c.post(f"{API}/tickets")
    assert ticket.status_code == 201, ticket.text
    assert ticket.json()["path"] == f"{names.DASHBOARD_PATH}/{names.LOGIN_FRAGMENT}{ticket.json()['ticket']}"
    opened = anonymous.post(f"{API}/session", json={"ticket": ticket.json()["ticket"]})
    assert opened.status_code == 201, opened.text
    cookies = httpx.Cookies()
    cookies.set(names.SESSION_COOKIE, opened.cookies[names.SESSION_COOKIE])
    return cookies, opened.json()


def namespace_for(http: httpx.Client, namespace: str, user: str, role: str) -> None:
    """A new namespace where `user` holds the ClusterRole `role`."""
    rbac = "rbac.authorization.k8s.io"
    http.post(NAMESPACES, json={"metadata": {"name": namespace}})
    http.post(f"/apis/{rbac}/v1/namespaces/{namespace}/rolebindings", json={
        "metadata": {"name": f"{user}-{role}"}, "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user, "apiGroup": rbac}]})


@pytest.fixture()
def anonymous(connect: Callable[..., httpx.Client]) -> httpx.Client:
    with connect(token="") as c:
        yield c


def test_a_ticket_logs_in_once_with_a_strict_cookie(http: httpx.Client, anonymous: httpx.Client) -> None:
    ticket = http.post(f"{API}/tickets").json()["ticket"]
    opened = anonymous.post(f"{API}/session", json={"ticket": ticket})
    assert opened.status_code == 201
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{names.SESSION_COOKIE}=")
    for flag in ("HttpOnly", "Secure", "SameSite=Strict", "Path=/"):
        assert flag in cookie
    assert "Domain" not in cookie and ticket not in cookie
    assert opened.json()["user"] == "mpijob-admin" and opened.json()["csrfToken"]
    again = anonymous.post(f"{API}/session", json={"ticket": ticket})
    assert again.status_code == 401 and "used already or has expired" in again.json()["message"]
    assert "set-cookie" not in again.headers


def test_bad_tickets_and_bodies_are_refused(anonymous: httpx.Client) -> None:
    assert anonymous.post(f"{API}/session", json={"ticket": "made-up"}).status_code == 401
    bad = anonymous.post(f"{API}/session", json={"nothing": 1})
    assert bad.status_code == 400 and '{"ticket": "..."}' in bad.json()["message"]
    assert anonymous.post(f"{API}/tickets").status_code == 401  # a ticket needs credentials


def test_the_cookie_is_the_user_and_writes_need_the_csrf_token(http: httpx.Client, anonymous: httpx.Client) -> None:
    cookies, me = login(http, anonymous)
    csrf = str(me["csrfToken"])
    session = anonymous.get(f"{API}/session", cookies=cookies)
    assert session.status_code == 200 and session.json()["user"] == "mpijob-admin"
    assert session.json()["csrfToken"] == csrf
    assert anonymous.get(NAMESPACES, cookies=cookies).status_code == 200  # reads need no token
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dash-csrf"}}
    refused = anonymous.post(NAMESPACES, json=ns, cookies=cookies)
    assert refused.status_code == 403 and names.CSRF_HEADER in refused.json()["message"]
    wrong = anonymous.post(NAMESPACES, json=ns, cookies=cookies, headers={names.CSRF_HEADER: csrf[:-1] + "x"})
    assert wrong.status_code == 403
    foreign = anonymous.post(NAMESPACES, json=ns, cookies=cookies,
                             headers={names.CSRF_HEADER: csrf, "Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "https://evil.example" in foreign.json()["message"]
    assert http.get(f"{NAMESPACES}/dash-csrf").status_code == 404  # none of them created anything
    made = anonymous.post(NAMESPACES, json=ns, cookies=cookies, headers={names.CSRF_HEADER: csrf})
    assert made.status_code == 201, made.text
    http.delete(f"{NAMESPACES}/dash-csrf")


def test_logout_ends_the_session(http: httpx.Client, anonymous: httpx.Client) -> None:
    cookies, me = login(http, anonymous)
    out = anonymous.delete(f"{API}/session", cookies=cookies, headers={names.CSRF_HEADER: str(me["csrfToken"])})
    assert out.status_code == 200 and "Max-Age=0" in out.headers["set-cookie"]
    assert anonymous.get(NAMESPACES, cookies=cookies).status_code == 401


def test_rbac_applies_to_a_session_and_removing_the_user_ends_it(
        http: httpx.Client, anonymous: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    alice = new_user()
    namespace_for(http, "dash-alice", alice.user, "edit")
    cookies, me = login(alice, anonymous)
    assert me["user"] == alice.user
    assert me["namespaces"] == {"all": False, "namespaces": ["dash-alice"]}  # the first page's round trip spared
    assert anonymous.get(NAMESPACES, cookies=cookies).status_code == 403  # as for her token
    seen = anonymous.get(f"{API}/namespaces", cookies=cookies).json()
    assert seen == {"all": False, "namespaces": ["dash-alice"]}
    assert http.get(f"{API}/namespaces").json()["all"] is True
    assert http.delete(f"/apis/mpijob.io/v1alpha1/users/{alice.user}").status_code == 200
    assert anonymous.get(f"{API}/namespaces", cookies=cookies).status_code == 401
    http.delete(f"{NAMESPACES}/dash-alice")


def test_usage_needs_the_right_to_read_pod_metrics(
        http: httpx.Client, anonymous: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    path = f"{API}/namespaces/default/trainjobs/nothing/usage"
    body = http.get(path).json()
    assert body["pods"] == [] and body["columns"][:3] == ["time", "cpuCores", "memoryBytes"]
    stranger = new_user()
    cookies, _ = login(stranger, anonymous)
    denied = anonymous.get(path, cookies=cookies)
    assert denied.status_code == 403 and stranger.user in denied.json()["message"]


def test_the_page_is_public_with_a_strict_csp_and_nothing_outside_it(anonymous: httpx.Client) -> None:
    root = anonymous.get(names.DASHBOARD_PATH)
    assert root.status_code == 308 and root.headers["location"] == f"{names.DASHBOARD_PATH}/"
    page = anonymous.get(f"{names.DASHBOARD_PATH}/")
    assert page.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "'unsafe-eval'" not in CSP and "frame-ancestors 'none'" in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    for probe in ("../pyproject.toml", "%2e%2e/%2e%2e/pyproject.toml", "chunks/../../package.json"):
        answer = anonymous.get(f"{names.DASHBOARD_PATH}/{probe}")
        assert answer.status_code in (401, 404, 503)  # httpx itself folds a plain ..; the rest the server refuses
        assert "[project]" not in answer.text and '"dependencies"' not in answer.text


def test_an_unbuilt_dashboard_says_how_to_build_it(new_server: Callable[..., object], tmp_path: object) -> None:
    info = new_server("dash-unbuilt", controllers=False, env={DIST_ENV: str(tmp_path)})
    with httpx.Client(base_url=info.url, verify=False) as c:  # noqa: S501 — only the message is read
        answer = c.get(f"{names.DASHBOARD_PATH}/")
    assert answer.status_code == 503 and "make dashboard" in answer.text
    assert answer.headers["content-security-policy"] == CSP


def test_the_login_is_audited_as_the_user_without_the_ticket(http: httpx.Client, anonymous: httpx.Client,
                                                              server: object) -> None:
    ticket = http.post(f"{API}/tickets").json()["ticket"]
    assert anonymous.post(f"{API}/session", json={"ticket": ticket}).status_code == 201
    log = server.audit_log.read_text()  # type: ignore[attr-defined]
    assert ticket not in log
    logins = [json.loads(line) for line in log.splitlines() if f"{API}/session" in line]
    assert logins and logins[-1]["user"]["username"] == "mpijob-admin"


def test_many_watches_ride_one_connection_each_authorized_as_its_own(
        http: httpx.Client, anonymous: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    bob = new_user()
    namespace_for(http, "dash-bob", bob.user, "view")
    cm = "/api/v1/namespaces/dash-bob/configmaps"
    http.post(cm, json={"metadata": {"name": "before", "labels": {"app": "dash"}}})
    cookies, _ = login(bob, anonymous)
    paths = [f"{cm}?fieldSelector=metadata.name%3Dlater", "/api/v1/namespaces/default/configmaps",
             f"{cm}?labelSelector=app%3Ddash"]
    seen: list[dict[str, object]] = []
    with anonymous.stream("GET", f"{API}/watch", params=[("path", p) for p in paths], cookies=cookies) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        for _ in range(2):  # the forbidden stream's ERROR, and the existing ConfigMap of the third
            seen.append(json.loads(next(lines)))
        http.post(cm, json={"metadata": {"name": "later", "labels": {"app": "dash"}}})
        for _ in range(2):  # the new one, in both streams that select it
            seen.append(json.loads(next(lines)))
    errors = [e for e in seen if e["type"] == "ERROR"]
    assert len(errors) == 1 and errors[0]["stream"] == 1 and errors[0]["object"]["code"] == 403  # type: ignore[index]
    names_by_stream = {(e["stream"], e["object"]["metadata"]["name"]) for e in seen if e["type"] == "ADDED"}  # type: ignore[index]
    assert names_by_stream == {(2, "before"), (0, "later"), (2, "later")}
    bad = anonymous.get(f"{API}/watch", params={"path": "/apis/trainer.kubeflow.org/v1alpha1/namespaces/x/trainjobs/one"},
                        cookies=cookies)
    assert bad.status_code == 400 and "is not a list" in bad.json()["message"]
    http.delete(f"{NAMESPACES}/dash-bob")
