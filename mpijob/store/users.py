"""The registry of users: `$MPIJOB_HOME/tokens.csv`, kube-apiserver's `--token-auth-file` format with each
token stored as its hash (`mpijob.api.core.rbac.token_hash`). The server authenticates with it
(`mpijob.server.auth`); the Trainer controller reads it to learn the groups of a job's creator, whose
grants decide which SCC the job's pods may use (`mpijob.controllers.scc`).
"""

from __future__ import annotations

import csv
import io
import os
import secrets
import threading
from pathlib import Path

from mpijob.api import names
from mpijob.api.core.rbac import User, service_account_user, token_hash

HASH_PREFIX = "sha256:"


def authenticated(user: User) -> User:
    """A registered user as a request of theirs authenticates: also in `system:authenticated`."""
    if names.SYSTEM_AUTHENTICATED in user.groups:
        return user
    return User(user.name, user.uid, (*user.groups, names.SYSTEM_AUTHENTICATED))


def identity(tokens: Path, name: str) -> User:
    """Who `name` (a TrainJob's requester) is now: a ServiceAccount's identity, a registered user with its
    groups, or, for a user since removed, the bare name (what bindings to that name still grant)."""
    if name.startswith(names.SERVICE_ACCOUNT_USER_PREFIX):
        namespace, _, account = name[len(names.SERVICE_ACCOUNT_USER_PREFIX):].partition(":")
        return service_account_user(namespace, account)
    user = token_file(tokens).user(name)
    return authenticated(user) if user is not None else User(name)


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
                self._users = dict(rows)
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

    def replace(self, user: User, token: str) -> None:
        """`user` with `token` alone, first in the file: every other token of that name is dropped."""
        with self._lock:
            rows = [(d, u) for d, u in self._read() if u.name != user.name]
            self._write([(token_hash(token), user), *rows])

    def user(self, name: str) -> User | None:
        """The registered user of that name, with its groups."""
        return next((u for u in self.users() if u.name == name), None)


_FILES: dict[Path, TokenFile] = {}


def token_file(path: Path) -> TokenFile:
    """The one `TokenFile` of this process for `path`, so a write is seen by the next request at once."""
    key = path.resolve()
    if key not in _FILES:
        _FILES[key] = TokenFile(key)
    return _FILES[key]
