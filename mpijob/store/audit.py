"""The audit log: kube-apiserver's `audit.k8s.io/v1` `Event`s, one JSON object a line, and reading it back.

Written at level `Metadata`, as kube-apiserver's `--audit-policy-file` with `level: Metadata` writes
them: who (user, groups, source IP, user agent), what (verb, `objectRef`, request URI), when
(`requestReceivedTimestamp`, `stageTimestamp`) and the answer's code (`responseStatus`). Never a
request or response body (so never a Secret's data) and never a header (so never a bearer token).
The server's middleware (`mpijob.server.audit`) writes one Event per mutating or denied request; the
Trainer controller writes one when a TrainJob finishes (`trainjob_finished`). Both live in one process
and share one `AuditLog` per file (`open_log`).

The file (`Home.audit_log`) is created with mode 0600 and rotated as kube-apiserver's
`--audit-log-maxsize`/`--audit-log-maxbackup` rotate theirs: once a write would take it past
`MAX_BYTES`, it becomes `audit.log.1` (older backups shift up, the one past `BACKUPS` is dropped) and a
new file starts. `read` walks the backups, oldest first, then the current file.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time
from mpijob.api.core.resources import TRAINJOBS

log = logging.getLogger(__name__)

MAX_BYTES = 100 * 1024 * 1024  # kube-apiserver's --audit-log-maxsize=100 (MB)
BACKUPS = 5  # --audit-log-maxbackup
FILE_MODE = 0o600
STATUS_SUBRESOURCE = "status"


def timestamp(t: datetime | None = None) -> str:
    """RFC 3339 with microseconds, as kube-apiserver writes an audit Event's `MicroTime`s."""
    return (t or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class ObjectRef:
    """An Event's `objectRef`; empty fields are left out, as kube's `omitempty` leaves them."""

    resource: str
    namespace: str = ""
    name: str = ""
    api_group: str = ""
    api_version: str = ""
    subresource: str = ""
    uid: str = ""
    resource_version: str = ""

    def to_dict(self) -> dict[str, str]:
        fields = {"resource": self.resource, "namespace": self.namespace, "name": self.name, "uid": self.uid,
                  "apiGroup": self.api_group, "apiVersion": self.api_version,
                  "resourceVersion": self.resource_version, "subresource": self.subresource}
        return {k: v for k, v in fields.items() if v}


def user_info(name: str, uid: str = "", groups: Sequence[str] = ()) -> dict[str, Any]:
    """`authentication.k8s.io/v1` UserInfo; `{}` for a request that did not authenticate (a 401), as
    kube-apiserver logs one."""
    if not name:
        return {}
    out: dict[str, Any] = {"username": name}
    if uid:
        out["uid"] = uid
    if groups:
        out["groups"] = list(groups)
    return out


def response_status(code: int, reason: str = "", message: str = "") -> dict[str, Any]:
    """A `meta/v1` Status as an Event's `responseStatus` carries it: the code, and for a failure its
    reason and (when given) message."""
    out: dict[str, Any] = {"metadata": {}, "code": code}
    if code >= 400:
        out["status"] = "Failure"
        if message:
            out["message"] = message
        if reason:
            out["reason"] = reason
    return out


def event(*, verb: str, request_uri: str, user: Mapping[str, Any], code: int, received: str,
          object_ref: ObjectRef | None = None, audit_id: str | None = None, source_ips: Sequence[str] = (),
          user_agent: str = "", stage: str = names.AUDIT_STAGE_COMPLETE, reason: str = "", message: str = "",
          annotations: Mapping[str, str] | None = None, completed: str | None = None) -> dict[str, Any]:
    """One `audit.k8s.io/v1` Event at level Metadata, its keys in kube-apiserver's order."""
    ev: dict[str, Any] = {
        "kind": "Event", "apiVersion": names.AUDIT_API_VERSION, "level": names.AUDIT_LEVEL_METADATA,
        "auditID": audit_id or str(uuid.uuid4()), "stage": stage, "requestURI": request_uri, "verb": verb,
        "user": dict(user),
    }
    if source_ips:
        ev["sourceIPs"] = list(source_ips)
    if user_agent:
        ev["userAgent"] = user_agent
    if object_ref is not None:
        ev["objectRef"] = object_ref.to_dict()
    ev["responseStatus"] = response_status(code, reason, message)
    ev["requestReceivedTimestamp"] = received
    ev["stageTimestamp"] = completed or timestamp()
    if annotations:
        ev["annotations"] = dict(annotations)
    return ev


def requester(obj: Obj) -> str:
    """Who created a TrainJob (the server sets `names.ANNOTATION_REQUESTER` at creation); "" if unknown."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_REQUESTER, "")
    return value if isinstance(value, str) else ""


def trainjob_finished(tj: Obj, condition: str, reason: str) -> dict[str, Any]:
    """The Event of a TrainJob's end (`Complete` or `Failed`), written by the Trainer controller.

    It is the audit record of what really happened: the controller wrote the TrainJob's `status`
    subresource. So it is the Event kube-apiserver logs for Trainer's controller doing that: verb
    `update` on `trainjobs/status`, `user` the controller's ServiceAccount, stage `ResponseComplete` (the
    write is done: it is the stage of every finished request, not a claim that a user sent one).

    The job's creator is carried in `annotations` (`names.ANNOTATION_REQUESTER`, with the condition
    and its reason beside it), not in `user`: `user` is who made a request, and putting the creator
    there would say she wrote the status herself, which no RBAC review of the log should be told (she
    may not even be allowed to). Annotations are where kube-apiserver itself attaches facts about a
    request (`authorization.k8s.io/decision`, `pod-security.kubernetes.io/…`), so the Event stays a
    plain `audit.k8s.io/v1` Event any tool reads, and `mpijob audit --user alice` finds the ends of
    alice's jobs through the annotation (`matches`).
    """
    meta = tj["metadata"]
    ns, name = meta.get("namespace", ""), meta["name"]
    ref = ObjectRef(TRAINJOBS.plural, ns, name, TRAINJOBS.group, TRAINJOBS.version, STATUS_SUBRESOURCE,
                    uid=meta.get("uid", ""), resource_version=meta.get("resourceVersion", ""))
    annotations = {names.AUDIT_ANNOTATION_CONDITION: condition, names.AUDIT_ANNOTATION_REASON: reason}
    if who := requester(tj):
        annotations[names.ANNOTATION_REQUESTER] = who
    uri = f"/apis/{TRAINJOBS.group}/{TRAINJOBS.version}/namespaces/{ns}/{TRAINJOBS.plural}/{name}/{STATUS_SUBRESOURCE}"
    now = timestamp()
    return event(verb="update", request_uri=uri, object_ref=ref, code=200, received=now, completed=now,
                 user=user_info(names.TRAINER_CONTROLLER_USER, groups=names.TRAINER_CONTROLLER_GROUPS),
                 annotations=annotations)


class AuditLog:
    """Appends Events to one file, one JSON line per `write`, rotating by size. Thread-safe; a write
    that fails (disk full, the home removed) is logged and dropped, never raised into a request or a
    controller."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.path, self.max_bytes, self.backups = path, max_bytes, backups
        self._lock = threading.Lock()
        self._checked_mode = False

    def write(self, ev: Mapping[str, Any]) -> None:
        line = (json.dumps(ev, separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                self._rotate_if_full(len(line))
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
                try:
                    if not self._checked_mode:  # a file left by someone else with a wider mode
                        os.fchmod(fd, FILE_MODE)
                        self._checked_mode = True
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError as exc:
                log.error("could not write the audit log %s: %s", self.path, exc)

    def _rotate_if_full(self, incoming: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0 or size + incoming <= self.max_bytes:
            return
        for i in range(self.backups - 1, 0, -1):
            older = backup(self.path, i)
            if older.exists():
                os.replace(older, backup(self.path, i + 1))
        if self.backups > 0:
            os.replace(self.path, backup(self.path, 1))
        else:
            self.path.unlink()
        self._checked_mode = False


def backup(path: Path, index: int) -> Path:
    return path.with_name(f"{path.name}.{index}")


_logs: dict[Path, AuditLog] = {}
_logs_lock = threading.Lock()


def open_log(path: Path) -> AuditLog:
    """The one `AuditLog` of this process for `path`, so the server's requests and the controllers
    rotate one file under one lock."""
    with _logs_lock:
        found = _logs.get(path)
        if found is None:
            found = _logs[path] = AuditLog(path)
        return found


def files(path: Path) -> list[Path]:
    """The log's files, oldest first: the backups `path.N` … `path.1`, then `path`."""
    found = [p for p in (backup(path, i) for i in range(BACKUPS, 0, -1)) if p.exists()]
    return [*found, path] if path.exists() else found


def read(path: Path, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    """Every Event of the log, oldest first, received at or after `since`. A line that is not a JSON
    object (a write cut short by a crash) is skipped."""
    for f in files(path):
        try:
            handle = f.open("rb")
        except FileNotFoundError:  # rotated away between listing and opening
            continue
        with handle:
            for raw in handle:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(ev, dict):
                    continue
                if since is not None:
                    when = parse_time(ev.get("requestReceivedTimestamp"))
                    if when is None or when < since:
                        continue
                yield ev


def username(ev: Mapping[str, Any]) -> str:
    user = ev.get("user")
    return str(user.get("username", "")) if isinstance(user, dict) else ""


def matches(ev: Mapping[str, Any], user: str | None = None, verb: str | None = None) -> bool:
    """`user`: the Event's user, or the requester of the TrainJob it is about (its end, written by the
    controller: `trainjob_finished`); `verb`: the Event's verb."""
    if verb is not None and ev.get("verb") != verb:
        return False
    if user is not None:
        annotations = ev.get("annotations")
        by = annotations.get(names.ANNOTATION_REQUESTER) if isinstance(annotations, dict) else None
        if user not in (username(ev), by):
            return False
    return True
