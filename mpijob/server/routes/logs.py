"""`GET .../pods/{name}/log`: container logs as `text/plain`, optionally followed.

A followed stream ends when the container has terminated (its `containerStatuses[].state.terminated`
is set), the pod is deleted, or the server stops — what `kubectl logs -f` and the Kubeflow SDK
expect. The lines are what the program printed; the mpijob client's `RANKS_HEADER` adds each line's
MPI rank beside it (`mpijob.api.trainer.mpi_output`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mpijob.api.core import errors
from mpijob.api.trainer.mpi_output import RANKS_HEADER
from mpijob.server.http import Disconnect, parse_bool, parse_int
from mpijob.server.routes.paths import Target
from mpijob.server.state import Cluster

TEXT = "text/plain"


def _containers(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [c.get("name", "") for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])]


def pick_container(pod: dict[str, Any], requested: str | None) -> str:
    """The requested container, or the only one; errors worded as kube-apiserver words them."""
    name = pod["metadata"]["name"]
    containers = _containers(pod)
    main = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    if requested:
        if requested not in containers:
            raise errors.bad_request(
                f"container {requested} is not valid for pod {name}: choose one of: [{' '.join(containers)}]"
            )
        return requested
    if len(main) == 1:
        return main[0]
    if not main:
        raise errors.bad_request(f"pod {name} has no containers")
    raise errors.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]"
    )


def terminated(pod: dict[str, Any] | None, container: str) -> bool:
    if pod is None:
        return True
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("name") == container:
                return bool((cs.get("state") or {}).get("terminated"))
    return status.get("phase") in ("Succeeded", "Failed")


async def serve(request: Request, cluster: Cluster, t: Target) -> Response:
    assert t.name is not None
    ns, name = t.namespace or "", t.name
    q = request.query_params
    pod = cluster.store.get(t.res, ns, name)
    container = pick_container(pod, q.get("container"))
    follow = parse_bool(q.get("follow"), "follow")
    parse_bool(q.get("previous"), "previous")  # validated, then ignored: containers do not restart
    options: dict[str, Any] = {
        "tail_lines": parse_int(q.get("tailLines"), "tailLines"),
        "since_seconds": parse_int(q.get("sinceSeconds"), "sinceSeconds"),
        "timestamps": parse_bool(q.get("timestamps"), "timestamps"),
        "ranks": request.headers.get(RANKS_HEADER, "").lower() == "true",
    }
    headers = {RANKS_HEADER: "true"} if options["ranks"] else None
    limit = parse_int(q.get("limitBytes"), "limitBytes")
    for key, value in (("tailLines", options["tail_lines"]), ("sinceSeconds", options["since_seconds"]),
                       ("limitBytes", limit)):
        if value is not None and value < (0 if key == "tailLines" else 1):
            raise errors.bad_request(f"invalid {key}={value}: must be {'>= 0' if key == 'tailLines' else '> 0'}")
    logs = cluster.logs
    if not follow:
        data = logs.read(ns, name, container, limit_bytes=limit, **options)
        return Response(data, media_type=TEXT, headers=headers)

    async def chunks() -> AsyncIterator[bytes]:
        sent = 0
        async with Disconnect(request) as client:
            def done() -> bool:  # a client that has gone ends the stream at once, drained or not
                return client.gone or cluster.stopping.is_set() or terminated(
                    cluster.store.try_get(t.res, ns, name), container)

            async for chunk in logs.follow(ns, name, container, done=done, **options):
                if client.gone:
                    return
                if limit is not None:
                    chunk = chunk[: max(limit - sent, 0)]
                if chunk:
                    sent += len(chunk)
                    yield chunk
                if limit is not None and sent >= limit:
                    return

    return StreamingResponse(chunks(), media_type=TEXT, headers=headers)
