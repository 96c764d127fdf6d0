"""Objects in SQLite (WAL) with resourceVersions and a change log that watches replay from.

One global, monotonically increasing resourceVersion: every write appends a row to `changes` and the
row id is the new version, exactly the contract kube-apiserver gives clients (opaque, ordered).
The store is used from one asyncio loop; watchers get events through in-process queues.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import copy
import heapq
import json
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path

from mpijob.api import Obj
from mpijob.api.core import errors
from mpijob.api.core.resources import Resource
from mpijob.api.core.selectors import Requirement, matches
from mpijob.api.names import META_API_VERSION

KEEP_CHANGES = 20000  # watch history kept; older resourceVersions answer 410 Expired

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
  resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  rv INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS changes (
  rv INTEGER PRIMARY KEY AUTOINCREMENT,
  resource TEXT NOT NULL, namespace TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL
);
"""

Key = tuple[str, str]  # (namespace, name): the order lists are served and continued in
TOKEN_VERSION = META_API_VERSION


@dataclass(frozen=True)
class Page:
    """One chunk of a list with what kube puts in its `ListMeta`."""

    items: list[Obj]
    resource_version: str
    continue_token: str = ""  # empty on the last chunk
    remaining: int | None = None  # objects after this chunk; None when a selector makes it unknown


def now(after: float = 0) -> str:
    """RFC 3339 with second precision and `Z`, as Kubernetes timestamps are written (`after` seconds from now)."""
    return (datetime.now(UTC) + timedelta(seconds=after)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._watchers: set[asyncio.Queue[tuple[int, str, str, str, Obj]]] = set()

    def close(self) -> None:
        self._db.close()

    # -- reads ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        row = self._db.execute("SELECT COALESCE(MAX(rv), 0) FROM changes").fetchone()
        return str(row[0])

    def try_get(self, res: Resource, namespace: str, name: str) -> Obj | None:
        row = self._db.execute(
            "SELECT body FROM objects WHERE resource=? AND namespace=? AND name=?",
            (res.key, _ns(res, namespace), name),
        ).fetchone()
        return json.loads(row[0]) if row else None

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        obj = self.try_get(res, namespace, name)
        if obj is None:
            raise errors.not_found(res.plural, name, res.group)
        return obj

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        labels: list[Requirement] | None = None,
        fields: list[Requirement] | None = None,
    ) -> tuple[list[Obj], str]:
        """Objects in creation order, filtered; plus the list's resourceVersion."""
        if namespace and res.namespaced:
            rows = self._db.execute(
                "SELECT body FROM objects WHERE resource=? AND namespace=? ORDER BY rowid",
                (res.key, namespace),
            )
        else:
            rows = self._db.execute("SELECT body FROM objects WHERE resource=? ORDER BY rowid", (res.key,))
        items = [json.loads(body) for (body,) in rows]
        items = [o for o in items if matches(o, labels or [], fields or [])]
        return items, self.resource_version

    def versions(self, res: Resource) -> builtins.list[tuple[Key, int]]:
        """Every object's key and resourceVersion in creation order, without reading a body: what a
        cache needs to find the few objects that changed since it last looked."""
        rows = self._db.execute("SELECT namespace, name, rv FROM objects WHERE resource=? ORDER BY rowid", (res.key,))
        return [((ns, name), rv) for ns, name, rv in rows]

    def list_page(
        self,
        res: Resource,
        namespace: str | None = None,
        labels: builtins.list[Requirement] | None = None,
        fields: builtins.list[Requirement] | None = None,
        *,
        limit: int = 0,
        token: str = "",
    ) -> Page:
        """A list as kube-apiserver serves it: in key order (namespace, then name), at most `limit`
        objects (0: all), resumed by `token` from the previous chunk's `continue_token`.

        Every chunk of one list shows the store as it was when the first chunk was served (the
        token carries that resourceVersion and the key to resume at), so objects created, changed
        or deleted meanwhile neither appear twice nor go missing, as with etcd's MVCC reads. We
        keep no old versions beside the change log, so a snapshot lasts as long as the log keeps
        what it needs (`KEEP_CHANGES`, like etcd's compaction): once it does not, the token is 410
        Expired, with a token that resumes at the latest version. The token is kube's own format
        (base64url JSON `{"v", "rv", "start"}`; rv -1 means "the latest"), its start key relative
        to the list's scope: `name` in one namespace or a cluster-scoped list, `namespace/name`
        across namespaces. Unlike etcd we know the rest of the list, so `continue_token` is set only
        when more objects match, and `remaining` is exact, given (as by kube) only without selectors.
        """
        scope = namespace if namespace and res.namespaced else None
        current = int(self.resource_version)
        at, start = current, ""
        if token:
            at, start = _decode_continue(token)
            if at > current:
                raise errors.invalid_continue(f"resourceVersion {at} is newer than this server's {current}")
            if at < 0:
                at = current
        first = _start_key(start, scope)
        rows = self._rows_at(res, scope, at, first)
        if rows is None:
            raise errors.continue_expired(_encode_continue(-1, start))
        objs = ((key, json.loads(body)) for key, body in rows)
        hits = ((key, obj) for key, obj in objs if matches(obj, labels or [], fields or []))
        chunk = list(islice(hits, limit) if limit > 0 else hits)
        if limit <= 0 or next(hits, None) is None:
            return Page([obj for _, obj in chunk], str(at))
        (ns, name), _ = chunk[-1]
        last = f"{ns}/{name}" if scope is None and res.namespaced else name
        return Page([obj for _, obj in chunk], str(at), _encode_continue(at, last + "\0"),
                    None if labels or fields else self._count_at(res, scope, at, first) - len(chunk))

    def _rows_at(self, res: Resource, scope: str | None, at: int, start: Key) -> Iterator[tuple[Key, str]] | None:
        """`(key, body)` of the objects of `res` in `scope` as they were at resourceVersion `at`,
        from key `start` on, in key order; None when the change log no longer reaches back to `at`.

        Objects unchanged since `at` are read as stored, in key order from the primary key, as far as the
        caller reads (a chunk of 100 reads about 100 bodies, however many objects there are); those written
        since are taken back to their last logged version at or before `at` (or dropped when they were
        created after it). The caller reads the rows before anything else runs on the store's loop, so no
        write comes between the two reads."""
        oldest = self._db.execute("SELECT MIN(rv) FROM changes").fetchone()[0]
        if oldest is not None and at < oldest - 1:
            return None
        where, args = _scope(res, scope)
        then: builtins.list[tuple[Key, str]] = []
        for key, (first, _) in self._writes_since(res, scope, at).items():
            if first == "ADDED" or key < start:
                continue
            row = self._db.execute(
                "SELECT body FROM changes WHERE resource=? AND namespace=? AND rv<=? "
                "AND json_extract(body, '$.metadata.name')=? ORDER BY rv DESC LIMIT 1",
                (res.key, key[0], at, key[1]),
            ).fetchone()
            if row is None:
                return None
            then.append((key, row[0]))
        unchanged = (((ns, name), body) for ns, name, body in self._db.execute(
            f"SELECT namespace, name, body FROM objects WHERE {where} AND rv<=? AND (namespace, name)>=(?, ?) "
            "ORDER BY namespace, name", (*args, at, *start)))
        return heapq.merge(unchanged, sorted(then))

    def _count_at(self, res: Resource, scope: str | None, at: int, start: Key) -> int:
        """How many objects `_rows_at` yields: those there now, counted in the primary key's index (no row is
        read), less those made since `at`, plus those deleted since."""
        where, args = _scope(res, scope)
        count = int(self._db.execute(f"SELECT COUNT(*) FROM objects WHERE {where} AND (namespace, name)>=(?, ?)",
                                     (*args, *start)).fetchone()[0])
        for key, (first, last) in self._writes_since(res, scope, at).items():
            if key >= start and (first == "ADDED") != (last == "DELETED"):
                count += -1 if first == "ADDED" else 1
        return count

    def _writes_since(self, res: Resource, scope: str | None, at: int) -> dict[Key, tuple[str, str]]:
        """Each object of `res` in `scope` written since `at` → the kinds of its first and its last write then
        (a first ADDED: it was not there at `at`; a last DELETED: it is not there now)."""
        where, args = _scope(res, scope)
        kinds: dict[Key, tuple[str, str]] = {}
        for ns, name, kind in self._db.execute(
            f"SELECT namespace, json_extract(body, '$.metadata.name'), type FROM changes WHERE {where} AND rv>? "
            "ORDER BY rv", (*args, at)):
            kinds[(ns, name)] = (kinds.get((ns, name), (kind, kind))[0], kind)
        return kinds

    # -- writes --------------------------------------------------------------------------------

    def create(self, res: Resource, obj: Obj, namespace: str = "") -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name") or ""
        ns = _ns(res, namespace or meta.get("namespace", ""))
        if res.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if self.try_get(res, ns, name) is not None:
            raise errors.already_exists(res.plural, name, res.group)
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        meta["generation"] = 1
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        return self._write(res, ns, name, "ADDED", obj, insert=True)

    def ensure(self, res: Resource, obj: Obj) -> Obj:
        """The stored object named as `obj` is, created from `obj` when there is none: a controller's
        create-if-absent, which leaves an existing object as it is."""
        meta = obj["metadata"]
        current = self.try_get(res, meta.get("namespace", ""), meta["name"])
        return current if current is not None else self.create(res, obj)

    def update(self, res: Resource, obj: Obj, *, status: bool = False, managed_fields: bool = False) -> Obj:
        """Replace an object. `status=True` writes only `.status` (the status subresource), and with
        `managed_fields=True` also `metadata.managedFields` (who owns what, which a status write changes);
        otherwise `.status` is kept as stored. A stale `resourceVersion` is a 409 Conflict."""
        meta = obj.get("metadata", {})
        name, ns = meta.get("name", ""), _ns(res, meta.get("namespace", ""))
        current = self.get(res, ns, name)
        sent_rv = meta.get("resourceVersion")
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            raise errors.conflict(
                res.group_resource.split(".")[0], name,
                "the object has been modified; please apply your changes to the latest version and try again",
                res.group,
            )
        if status:
            new = copy.deepcopy(current)
            new["status"] = copy.deepcopy(obj.get("status", {}))
            if managed_fields:
                new["metadata"].pop("managedFields", None)
                if meta.get("managedFields"):
                    new["metadata"]["managedFields"] = copy.deepcopy(meta["managedFields"])
        else:
            new = copy.deepcopy(obj)
            cur_meta = current["metadata"]
            for key in ("uid", "creationTimestamp", "generation", "namespace", "deletionTimestamp"):
                if key in cur_meta:
                    new["metadata"][key] = cur_meta[key]
                else:
                    new["metadata"].pop(key, None)
            if "status" in current:
                new["status"] = current["status"]
            else:
                new.pop("status", None)
            if new.get("spec") != current.get("spec"):
                new["metadata"]["generation"] = cur_meta.get("generation", 1) + 1
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        if new == current:
            return current
        return self._write(res, ns, name, "MODIFIED", new)

    def mark_deleting(self, res: Resource, namespace: str, name: str, grace: int = 0) -> Obj:
        """Set `deletionTimestamp` (objects with finalizers wait for them before they go; a running pod is given
        `grace` seconds to stop, and its kubelet then deletes it, as kube's graceful deletion of a pod)."""
        ns = _ns(res, namespace)
        obj = self.get(res, ns, name)
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        obj["metadata"]["deletionTimestamp"] = now(grace)
        obj["metadata"]["deletionGracePeriodSeconds"] = grace
        return self._write(res, ns, name, "MODIFIED", obj)

    def delete(self, res: Resource, namespace: str, name: str) -> Obj:
        ns = _ns(res, namespace)
        obj = self.get(res, ns, name)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            rv = self._log(res, ns, "DELETED", obj)
            self._db.execute(
                "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", (res.key, ns, name)
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        obj["metadata"]["resourceVersion"] = str(rv)
        self._notify(rv, res, ns, "DELETED", obj)
        return obj

    def _write(self, res: Resource, ns: str, name: str, kind: str, obj: Obj, insert: bool = False) -> Obj:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            rv = self._db.execute(
                "INSERT INTO changes (resource, namespace, type, body) VALUES (?, ?, ?, '')",
                (res.key, ns, kind),
            ).lastrowid
            assert rv is not None
            obj["metadata"]["resourceVersion"] = str(rv)
            body = json.dumps(obj, separators=(",", ":"))
            self._db.execute("UPDATE changes SET body=? WHERE rv=?", (body, rv))
            if insert:
                self._db.execute(
                    "INSERT INTO objects (resource, namespace, name, rv, body) VALUES (?, ?, ?, ?, ?)",
                    (res.key, ns, name, rv, body),
                )
            else:
                self._db.execute(
                    "UPDATE objects SET rv=?, body=? WHERE resource=? AND namespace=? AND name=?",
                    (rv, body, res.key, ns, name),
                )
            if rv % 1000 == 0:
                self._db.execute("DELETE FROM changes WHERE rv <= ?", (rv - KEEP_CHANGES,))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._notify(rv, res, ns, kind, obj)
        return copy.deepcopy(obj)

    def _log(self, res: Resource, ns: str, kind: str, obj: Obj) -> int:
        rv = self._db.execute(
            "INSERT INTO changes (resource, namespace, type, body) VALUES (?, ?, ?, '')", (res.key, ns, kind)
        ).lastrowid
        assert rv is not None
        obj["metadata"]["resourceVersion"] = str(rv)
        self._db.execute(
            "UPDATE changes SET body=? WHERE rv=?", (json.dumps(obj, separators=(",", ":")), rv)
        )
        return rv

    # -- watch ---------------------------------------------------------------------------------

    def _notify(self, rv: int, res: Resource, ns: str, kind: str, obj: Obj) -> None:
        for queue in self._watchers:
            queue.put_nowait((rv, res.key, ns, kind, obj))

    async def watch(
        self,
        res: Resource | None,
        namespace: str | None = None,
        since: str | None = None,
        labels: builtins.list[Requirement] | None = None,
        fields: builtins.list[Requirement] | None = None,
    ) -> AsyncIterator[tuple[str, Obj]]:
        """Yield `(type, object)` for changes newer than `since` (default: now), then live ones.

        `res=None` watches every resource (the controllers' wake-up feed)."""
        queue: asyncio.Queue[tuple[int, str, str, str, Obj]] = asyncio.Queue()
        self._watchers.add(queue)
        try:
            last = int(since) if since and since != "0" else int(self.resource_version)
            oldest = self._db.execute("SELECT MIN(rv) FROM changes").fetchone()[0]
            if oldest is not None and last < oldest - 1:
                raise errors.gone(f"too old resource version: {last} ({oldest - 1})")
            for rv, key, ns, kind, body in self._db.execute(
                "SELECT rv, resource, namespace, type, body FROM changes WHERE rv > ? ORDER BY rv", (last,)
            ).fetchall():
                event = self._filter(res, namespace, labels, fields, key, ns, kind, json.loads(body))
                last = rv
                if event:
                    yield event
            while True:
                rv, key, ns, kind, obj = await queue.get()
                if rv <= last:
                    continue
                last = rv
                event = self._filter(res, namespace, labels, fields, key, ns, kind, obj)
                if event:
                    yield event
        finally:
            self._watchers.discard(queue)

    @staticmethod
    def _filter(
        res: Resource | None,
        namespace: str | None,
        labels: builtins.list[Requirement] | None,
        fields: builtins.list[Requirement] | None,
        key: str,
        ns: str,
        kind: str,
        obj: Obj,
    ) -> tuple[str, Obj] | None:
        if res is not None and key != res.key:
            return None
        if namespace and ns != namespace:
            return None
        if not matches(obj, labels or [], fields or []):
            return None
        return kind, copy.deepcopy(obj)


def _scope(res: Resource, scope: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause and its arguments that select the objects of `res` in `scope` (None: all)."""
    if scope is None:
        return "resource=?", (res.key,)
    return "resource=? AND namespace=?", (res.key, scope)


def _ns(res: Resource, namespace: str) -> str:
    return (namespace or "default") if res.namespaced else ""


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": TOKEN_VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).rstrip(b"=").decode()


def _decode_continue(token: str) -> tuple[int, str]:
    """`(resourceVersion, start key)` of a token, checked as kube's `storage.DecodeContinue` does."""
    try:
        data = json.loads(base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True))
    except ValueError as exc:  # bad base64, bytes or JSON
        raise errors.invalid_continue(str(exc)) from None
    if not isinstance(data, dict):
        raise errors.invalid_continue(f"not a JSON object: {type(data).__name__}")
    if data.get("v") != TOKEN_VERSION:
        raise errors.invalid_continue(f"server does not recognize this encoded version {data.get('v')}")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise errors.invalid_continue(f"incorrect encoded start resourceVersion (version {TOKEN_VERSION})")
    if not isinstance(start, str) or not start:
        raise errors.invalid_continue(f"encoded start key empty (version {TOKEN_VERSION})")
    return rv, start


def _start_key(start: str, scope: str | None) -> Key:
    """The first `(namespace, name)` a scope-relative start key lets through ("" lets all)."""
    if scope is not None:
        return scope, start
    ns, sep, name = start.partition("/")
    return (ns, name) if sep else ("", start)
