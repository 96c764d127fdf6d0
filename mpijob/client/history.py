"""The job history (mpijob.io's `jobrecords`, served by the local cluster: docs/history.md), as
`mpijob history` asks for it."""

from __future__ import annotations

from datetime import UTC, datetime

from mpijob.api import Obj, names
from mpijob.client.core import Call, Op

BASE = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"


def list_records(namespace: str | None, user: str | None = None, since: datetime | None = None,
                 limit: int = 0) -> Op[Obj]:
    """A `JobRecordList`: one namespace's records (None: every namespace's), created by `user`, of jobs
    unfinished or finished since `since`, the newest `limit` (0: all), oldest first."""
    where = f"namespaces/{namespace}/" if namespace is not None else ""
    query = {"user": user, "limit": limit,
             "since": since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if since else None}
    return (yield Call("GET", f"{BASE}/{where}{names.JOB_RECORDS}", query=query))
