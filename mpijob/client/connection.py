"""The client's one HTTP transport: `Connection` runs the core's operations with `httpx.Client`,
`AsyncConnection` with `httpx.AsyncClient`. Everything else (paths, requests, answers, waits) is the
I/O-free core's (`mpijob.client.core`); these classes only send, sleep and stream.

Both are configured from a kubeconfig (`mpijob.client.kubeconfig`): the server, its CA or
`insecure-skip-tls-verify`, `tls-server-name`, a client certificate, and a bearer token (static, from
`tokenFile`, or from an exec plugin, fetched again once when the server answers 401). Transport
failures become `Unreachable`, a request that gets no answer in time a `TimeoutError`.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import sys
import time
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

if "httpx" not in sys.modules:  # httpx's own command line (click, rich, pygments: ~0.1 s) is never used here
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # httpx/__init__ then skips it (ImportError)
    import httpx

    del sys.modules["httpx._main"]
else:
    import httpx

from mpijob.api import Obj
from mpijob.client import core
from mpijob.client.config import ClusterChoice
from mpijob.client.core import REQUEST_TIMEOUT, Call, Op, Sleep
from mpijob.client.errors import Unreachable
from mpijob.client.kubeconfig import Credentials, ExecPlugin, load_client_certificate

T = TypeVar("T")
LOOPBACK = {"all://127.0.0.1": None, "all://localhost": None, "all://[::1]": None}  # never proxied (as in Go)
# `logs -f` follows every pod of a job at once, each stream holding a connection for its pod's life (101 for
# a 100-node job): under httpx's default cap of 100 the next stream, and the poll for new pods, waited for
# one that never came free, and after 30 s the command failed having printed nothing. Uncapped, a command
# holds what it follows plus one; only 20 idle connections are kept.
STREAMS_UNCAPPED = httpx.Limits(max_connections=None, max_keepalive_connections=20)


class KubeAuth(httpx.Auth):
    """The kubeconfig user's credentials on every request; an exec plugin's are fetched again once
    when the server answers 401 (client-go's rule), a `tokenFile` is read for each request."""

    def __init__(self, creds: Credentials, tls: Any) -> None:
        self.creds = creds
        self.tls = tls  # the ssl context an exec plugin's client certificate is loaded into
        self.plugin = ExecPlugin(creds.exec, creds.server, creds.cluster, creds.kubeconfig) if creds.exec else None
        self._provider_token: str | None = None
        self._loaded_cert: bytes | None = None

    def _authorization(self, refresh: bool = False) -> str | None:
        creds = self.creds
        token = creds.static_token()
        if token:
            return f"Bearer {token}"
        if creds.username and creds.password:
            return "Basic " + base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
        if self.plugin is not None:
            result = self.plugin.credential(refresh)
            if result.cert and result.key and result.cert != self._loaded_cert and not isinstance(self.tls, bool):
                load_client_certificate(self.tls, result.cert, result.key)
                self._loaded_cert = result.cert
            return f"Bearer {result.token}" if result.token else None
        if creds.auth_provider:
            if self._provider_token is None or refresh:
                self._provider_token = creds.auth_provider_token() or ""
            return f"Bearer {self._provider_token}" if self._provider_token else None
        return None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        value = self._authorization()
        if value:
            request.headers["Authorization"] = value
        response = yield request
        if response.status_code == 401 and (self.plugin is not None or self.creds.auth_provider):
            value = self._authorization(refresh=True)
            if value:
                request.headers["Authorization"] = value
                yield request


# client-go retries a request that changes nothing when its connection failed before any answer (a reset, an
# EOF, a TLS handshake a loaded server cut short), with backoff; so do both connections. Not a refused
# connection (no server: said at once) nor a read that timed out (it waited its whole bound already).
RETRY_DELAYS = (0.2, 0.8, 2.0)  # seconds before each retry
IDEMPOTENT = frozenset({"GET", "HEAD"})


def _retry_delay(call: Call, exc: httpx.TransportError, attempt: int) -> float | None:
    """How long to wait before sending `call` again after `exc` on its `attempt`-th try; None: do not."""
    if call.method not in IDEMPOTENT or attempt >= len(RETRY_DELAYS) or isinstance(exc, httpx.ReadTimeout):
        return None
    said = _transport_error(exc, "")
    return None if isinstance(said, Unreachable) and "connection refused" in str(said) else RETRY_DELAYS[attempt]


def _transport_error(exc: httpx.TransportError, url: str) -> Exception:
    """`Unreachable` naming the innermost reason, or a `TimeoutError` for an answer that never came."""
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return TimeoutError(f"no answer from the API server at {url} within {REQUEST_TIMEOUT:g}s ({exc})")
    inner: BaseException = exc
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__  # type: ignore[assignment]  # the loop's test: one is set
    text = str(inner) or str(exc) or type(exc).__name__
    if "Connection refused" in text or isinstance(inner, ConnectionRefusedError):
        return Unreachable(url, "connection refused (is the server running? `mpijob server status`)")
    if "CERTIFICATE_VERIFY_FAILED" in text or "SSL" in type(inner).__name__:
        return Unreachable(url, f"TLS verification failed ({text}); check certificate-authority-data in the "
                           "kubeconfig")
    return Unreachable(url, text)


class _Base:
    """What both connections hold: the chosen cluster, its namespace and how to build a request."""

    def __init__(self, choice: ClusterChoice) -> None:
        self.choice = choice
        self.namespace = choice.namespace
        self.creds = choice.credentials()
        self.url = self.creds.server
        self._tls = self.creds.ssl_context()
        self._auth = KubeAuth(self.creds, self._tls)
        self._extensions = {"sni_hostname": self.creds.tls_server_name} if self.creds.tls_server_name else {}

    def _settings(self) -> dict[str, Any]:
        return {"base_url": self.url, "verify": self._tls, "auth": self._auth, "timeout": REQUEST_TIMEOUT,
                "mounts": LOOPBACK}

    def _request(self, http: httpx.Client | httpx.AsyncClient, call: Call, timeout: Any = None) -> httpx.Request:
        return http.build_request(call.method, call.path, params=tuple(call.params()), content=call.content(),
                                  headers=call.header_map(), extensions=dict(self._extensions),
                                  timeout=timeout if timeout is not None else REQUEST_TIMEOUT)


class Connection(_Base):
    """A synchronous connection to one cluster (`httpx.Client`); cheap to keep for a command's life.

    `run(op)` runs one operation of the core; the methods below are the object operations the CLI
    uses most, run here in the connection's namespace."""

    def __init__(self, choice: ClusterChoice) -> None:
        super().__init__(choice)
        self._http = httpx.Client(**self._settings(), limits=STREAMS_UNCAPPED)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, call: Call) -> Any:
        for attempt in itertools.count():
            try:
                resp = self._http.send(self._request(self._http, call))
                break
            except httpx.TransportError as exc:
                delay = _retry_delay(call, exc, attempt)
                if delay is None:
                    raise _transport_error(exc, self.url) from exc
                time.sleep(delay)
        return call.answer(resp.status_code, resp.reason_phrase, resp.content)

    def run(self, op: Op[T] | Call) -> T:
        """Run an operation: send its calls, sleep its pauses, throw a failed call back into it."""
        gen = iter(op)
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
                continue
            try:
                value = self.send(step)
            except Exception as exc:  # noqa: BLE001 — the operation decides; it re-raises what it does not handle
                error = exc

    @contextmanager
    def stream(self, call: Call, follow: bool = False) -> Iterator[tuple[Iterator[bytes], httpx.Headers]]:
        """An answer's body as it arrives (raw chunks) and its headers; a followed stream has no read timeout."""
        timeout = httpx.Timeout(REQUEST_TIMEOUT, read=None) if follow else None
        try:
            resp = self._http.send(self._request(self._http, call, timeout), stream=True)
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.url) from exc
        try:
            if resp.status_code >= 400:
                resp.read()
                call.answer(resp.status_code, resp.reason_phrase, resp.content)
            yield self._chunks(resp), resp.headers
        finally:
            resp.close()

    def _chunks(self, resp: httpx.Response) -> Iterator[bytes]:
        try:
            yield from resp.iter_bytes()
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.url) from exc

    # -- the object operations, in this connection's namespace ---------------------------------------

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    def create(self, obj: Obj, namespace: str | None = None, dry_run: bool = False) -> Obj:
        return self.run(core.create(obj, self._ns(namespace), dry_run))

    def get_trainjob(self, name: str, namespace: str | None = None) -> Obj:
        return self.run(core.get_trainjob(self._ns(namespace), name))

    def list_trainjobs(self, namespace: str | None = None, label_selector: str | None = None,
                       all_namespaces: bool = False) -> list[Obj]:
        return self.run(core.list_trainjobs(self._ns(namespace), label_selector, all_namespaces))

    def delete_trainjob(self, name: str, namespace: str | None = None) -> Obj:
        return self.run(core.delete_trainjob(self._ns(namespace), name))

    def list_cluster_runtimes(self) -> list[Obj]:
        return self.run(core.list_cluster_runtimes())

    def list_runtimes(self, namespace: str | None = None, all_namespaces: bool = False) -> list[Obj]:
        return self.run(core.list_runtimes(self._ns(namespace), all_namespaces))

    def runtime_for(self, trainjob: Obj) -> Obj | None:
        return self.run(core.runtime_for(trainjob, self.namespace))

    def list_pods(self, namespace: str | None = None, label_selector: str | None = None,
                  field_selector: str | None = None, all_namespaces: bool = False) -> list[Obj]:
        return self.run(core.list_pods(self._ns(namespace), label_selector, field_selector, all_namespaces))

    def get_pod(self, name: str, namespace: str | None = None) -> Obj:
        return self.run(core.get_pod(self._ns(namespace), name))

    def job_pods(self, job: str, namespace: str | None = None, role: str | None = None) -> list[Obj]:
        return self.run(core.job_pods(self._ns(namespace), job, role))

    def events_for(self, kind: str, name: str, namespace: str | None = None) -> list[Obj]:
        return self.run(core.events_for(self._ns(namespace), kind, name))


class AsyncConnection(_Base):
    """The same connection on the event loop (`httpx.AsyncClient`: a pool, no thread per call)."""

    def __init__(self, choice: ClusterChoice) -> None:
        super().__init__(choice)
        self._http = httpx.AsyncClient(**self._settings(),
                                       limits=httpx.Limits(max_connections=100, max_keepalive_connections=20))

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call) -> Any:
        for attempt in itertools.count():
            try:
                resp = await self._http.send(self._request(self._http, call))
                break
            except httpx.TransportError as exc:
                delay = _retry_delay(call, exc, attempt)
                if delay is None:
                    raise _transport_error(exc, self.url) from exc
                await asyncio.sleep(delay)
        return call.answer(resp.status_code, resp.reason_phrase, resp.content)

    async def run(self, op: Op[T] | Call) -> T:
        """`Connection.run` on the event loop."""
        gen = iter(op)
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, Sleep):
                import asyncio  # here: asyncio costs the sync CLI ~10 ms to import

                await asyncio.sleep(step.seconds)
                continue
            try:
                value = await self.send(step)
            except Exception as exc:  # noqa: BLE001 — as in Connection.run
                error = exc

    @asynccontextmanager
    async def stream(self, call: Call,
                     follow: bool = False) -> AsyncIterator[tuple[AsyncIterator[bytes], httpx.Headers]]:
        """`Connection.stream` on the event loop."""
        timeout = httpx.Timeout(REQUEST_TIMEOUT, read=None) if follow else None
        try:
            resp = await self._http.send(self._request(self._http, call, timeout), stream=True)
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.url) from exc
        try:
            if resp.status_code >= 400:
                await resp.aread()
                call.answer(resp.status_code, resp.reason_phrase, resp.content)
            yield self._chunks(resp), resp.headers
        finally:
            await resp.aclose()

    async def _chunks(self, resp: httpx.Response) -> AsyncIterator[bytes]:
        try:
            async for chunk in resp.aiter_bytes():
                yield chunk
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.url) from exc
