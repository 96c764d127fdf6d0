"""Trainer's status server, served by the API server: a job's pods POST their progress (Trainer's
`UpdateTrainJobStatusRequest`, `{"trainerStatus": {...}}`) to `names.trainjob_status_path`, and it is
written to the TrainJob's `status.trainerStatus`.

Upstream, the TrainJobStatus feature runs this endpoint in the Trainer controller (`pkg/statusserver`,
port 10443 behind the webhook's certificate) and accepts a projected ServiceAccount token whose audience
names the one TrainJob (`names.trainjob_status_audience`). Here the API server serves the same path for
POST only (kube-apiserver answers POST on a status subresource 405, so nothing of the API is shadowed),
with the API server's own TLS and authentication:

* authentication (`server/auth.py`) accepts a job's status token for this one request and no other, and
  records the pod it is bound to (`STATUS_POD`);
* authorization (`server/authz.py` asks `authorize`) lets such a token through when its pod belongs to
  that very TrainJob (upstream checks only the namespace; the local pods share a machine), and anyone
  else when RBAC lets them `update` `trainjobs/status`.

The answers are upstream's: 200 with the request as parsed (also when it carries no trainerStatus, which
writes nothing), 404 for a missing TrainJob, 413 past 64 KiB, 422 naming a field the CRD would refuse.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import names
from mpijob.api.core import errors, rbac
from mpijob.api.core.resources import PODS, TRAINJOBS
from mpijob.api.trainer.progress import trainer_status
from mpijob.server.http import JSON, decode_body, json_response
from mpijob.store.objects import Store

STATUS_POD = "mpijob.status_pod"  # scope key: the pod a job's status token is bound to
_PREFIX = f"/apis/{names.TRAINER_API_VERSION}/namespaces/"

router = APIRouter()


def target(method: str, path: str) -> tuple[str, str] | None:
    """(namespace, name) of the TrainJob a request reports progress for; None for any other request."""
    if method != "POST" or not path.startswith(_PREFIX):
        return None
    parts = path[len(_PREFIX):].split("/")
    if len(parts) != 4 or not parts[0] or not parts[2] or (parts[1], parts[3]) != (TRAINJOBS.plural, "status"):
        return None
    return parts[0], parts[2]


def update_attributes(attrs: rbac.Attributes) -> rbac.Attributes:
    """What RBAC is asked for a report from anyone but the job's own pods: `update` on `trainjobs/status`
    (a report replaces part of the status; kube's verb for POST, `create`, has no meaning there)."""
    return replace(attrs, verb="update")


def authorize(store: Store, namespace: str, name: str, pod: str) -> rbac.Decision:
    """A status token may report for TrainJob namespace/name only while its pod is one of that job's (owned
    by the TrainJob as it exists now, by uid)."""
    job = store.try_get(TRAINJOBS, namespace, name)
    found = store.try_get(PODS, namespace, pod) if pod else None
    owners = {ref.get("uid") for ref in ((found or {}).get("metadata") or {}).get("ownerReferences") or []}
    if job is not None and job["metadata"].get("uid") in owners:
        return rbac.Decision(True)
    return rbac.Decision(False, f"the token's pod {pod or '(none)'} is not a pod of TrainJob {namespace}/{name}")


async def _body(request: Request) -> object:
    """The request's JSON, at most 64 KiB (the status server's limit)."""
    too_large = errors.ApiError(413, "RequestEntityTooLarge", "Payload too large")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > names.TRAINER_STATUS_MAX_BODY:
        raise too_large
    raw = await request.body()
    if len(raw) > names.TRAINER_STATUS_MAX_BODY:
        raise too_large
    return decode_body(raw, JSON)


@router.post(f"{_PREFIX}{{namespace}}/{TRAINJOBS.plural}/{{name}}/status")
async def report(request: Request, namespace: str, name: str) -> Response:
    """Write the report to the TrainJob's `status.trainerStatus` (replacing the last one, as upstream's
    server-side apply of its field manager does), whatever its resourceVersion: the last report wins."""
    status = trainer_status(await _body(request), name)
    store: Store = request.app.state.cluster.store
    job = store.try_get(TRAINJOBS, namespace, name)
    if job is None:
        raise errors.not_found(TRAINJOBS.plural, name, names.TRAINER_GROUP)
    if status is not None:
        job.setdefault("status", {})["trainerStatus"] = status
        job["metadata"].pop("resourceVersion", None)
        store.update(TRAINJOBS, job, status=True)
    return json_response({"trainerStatus": status})
