"""Authentication: bearer tokens, as kube-apiserver's static token file and ServiceAccount tokens.

* Users and groups live in `$MPIJOB_HOME/tokens.csv`, kube's `--token-auth-file` CSV format
  (`token,user,uid,"group1,group2"`) except that the first column is the token's hash
  (`sha256:<hex>`, `mpijob.api.rbac.token_hash`): a token is shown once, when it is made, and never
  stored, logged or returned again. A file written by an older version (plaintext tokens) is read
  once and rewritten hashed. Every authenticated user is also in `system:authenticated`.
* The admin (`mpijob-admin`, in `system:masters`) is the user of the kubeconfig the server writes; on
  each start its token is taken back from that kubeconfig when its hash still matches, else a new one
  is made (the kubeconfig is rewritten with it).
* A ServiceAccount token (a JWT, `mpijob.api.tokens`) authenticates as
  `system:serviceaccount:<ns>:<name>` while its ServiceAccount (and its pod, for a pod's token) exists.

Changes take effect at the next request: adding or removing a user rewrites the file and the shared
`TokenFile` of this process at once; an edit by hand is seen by the file's modification time.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from mpijob.api import names, tokens
from mpijob.api.errors import unauthorized
from mpijob.api.rbac import User, service_account_user, token_hash
from mpijob.api.resources import PODS, SERVICE_ACCOUNTS
from mpijob.server.http import status_response
from mpijob.store.home import Home

ADMIN_USER = "mpijob-admin"
ADMIN_GROUPS = (names.SYSTEM_MASTERS, names.SYSTEM_AUTHENTICATED)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
HASH_PREFIX = "sha256:"

__all__ = ["User", "TokenFile", "token_file", "ensure_admin_token", "BearerAuth", "ADMIN_USER"]


class TokenFile:
    """The users of one token file: hash → user, re-read when the file changes; writes are atomic (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._users: dict[str, User] = {}
        self._stamp: tuple[float, int] | None = None

    def _read(self) -> list[tuple[str, User]]:
        """(hash, user) rows; plaintext tokens (an older file) are hashed and the file rewritten."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        rows: list[tuple[str, User]] = []
        migrated = False
        for row in csv.reader(io.StringIO(text)):
            if not row or row[0].startswith("#") or len(row) < 2:
                continue
            first = row[0].strip()
            if not first.startswith(HASH_PREFIX):
                first, migrated = token_hash(first), True
            groups = tuple(g for g in (row[3] if len(row) > 3 else "").split(",") if g)
            rows.append((first, User(row[1].strip(), row[2].strip() if len(row) > 2 else "", groups)))
        if migrated:
            self._write(rows)
        return rows

    def _write(self, rows: list[tuple[str, User]]) -> None:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for digest, user in rows:
            writer.writerow([digest, user.name, user.uid, ",".join(user.groups)])
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(buf.getvalue())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        self._stamp = None

    def _fresh(self) -> dict[str, User]:
        try:
            st = self.path.stat()
            stamp: tuple[float, int] | None = (st.st_mtime, st.st_ino)
        except FileNotFoundError:
            stamp = (0.0, 0)
        if stamp != self._stamp:
            with self._lock:
                rows = self._read()
                self._users = {digest: user for digest, user in rows}
                st2 = self.path.stat() if self.path.exists() else None
                self._stamp = (st2.st_mtime, st2.st_ino) if st2 else (0.0, 0)
        return self._users

    def lookup(self, token: str) -> User | None:
        """The user a token authenticates as (by its hash: a dictionary look-up, no timing to learn from)."""
        return self._fresh().get(token_hash(token))

    def users(self) -> list[User]:
        return list(self._fresh().values())

    def add(self, user: User, token: str | None = None) -> str:
        """Add a user with a new token (or `token`); returns the token, which is not kept."""
        token = token or secrets.token_urlsafe(32)
        with self._lock:
            rows = self._read()
            self._write([*rows, (token_hash(token), user)])
        return token

    def remove(self, name: str) -> bool:
        """Remove every token of user `name`; False when it had none."""
        with self._lock:
            rows = self._read()
            kept = [(d, u) for d, u in rows if u.name != name]
            if len(kept) == len(rows):
                return False
            self._write(kept)
        return True

    def replace_admin(self, token: str) -> None:
        with self._lock:
            rows = [(d, u) for d, u in self._read() if u.name != ADMIN_USER]
            self._write([(token_hash(token), User(ADMIN_USER, ADMIN_USER, ADMIN_GROUPS)), *rows])


_FILES: dict[Path, TokenFile] = {}


def token_file(path: Path) -> TokenFile:
    """The one `TokenFile` of this process for `path`, so a write is seen by the next request at once."""
    key = path.resolve()
    if key not in _FILES:
        _FILES[key] = TokenFile(key)
    return _FILES[key]


def _kubeconfig_token(path: Path) -> str:
    try:
        config = json.loads(path.read_text())
        return str(config["users"][0]["user"]["token"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return ""


def ensure_admin_token(home: Home) -> str:
    """The admin's token for the kubeconfig about to be written: the current kubeconfig's when its hash
    is the admin's, the admin's plaintext token of an older token file, else a new one."""
    tf = token_file(home.tokens)
    old_plain = _legacy_admin_token(home.tokens)
    if old_plain:
        tf.users()  # migrates the file
        return old_plain
    current = _kubeconfig_token(home.kubeconfig)
    admin = [u for u in tf.users() if u.name == ADMIN_USER]
    if current and admin and (found := tf.lookup(current)) is not None and found.name == ADMIN_USER:
        return current
    token = secrets.token_urlsafe(32)
    tf.replace_admin(token)
    return token


def _legacy_admin_token(path: Path) -> str:
    """The admin's plaintext token in a token file written before tokens were hashed, if any."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ""
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1].strip() == ADMIN_USER and not row[0].startswith(HASH_PREFIX):
            return row[0].strip()
    return ""


def service_account_identity(store: Any, key: bytes, token: str) -> User | None:
    """The identity of a valid ServiceAccount token whose account (and pod) still exist."""
    claims = tokens.verify(key, token)
    if claims is None:
        return None
    sa = store.try_get(SERVICE_ACCOUNTS, claims.namespace, claims.name)
    if sa is None or (claims.uid and sa["metadata"].get("uid") != claims.uid):
        return None
    if claims.pod:
        pod = store.try_get(PODS, claims.namespace, claims.pod)
        if pod is None or (claims.pod_uid and pod["metadata"].get("uid") != claims.pod_uid):
            return None
    return service_account_user(claims.namespace, claims.name, claims.uid)


class BearerAuth:
    """ASGI middleware: every request except health probes needs a known bearer token.

    The authenticated user (`mpijob.api.rbac.User`) is put in `scope["user"]` for later layers (RBAC, audit)."""

    def __init__(self, app: Any, tokens_file: Path, home: Home | None = None) -> None:
        self.app = app
        self.tokens = token_file(tokens_file)
        self._home = home
        self._sa_key = home.service_account_key() if home is not None else None  # the kubelet signs with it too

    def _lookup(self, token: str, scope: Any) -> User | None:
        user = self.tokens.lookup(token)
        if user is not None:
            groups = user.groups if names.SYSTEM_AUTHENTICATED in user.groups else (*user.groups,
                                                                                    names.SYSTEM_AUTHENTICATED)
            return User(user.name, user.uid, groups)
        if token.count(".") == 2 and self._sa_key is not None:
            state = getattr(scope.get("app"), "state", None)
            cluster = getattr(state, "cluster", None)
            if cluster is None:
                return None
            return service_account_identity(cluster.store, self._sa_key, token)
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        user = self._lookup(token.strip(), scope) if scheme.lower() == "bearer" and token.strip() else None
        if user is None:
            await status_response(unauthorized())(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)
