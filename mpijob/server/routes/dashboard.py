"""The dashboard (docs/dashboard.md): its page and assets, its login, and the two things it needs that
Kubernetes has no API for.

* `GET /dashboard/...`: the built page (`web/dist`, `make dashboard`), public like any console's assets,
  each answer with a strict Content-Security-Policy (nothing inline, nothing from elsewhere, no frames).
* `POST /dashboard/api/tickets` (any authenticated user, as themself): a one-time login ticket, which
  `mpijob dashboard` puts in the fragment of the link it opens. `POST /dashboard/api/session` trades
  it for the session cookie; `GET` tells the page who it is and its CSRF token; `DELETE` logs out.
* `GET /dashboard/docs/FILE`: the project's docs (and its README), which every help link of the page opens.
* `GET /dashboard/api/watch`: many watches over one connection (`mpijob.server.routes.fanin`).
* `GET /dashboard/api/namespaces/NS/logs`: many pods' logs followed over one connection
  (`mpijob.server.routes.logfanin`).
* `GET /dashboard/api/namespaces`: the namespaces whose TrainJobs the user may list (RBAC, asked per
  namespace), since only a cluster-wide reader may list namespaces themselves.
* `GET /dashboard/api/namespaces/NS/trainjobs/NAME/usage`: each pod's CPU, memory and GPU use over
  the job's life (`mpijob.controllers.metrics.series`), for whoever may read the pods' metrics.

Everything else the page shows and does goes through the Kubernetes API as the logged-in user
(`mpijob.server.auth` accepts the cookie there), so RBAC decides it exactly as for kubectl.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response

from mpijob.api import Obj, names
from mpijob.api.core import errors, rbac
from mpijob.api.core.resources import NAMESPACES, PODS, TRAINJOBS
from mpijob.api.core.selectors import Requirement
from mpijob.server.http import json_response, read_body
from mpijob.server.routes import fanin, logfanin
from mpijob.server.routes.paths import not_found_path
from mpijob.server.sessions import TICKET_SECONDS, Sessions
from mpijob.server.state import Cluster
from mpijob.store.authorizer import enabled, index
from mpijob.store.users import authenticated

DIST_ENV = "MPIJOB_DASHBOARD_DIR"  # where the built page is; default: the checkout's web/dist
REPO = Path(__file__).resolve().parents[3]
DIST = REPO / "web" / "dist"
DOCS = REPO / "docs"
API = names.DASHBOARD_API
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
IMMUTABLE = "public, max-age=31536000, immutable"  # chunks and assets: content-hashed names

router = APIRouter()


def dist_dir() -> Path:
    return Path(os.environ.get(DIST_ENV) or DIST)


def is_public(method: str, path: str) -> bool:
    """Requests that need no credentials: the page and its assets, and trading a ticket for a session."""
    if path == f"{API}/session":
        return method == "POST"
    return ((path == names.DASHBOARD_PATH or path.startswith(f"{names.DASHBOARD_PATH}/"))
            and not path.startswith(f"{API}/"))


def is_dashboard(path: str) -> bool:
    """Paths whose handlers authorize each answer themselves (RBAC per namespace, not per URL)."""
    return path.startswith(f"{API}/")


def _cluster(request: Request) -> Cluster:
    return request.app.state.cluster


def _sessions(request: Request) -> Sessions:
    return request.app.state.sessions


def _user(request: Request) -> rbac.User:
    user = request.scope.get("user")
    if not isinstance(user, rbac.User):
        raise errors.unauthorized()
    return user


def _secure(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


# -- login -----------------------------------------------------------------------------------------


def _session_cookie(value: str, max_age: int | None) -> str:
    age = "" if max_age is None else f"; Max-Age={max_age}"
    return f"{names.SESSION_COOKIE}={value}; Path=/; Secure; HttpOnly; SameSite=Strict{age}"


def _whoami(request: Request, csrf: str) -> Obj:
    """Who the page is for, its CSRF token, and (to spare the first page a round trip) what it may see."""
    user = _user(request)
    return {"user": user.name, "groups": list(user.groups), "csrfToken": csrf, "namespaces": visible(request)}


@router.post(f"{API}/tickets")
async def issue_ticket(request: Request) -> Response:
    ticket = _sessions(request).issue(_user(request))
    return json_response({"ticket": ticket, "path": f"{names.DASHBOARD_PATH}/{names.LOGIN_FRAGMENT}{ticket}",
                          "expiresInSeconds": int(TICKET_SECONDS)}, 201)


@router.post(f"{API}/session")
async def open_session(request: Request) -> Response:
    body = await read_body(request)
    ticket = body.get("ticket") if isinstance(body, dict) else None
    if not isinstance(ticket, str) or not ticket:
        raise errors.bad_request('the body must be {"ticket": "..."}, '
                                 'the ticket of a login link from `mpijob dashboard`')
    found = _sessions(request).redeem(ticket)
    if found is None:
        raise errors.ApiError(401, "Unauthorized", "this login link was used already or has expired: run "
                              "`mpijob dashboard` for a new one")
    cookie, session = found
    request.scope["user"] = authenticated(session.user)  # the audit Event of the login names who logged in
    response = json_response(_whoami(request, session.csrf), 201)
    response.headers["Set-Cookie"] = _session_cookie(cookie, None)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get(f"{API}/session")
async def current_session(request: Request) -> Response:
    session = request.scope.get("session")
    if session is None:  # a bearer token, not a browser: there is no session to show
        raise errors.bad_request("this request carries no dashboard session (it was made with a bearer token)")
    response = json_response(_whoami(request, session.csrf))
    response.headers["Cache-Control"] = "no-store"
    return response


@router.delete(f"{API}/session")
async def close_session(request: Request) -> Response:
    cookie = request.cookies.get(names.SESSION_COOKIE, "")
    _sessions(request).end(cookie)
    response = json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
    response.headers["Set-Cookie"] = _session_cookie("", 0)
    return response


# -- what the page needs beyond Kubernetes' API ---------------------------------------------------------


def may(request: Request, verb: str, res: Any, namespace: str, group: str | None = None) -> bool:
    if not enabled():
        return True
    attrs = rbac.Attributes(_user(request), verb, True, api_group=res.group if group is None else group,
                            resource=res.plural, namespace=namespace)
    return index(_cluster(request).store).authorizer().authorize(attrs).allowed


@router.get(f"{API}/watch")
async def watch_many(request: Request) -> Response:
    return fanin.watch_many(request, _cluster(request), _user(request))


@router.get(f"{API}/namespaces/{{namespace}}/logs")
async def follow_logs(request: Request, namespace: str) -> Response:
    return logfanin.follow_many(request, _cluster(request), _user(request), namespace)


def visible(request: Request) -> Obj:
    """The namespaces whose TrainJobs the user may list: `{all, namespaces}`."""
    store = _cluster(request).store
    everywhere = may(request, "list", TRAINJOBS, "")
    mine = [ns["metadata"]["name"] for ns in store.list(NAMESPACES)[0]
            if everywhere or may(request, "list", TRAINJOBS, ns["metadata"]["name"])]
    return {"all": everywhere, "namespaces": mine}


@router.get(f"{API}/namespaces")
async def visible_namespaces(request: Request) -> Response:
    return json_response(visible(request))


@router.get(f"{API}/namespaces/{{namespace}}/trainjobs/{{name}}/usage")
async def usage(request: Request, namespace: str, name: str) -> Response:
    if not may(request, "get", PODS, namespace, names.METRICS_GROUP):
        raise rbac.forbidden(rbac.Attributes(_user(request), "get", True, api_group=names.METRICS_GROUP,
                                             resource="pods", namespace=namespace))
    cluster = _cluster(request)
    pods = cluster.store.list(PODS, namespace, labels=[Requirement(names.LABEL_JOBSET_NAME, "=", (name,))])[0]
    history = cluster.metrics.sampler.history if cluster.metrics and cluster.metrics.sampler else None
    out = []
    for pod in pods:
        meta = pod["metadata"]
        points = history.series((namespace, meta["name"])) if history is not None else []
        out.append({"name": meta["name"], "role": (meta.get("labels") or {}).get(names.LABEL_RJOB_NAME, ""),
                    "points": [p.as_list() for p in points]})
    interval = history.interval if history is not None else 0
    return json_response({"pods": out, "columns": ["time", "cpuCores", "memoryBytes", "gpuUtilPercent",
                                                   "gpuMemoryBytes"], "intervalSeconds": interval})


# -- the project's docs, which the page's help links open (public, as in the repository) ---------------


@router.get(f"{names.DASHBOARD_PATH}/docs/{{path:path}}")
async def doc(path: str) -> Response:
    """A file of `docs/`, or the README, as the repository holds it: the page renders the Markdown."""
    root = DOCS.resolve()
    target = (REPO / "README.md") if path == "README.md" else (root / path).resolve()
    if target != REPO / "README.md" and (root not in target.parents or not target.is_file()):
        raise not_found_path(f"{names.DASHBOARD_PATH}/docs/{path}")
    media_type = "text/plain; charset=utf-8" if target.suffix == ".md" else mimetypes.guess_type(target.name)[0]
    return _secure(FileResponse(target, media_type=media_type or "application/octet-stream",
                                headers={"Cache-Control": "no-cache"}))


# -- the page (last: its catch-all path would shadow the API's) ---------------------------------------


@router.get(names.DASHBOARD_PATH)
async def page_root() -> Response:
    return _secure(Response(status_code=308, headers={"Location": f"{names.DASHBOARD_PATH}/"}))


@router.get(f"{names.DASHBOARD_PATH}/{{path:path}}")
async def asset(path: str) -> Response:
    root = dist_dir().resolve()
    if not (root / "index.html").is_file():
        return _secure(PlainTextResponse(
            f"The dashboard is not built ({root} has no index.html): run `make dashboard` in the mpijob checkout, "
            f"or set {DIST_ENV} to a built dashboard.", status_code=503))
    target = (root / (path or "index.html")).resolve()
    if root not in target.parents or not target.is_file():
        raise not_found_path(f"{names.DASHBOARD_PATH}/{path}")
    media_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    response = FileResponse(target, media_type=media_type)
    hashed = path.startswith(("chunks/", "assets/"))
    response.headers["Cache-Control"] = IMMUTABLE if hashed else "no-cache"  # index, app.js, style.css: revalidate
    return _secure(response)
