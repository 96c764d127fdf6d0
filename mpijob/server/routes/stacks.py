"""Every rank's current stack of a running TrainJob, merged (`mpijob debug stacks`, the dashboard's Stacks tab;
docs/debugging.md):

    POST /dashboard/api/namespaces/{namespace}/trainjobs/{name}/stacks

Kubernetes has no API for this, so it lives with the other answers of that kind, under the dashboard's API,
whose handlers authorize each answer themselves (`dashboard.is_dashboard`); a bearer token works there as a
session does. Reading a process's stack is what a shell in its pod could do, so it takes what `kubectl exec`
takes: `create` on `pods/exec` in the job's namespace, else kube's 403. It is a POST (every rank is paused
for a moment, which is more than a read), so the audit log records who asked, as it records every write.
Answers: 200 with the merged stacks (`api/trainer/stacks.dump`), 404 for a TrainJob that does not exist,
409 for one with no rank running now (waiting, starting, ended), 503 on a server without controllers.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import names
from mpijob.api.core import errors, rbac
from mpijob.api.core.resources import PODS, TRAINJOBS
from mpijob.api.trainer import stacks
from mpijob.server import audit
from mpijob.server.http import json_response
from mpijob.server.state import Cluster
from mpijob.store.authorizer import enabled, index
from mpijob.store.objects import now

PATH = f"{names.DASHBOARD_API}/namespaces/{{namespace}}/{TRAINJOBS.plural}/{{name}}/stacks"
AUDIT_ANNOTATION = f"{names.MPIJOB_GROUP}/stacks"  # on the request's audit Event: the ranks read
EXEC = "exec"

router = APIRouter()


def _authorize(request: Request, cluster: Cluster, namespace: str) -> None:
    user = request.scope.get("user")
    if not isinstance(user, rbac.User):
        raise errors.unauthorized()
    attrs = rbac.Attributes(user, "create", True, api_group=PODS.group, api_version=PODS.version,
                            resource=PODS.plural, subresource=EXEC, namespace=namespace)
    if not enabled():
        return
    decision = index(cluster.store).authorizer().authorize(attrs)
    if not decision.allowed:
        raise rbac.forbidden(attrs, decision.reason or "reading a job's stacks takes what `kubectl exec` takes")


def _not_running(job: dict[str, Any], name: str, run: bool) -> errors.ApiError:
    """The 409 of a job with no rank to read; `run`: its pods run (mpirun has not started its ranks yet, or
    they have all ended)."""
    conditions = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    ended = next((c["type"] for c in conditions if c.get("type") in (names.COMPLETE, names.FAILED)), "")
    suspended = any(c.get("type") == names.SUSPENDED for c in conditions)
    why = (f"it has ended ({ended})" if ended else "it is suspended" if suspended
           else "its pods run, but no MPI rank does (mpirun has not started them yet, or they have all ended)"
           if run else "it has not started (it waits in its queue, or its pods are starting)")
    return errors.conflict(TRAINJOBS.plural, name, f"no rank of it runs now: {why}", names.TRAINER_GROUP)


@router.post(PATH)
async def read_stacks(request: Request, namespace: str, name: str) -> Response:
    cluster: Cluster = request.app.state.cluster
    _authorize(request, cluster, namespace)
    job = cluster.store.try_get(TRAINJOBS, namespace, name)
    if job is None:
        raise errors.not_found(TRAINJOBS.plural, name, names.TRAINER_GROUP)
    if cluster.manager is None:
        raise errors.ApiError(503, "ServiceUnavailable", "this server runs without its controllers: it runs no job")
    started, collected = time.monotonic(), now()
    found = await cluster.controllers.stacks(cluster.manager, job["metadata"]["uid"])
    if not found:  # no run (None), or one whose ranks have not started or have all ended ([])
        raise _not_running(job, name, found is not None)
    seconds = time.monotonic() - started
    audit.annotate(request.scope, AUDIT_ANNOTATION, f"{len(found)} ranks in {seconds:.2f}s")
    return json_response(stacks.dump(namespace, name, found, seconds, collected))
