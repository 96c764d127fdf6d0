"""mpijob.io's job records: the job history (`store/history.py`), read-only, as `mpijob history` reads it.

    GET /apis/mpijob.io/v1alpha1/jobrecords                          every namespace's
    GET /apis/mpijob.io/v1alpha1/namespaces/{namespace}/jobrecords   one namespace's

Authorized like any list (`list` on `jobrecords` of group `mpijob.io`, in the namespace, or cluster-wide
for every namespace's): the bootstrap policy aggregates that into `view`, and so into `edit` and
`admin`, so whoever may look at a namespace's jobs may read its history, and only who may list across
namespaces sees all of it. Query parameters: `user` (who created the job), `since` (RFC 3339: jobs not
finished, or finished at or after it), `limit` (the newest N, default 1000; 0 for all). Items come oldest
first; `metadata.remainingItemCount` counts the older ones that matched but were left out.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import Obj, names
from mpijob.api.core import errors
from mpijob.api.core.durations import parse_time
from mpijob.server.http import json_response, parse_int
from mpijob.store.history import JobRecord, Query, open_history

API_VERSION = f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"
BASE = f"/apis/{API_VERSION}"
DEFAULT_LIMIT = 1000

router = APIRouter()


def _time(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_object(r: JobRecord, now: float) -> Obj:
    """One record as the API serves it: a `JobRecord`, flat like an Event (no spec, no status)."""
    run = r.run(now)
    return {
        "apiVersion": API_VERSION, "kind": names.JOB_RECORD_KIND,
        "metadata": {"name": r.name, "namespace": r.namespace, "uid": r.uid, "creationTimestamp": _time(r.submitted)},
        "jobKind": r.kind, "requester": r.requester, "runtime": r.runtime, "nodes": r.nodes,
        "procsPerNode": r.procs_per_node,
        "gpus": r.gpus, "submitted": _time(r.submitted), "admitted": _time(r.admitted), "started": _time(r.started),
        "finished": _time(r.finished), "waitSeconds": round(r.wait(now), 3), "runSeconds": round(run, 3),
        "state": r.state, "reason": r.reason, "failure": r.failure, "message": r.message,
        "cpuHours": None if r.cpu_seconds is None else round(r.cpu_seconds / 3600, 6),
        "gpuHours": round(r.gpus * run / 3600, 6), "memoryPeakBytes": r.memory_peak,
    }


def _query(request: Request, namespace: str | None) -> Query:
    q = request.query_params
    since = None
    if q.get("since"):
        when = parse_time(q["since"])
        if when is None:
            raise errors.bad_request(f"invalid value for query parameter since={q['since']!r}: use an RFC 3339 time")
        since = when.timestamp()
    limit = parse_int(q.get("limit"), "limit")
    return Query((namespace,) if namespace is not None else None, q.get("user") or None, since,
                 DEFAULT_LIMIT if limit is None else max(limit, 0))


def _list(request: Request, namespace: str | None) -> Response:
    query = _query(request, namespace)
    records, total = open_history(request.app.state.cluster.home.history).query(query)
    now = time.time()
    meta: Obj = {"resourceVersion": ""}
    if total > len(records):
        meta["remainingItemCount"] = total - len(records)
    return json_response({"apiVersion": API_VERSION, "kind": f"{names.JOB_RECORD_KIND}List", "metadata": meta,
                          "items": [record_object(r, now) for r in records]})


@router.get(f"{BASE}/{names.JOB_RECORDS}")
async def all_namespaces(request: Request) -> Response:
    return _list(request, None)


@router.get(f"{BASE}/namespaces/{{namespace}}/{names.JOB_RECORDS}")
async def one_namespace(request: Request, namespace: str) -> Response:
    return _list(request, namespace)


@router.api_route(f"{BASE}/{names.JOB_RECORDS}", methods=["POST", "PUT", "PATCH", "DELETE"])
@router.api_route(f"{BASE}/namespaces/{{namespace}}/{names.JOB_RECORDS}", methods=["POST", "PUT", "PATCH", "DELETE"])
async def read_only(request: Request) -> Response:
    raise errors.method_not_allowed(f"the server does not allow {request.method} on {names.JOB_RECORDS}."
                                    f"{names.MPIJOB_GROUP}: the job history is written by the cluster alone")
