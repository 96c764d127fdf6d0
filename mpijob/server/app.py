"""The ASGI application: routes, error mapping, authentication and the lifespan that opens the store,
bootstraps the cluster and runs the controllers.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.websockets import WebSocket

from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CONNECT_SUBRESOURCES
from mpijob.server import admission, bootstrap, openapi, ports
from mpijob.server.audit import AuditMiddleware
from mpijob.server.auth import BearerAuth
from mpijob.server.authz import Authorize
from mpijob.server.http import BodyLimit, json_response, status_response
from mpijob.server.routes import (
    access,
    connect,
    crud,
    dashboard,
    discovery,
    history,
    metrics,
    progress,
    stacks,
    visibility,
)
from mpijob.server.routes.paths import Discovery, not_found_path, parse
from mpijob.server.sessions import Sessions
from mpijob.server.state import Cluster
from mpijob.store.home import Home
from mpijob.store.objects import Store
from mpijob.store.server_process import DRAIN_SIGNAL

log = logging.getLogger("mpijob.server")

NO_CONTROLLERS_ENV = "MPIJOB_NO_CONTROLLERS"
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def controllers_enabled() -> bool:
    return os.environ.get(NO_CONTROLLERS_ENV, "") not in ("1", "true", "True")


def create_app(home: Home) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(home.db)
        controllers = ports.connect()  # the controllers' code the server calls, loaded once here
        cluster = Cluster(home=home, store=store, controllers=controllers)
        app.state.cluster = cluster
        admission.warm()
        bootstrap.run(store, home.ca_pem())
        cluster.metrics = controllers.metrics(store, cluster.logs)  # this server's registry, served at /metrics
        # What start-up made so far (modules, OpenAPI documents, validators) lives as long as the server: out of
        # the collector's sight, a full collection scans only what came later (0.1 s → ~15 ms with 1,000 jobs
        # queued, bench/load.py). Frozen before the controllers start, so the state of jobs a restart adopts
        # can still be collected once they end. And a request's objects (a list of 1,000 parsed objects is
        # ~50,000) die young, by reference counting, without a collection in the middle promoting them: that
        # made full collections come every second under a client's lists. Cyclic garbage still goes at each
        # 100,000 allocations.
        gc.collect()
        gc.freeze()
        gc.set_threshold(100_000, 50, 50)
        if controllers_enabled():
            cluster.manager = controllers.manager(store, cluster.logs, home, cluster.metrics)
            await cluster.manager.start()
            cluster.sandbox_mode = cluster.manager.sandbox_mode
            cluster.sandbox = cluster.manager.sandbox()
        drain = False

        def stop_draining() -> None:  # `mpijob server stop --drain`: as SIGTERM, with the jobs stopped first
            nonlocal drain
            drain = True
            os.kill(os.getpid(), signal.SIGTERM)

        asyncio.get_running_loop().add_signal_handler(DRAIN_SIGNAL, stop_draining)
        try:
            yield
        finally:
            cluster.stopping.set()
            if cluster.manager is not None:
                await cluster.manager.stop(drain=drain)
            store.close()

    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
    app.state.sessions = Sessions()  # the dashboard's logins, shared by authentication and its routes
    _routes(app)
    _error_handlers(app)
    app.add_middleware(BodyLimit)  # 3 MiB request bodies, innermost: checked when a route reads one
    app.add_middleware(Authorize)  # RBAC, inside authentication (mpijob.server.authz)
    app.add_middleware(BearerAuth, tokens_file=home.tokens, home=home, sessions=app.state.sessions)
    app.add_middleware(AuditMiddleware, path=home.audit_log)  # added last: outermost, sees every 401/403
    return app


def _cluster(request: Request) -> Cluster:
    return request.app.state.cluster


def _routes(app: FastAPI) -> None:
    app.include_router(visibility.router)  # before the generic /apis routes, which would 404 its paths
    app.include_router(access.router)  # the review APIs and mpijob.io users, likewise
    app.include_router(history.router)  # mpijob.io's job records (`mpijob history`), likewise
    app.include_router(progress.router)  # POST of a job's progress to trainjobs/<name>/status (Trainer's status server)
    app.include_router(metrics.router)  # /metrics and metrics.k8s.io (kubectl top), computed, not stored
    app.include_router(stacks.router)  # a running job's ranks' stacks (`mpijob debug stacks`), under /dashboard/api
    app.include_router(dashboard.router)  # /dashboard/: the page, its login, and what kube has no API for

    @app.get("/healthz")
    @app.get("/readyz")
    @app.get("/livez")
    async def healthz() -> Response:
        return PlainTextResponse("ok")

    @app.get("/version")
    async def version() -> Response:
        return json_response(discovery.version())

    @app.get("/openapi/v2")
    async def openapi_v2(request: Request) -> Response:
        if openapi.wants_protobuf(request.headers.get("accept", "")):
            return Response(openapi.v2_protobuf(), media_type=openapi.PROTOBUF_V2)
        return Response(openapi.v2_json(), media_type="application/json")

    @app.get("/openapi/v3")
    async def openapi_root() -> Response:
        return json_response(openapi.root())

    @app.get("/openapi/v3/{path:path}")
    async def openapi_gv(path: str) -> Response:
        body = openapi.document_json(path)
        if body is None:
            raise not_found_path(f"/openapi/v3/{path}")
        return Response(body, media_type="application/json")

    @app.websocket("/api/v1/namespaces/{namespace}/pods/{name}/{subresource}")
    async def pod_session(ws: WebSocket, namespace: str, name: str, subresource: str) -> None:
        if subresource not in CONNECT_SUBRESOURCES:
            await status_response(not_found_path(ws.url.path))(ws.scope, ws.receive, ws.send)
            return
        await connect.serve(ws, ws.app.state.cluster, namespace, name, subresource)

    @app.api_route("/api", methods=METHODS)
    @app.api_route("/api/{rest:path}", methods=METHODS)
    async def core(request: Request, rest: str = "") -> Response:
        return await _dispatch(request, "api", rest)

    @app.api_route("/apis", methods=METHODS)
    @app.api_route("/apis/{rest:path}", methods=METHODS)
    async def named(request: Request, rest: str = "") -> Response:
        return await _dispatch(request, "apis", rest)


async def _dispatch(request: Request, prefix: str, rest: str) -> Response:
    target = parse(prefix, rest)
    if isinstance(target, Discovery):
        if request.method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow {request.method} here")
        return json_response(_discovery_doc(prefix, rest, target))
    return await crud.handle(request, _cluster(request), target)


def _discovery_doc(prefix: str, rest: str, d: Discovery) -> dict[str, Any]:
    doc: dict[str, Any] | None
    if prefix == "api" and d.version is None:
        doc = discovery.api_versions()
    elif prefix == "apis" and not d.group:
        doc = discovery.api_group_list()
    elif d.version is None:
        doc = discovery.api_group(d.group)
    else:
        doc = discovery.api_resource_list(d.group, d.version)
    if doc is None:
        raise not_found_path(f"/{prefix}/{rest}")
    return doc


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return status_response(exc)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        reason = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "BadRequest")
        message = "the server could not find the requested resource" if exc.status_code == 404 else str(exc.detail)
        return status_response(ApiError(exc.status_code, reason, message))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("internal error serving %s %s", request.method, request.url.path)
        return status_response(ApiError(500, "InternalError", f"an internal error occurred serving "
                                        f"{request.method} {request.url.path}; see the server log"))
