"""Bearer-token authentication from a kube-apiserver static token file.

The file uses kube's `--token-auth-file` CSV format (`token,user,uid,"group1,group2"`), so an admin
can add users with the same tooling they know. The admin token is created on first start.
"""

from __future__ import annotations

import csv
import hmac
import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpijob.api.errors import unauthorized
from mpijob.server.http import status_response
from mpijob.store.home import Home

ADMIN_USER = "mpijob-admin"
ADMIN_GROUPS = ("system:masters", "system:authenticated")
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez"})


@dataclass(frozen=True)
class User:
    name: str
    uid: str
    groups: tuple[str, ...]


def load_tokens(path: Path) -> dict[str, User]:
    """Token → user; blank lines and `#` comments are skipped."""
    if not path.exists():
        return {}
    users: dict[str, User] = {}
    for row in csv.reader(io.StringIO(path.read_text())):
        if not row or row[0].startswith("#") or len(row) < 2:
            continue
        groups = tuple(g for g in (row[3] if len(row) > 3 else "").split(",") if g)
        users[row[0].strip()] = User(row[1].strip(), row[2].strip() if len(row) > 2 else "", groups)
    return users


def ensure_admin_token(home: Home) -> str:
    """The admin's token, creating the token file (mode 0600) on first start."""
    for token, user in load_tokens(home.tokens).items():
        if user.name == ADMIN_USER:
            return token
    token = secrets.token_urlsafe(32)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([token, ADMIN_USER, "mpijob-admin", ",".join(ADMIN_GROUPS)])
    fd = os.open(home.tokens, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(buf.getvalue())
    os.chmod(home.tokens, 0o600)
    return token


class BearerAuth:
    """ASGI middleware: every request except health probes needs a known bearer token.

    The authenticated user is put in `scope["user"]` for later layers (RBAC, audit)."""

    def __init__(self, app: Any, tokens_file: Path) -> None:
        self.app = app
        self.tokens_file = tokens_file
        self._users: dict[str, User] = {}
        self._mtime = -1.0

    def _lookup(self, token: str) -> User | None:
        try:
            mtime = self.tokens_file.stat().st_mtime
        except FileNotFoundError:
            return None
        if mtime != self._mtime:  # pick up tokens added while running
            self._users, self._mtime = load_tokens(self.tokens_file), mtime
        for known, user in self._users.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        user = self._lookup(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if user is None:
            await status_response(unauthorized())(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)
