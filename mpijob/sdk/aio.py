"""`AsyncClient`: the SDK as coroutines, for services and for awaiting many jobs at once.

Truly asynchronous: one `httpx.AsyncClient` (a connection pool on the event loop, no thread per
call) configured from the same kubeconfig the sync client uses — server URL, CA, client
certificate and bearer token come from the `kubernetes` kubeconfig loader, so contexts, exec
plugins and `:`-joined `$KUBECONFIG` lists behave as they do for kubectl. Same methods, same
answers and same exceptions as `Client`; `logs` is an async iterator.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config import load_kube_config

from mpijob.api.mpi_output import RANKS_HEADER
from mpijob.client.api import REQUEST_TIMEOUT, event_time
from mpijob.client.config import Target, resolve
from mpijob.client.errors import from_api_exception
from mpijob.client.logs import Rejoin, parse_line
from mpijob.client.phase import finished, pod_phase
from mpijob.sdk import waiting
from mpijob.sdk.client import JOB_LABEL, MERGE_PATCH, is_job_event, trainjob_object
from mpijob.sdk.errors import (
    InvalidInput,
    MpijobError,
    NotFound,
    ServerUnavailable,
    Timeout,
    from_api_error,
    translate,
)
from mpijob.sdk.trainjob import TrainJob

Obj = dict[str, Any]
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
ROLE_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
CONTAINER = "node"


def _http_client(target: Target) -> tuple[httpx.AsyncClient, k8s.Configuration]:
    """An `httpx.AsyncClient` that authenticates and verifies exactly as the kubeconfig says."""
    conf = k8s.Configuration()
    try:
        load_kube_config(config_file=target.kubeconfig, context=target.context, client_configuration=conf,
                         persist_config=False)
    except Exception as exc:  # the loader raises ConfigException and friends
        raise InvalidInput(f"kubeconfig {target.kubeconfig!r} is unusable: {exc}; pass a valid kubeconfig=",
                           reason="BadRequest") from exc
    verify: ssl.SSLContext | bool
    if not conf.verify_ssl:
        verify = False
    else:
        verify = ssl.create_default_context(cafile=conf.ssl_ca_cert) if conf.ssl_ca_cert else ssl.create_default_context()
        if conf.cert_file:
            verify.load_cert_chain(conf.cert_file, conf.key_file)
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    http = httpx.AsyncClient(base_url=conf.host, verify=verify, timeout=REQUEST_TIMEOUT, limits=limits)
    return http, conf


class AsyncClient:
    """`async with AsyncClient() as c: await c.wait("pi")` — the same cluster choice as `Client`.

    Constructing it resolves the cluster once (and may start the local one), so build it before the
    hot path; every call after that is a coroutine on the event loop."""

    def __init__(self, context: str | None = None, namespace: str | None = None,
                 kubeconfig: str | os.PathLike[str] | None = None) -> None:
        try:
            self.target = resolve(kubeconfig, context, namespace)
        except Exception as exc:
            raise translate(exc) from exc
        self.namespace = self.target.namespace
        self._http, self._conf = _http_client(self.target)

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- transport -------------------------------------------------------------------------------

    def _headers(self, content_type: str = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        auth = self._conf.auth_settings().get("BearerToken")  # also runs a token refresh hook, if any
        if auth and auth.get("value"):
            headers["Authorization"] = str(auth["value"])
        return headers

    async def _request(self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None,
                       content_type: str = "application/json") -> Any:
        try:
            resp = await self._http.request(
                method, path, params={k: v for k, v in (params or {}).items() if v is not None},
                content=None if body is None else json.dumps(body).encode(), headers=self._headers(content_type))
        except httpx.TimeoutException as exc:
            raise Timeout(f"{method} {path}: no answer from {self._conf.host} within {REQUEST_TIMEOUT:g}s",
                          reason="Timeout") from exc
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"cannot reach the API server at {self._conf.host}: {exc}",
                                    reason="ServiceUnavailable") from exc
        if resp.status_code >= 400:
            raise status_error(resp.status_code, resp.reason_phrase, resp.text)
        return resp.json() if resp.content else None

    def _job_path(self, name: str = "") -> str:
        return f"{TRAINER}/namespaces/{self.namespace}/trainjobs" + (f"/{name}" if name else "")

    # -- TrainJobs -------------------------------------------------------------------------------

    async def create(self, job: TrainJob | Obj) -> Obj:
        """Create a TrainJob (a `TrainJob` builder or a manifest dict); returns the stored object."""
        obj = trainjob_object(job)
        ns = (obj.get("metadata") or {}).get("namespace") or self.namespace
        path = f"{TRAINER}/namespaces/{ns}/trainjobs"
        return await self._request("POST", path, {"fieldValidation": "Strict"}, obj)

    async def get(self, name: str) -> Obj:
        """The TrainJob as stored, status included; `NotFound` when it does not exist."""
        return await self._request("GET", self._job_path(name))

    async def list(self, label_selector: str | None = None) -> list[Obj]:
        """The namespace's TrainJobs, optionally filtered by a label selector."""
        out = await self._request("GET", self._job_path(), {"labelSelector": label_selector})
        return [*((out or {}).get("items") or [])]

    async def delete(self, name: str) -> None:
        """Delete a TrainJob; its pods, keys and workload go with it."""
        await self._request("DELETE", self._job_path(name))

    async def suspend(self, name: str) -> Obj:
        """Stop a TrainJob and free its quota (`spec.suspend=true`)."""
        return await self._request("PATCH", self._job_path(name), body={"spec": {"suspend": True}},
                                   content_type=MERGE_PATCH)

    async def resume(self, name: str) -> Obj:
        """Put a suspended TrainJob back in its queue (`spec.suspend=false`)."""
        return await self._request("PATCH", self._job_path(name), body={"spec": {"suspend": False}},
                                   content_type=MERGE_PATCH)

    async def _pods(self, name: str) -> list[Obj]:
        out = await self._request("GET", f"/api/v1/namespaces/{self.namespace}/pods",
                                  {"labelSelector": f"{JOB_LABEL}={name}"})
        return sorted((out or {}).get("items") or [], key=lambda p: p["metadata"]["name"])

    async def wait(self, name: str, for_: str = "Complete", timeout: float | None = 600,
                   poll: float = waiting.DEFAULT_POLL) -> Obj:
        """Await `Complete`, `Failed`, `Running` or `Finished`; returns the TrainJob. Raises `JobFailed`
        when it fails while awaiting Complete or Running, `Timeout` after `timeout` seconds."""
        waiting.check_for(for_)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.get(name)
            pods = await self._pods(name) if waiting.needs_pods(for_) else None
            if waiting.reached(for_, job, pods):
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout(waiting.timeout_message(name, for_, timeout or 0, job, pods), reason="Timeout",
                              trainjob=job)
            await asyncio.sleep(poll)

    # -- logs and events ---------------------------------------------------------------------------

    async def _launcher(self, name: str, follow: bool, timeout: float | None) -> str:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.get(name)
            pods = await self._pods(name)
            launcher = next((p for p in pods if (p["metadata"].get("labels") or {}).get(ROLE_LABEL) == "launcher"),
                            None)
            started = launcher is not None and pod_phase(launcher) in ("Running", "Succeeded", "Failed")
            if launcher is not None and (started or not follow or finished(job) is not None):
                return str(launcher["metadata"]["name"])
            if not follow or finished(job) is not None:
                raise NotFound(f"trainjob {name!r} has no launcher pod (yet); pass follow=True to wait for it",
                               code=404, reason="NotFound")
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout(f"trainjob {name!r}: launcher not started after {timeout:g}s", reason="Timeout")
            await asyncio.sleep(waiting.DEFAULT_POLL)

    async def logs(self, name: str, follow: bool = False, pod: str | None = None, rank: int | None = None,
                   timeout: float | None = 600) -> AsyncIterator[str]:
        """`async for line in c.logs(name, follow=True)`: the launcher's (or `pod`'s) log lines as the
        ranks printed them; `rank=N` keeps what rank N printed."""
        await self.get(name)
        target = pod or await self._launcher(name, follow, timeout)
        path = f"/api/v1/namespaces/{self.namespace}/pods/{target}/log"
        params = {"container": CONTAINER, "timestamps": "true", **({"follow": "true"} if follow else {})}
        try:
            async with self._http.stream("GET", path, params=params, headers={**self._headers(), RANKS_HEADER: "true"},
                                         timeout=httpx.Timeout(REQUEST_TIMEOUT, read=None if follow else
                                                               REQUEST_TIMEOUT)) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise status_error(resp.status_code, resp.reason_phrase, resp.text)
                join, seq, last = Rejoin(), 0, 0
                ranked = resp.headers.get(RANKS_HEADER, "").lower() == "true"
                async for raw in resp.aiter_lines():
                    pieces = parse_line(target, raw, seq, last, ranked)
                    seq, last = seq + 1, pieces[-1].ns
                    for line in join.feed(pieces):
                        if rank is None or line.rank == rank:
                            yield line.text
                for line in join.flush():
                    if rank is None or line.rank == rank:
                        yield line.text
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"log stream of {target} from {self._conf.host} broke: {exc}",
                                    reason="ServiceUnavailable") from exc

    async def events(self, name: str) -> list[Obj]:
        """Events about the TrainJob, its pods and its Workload, oldest first."""
        pods = {p["metadata"]["name"] for p in await self._pods(name)}
        out = await self._request("GET", f"/api/v1/namespaces/{self.namespace}/events") or {}
        return sorted((e for e in out.get("items") or [] if is_job_event(e, name, pods)), key=event_time)


def status_error(code: int, phrase: str, text: str) -> MpijobError:
    """The SDK exception for an HTTP error answer (a `Status` body, or plain text)."""
    exc = ApiException(status=code, reason=phrase)
    exc.body = text
    return from_api_error(from_api_exception(exc))
