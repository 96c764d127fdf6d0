"""Authentication: bearer tokens, as kube-apiserver's static token file and ServiceAccount tokens.

* Users and groups live in `$MPIJOB_HOME/tokens.csv`, kube's `--token-auth-file` CSV format
  (`token,user,uid,"group1,group2"`) except that the first column is the token's hash
  (`sha256:<hex>`, `mpijob.api.core.rbac.token_hash`): a token is shown once, when it is made, and never
  stored, logged or returned again. A file written by an older version (plaintext tokens) is read
  once and rewritten hashed. Every authenticated user is also in `system:authenticated`.
* The admin (`mpijob-admin`, in `system:masters`) is the user of the kubeconfig the server writes; on
  each start its token is taken back from that kubeconfig when its hash still matches, else a new one
  is made (the kubeconfig is rewritten with it).
* A ServiceAccount token (a JWT, `mpijob.api.core.tokens`) authenticates as
  `system:serviceaccount:<ns>:<name>` while its ServiceAccount (and its pod, for a pod's token) exists.
  A token for another audience does not, except a job's status token (Trainer's per-TrainJob audience)
  on that job's progress endpoint (`mpijob.server.routes.progress`).
* The dashboard's session cookie (`mpijob.server.sessions`), when no bearer token is sent: the session's
  user, while it exists; a write must also carry the session's CSRF token and come from no other origin.

Changes take effect at the next request: adding or removing a user rewrites the file and the shared
`TokenFile` of this process at once (`mpijob.store.users`, which the controllers also read to learn a
job creator's groups); an edit by hand is seen by the file's modification time.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from pathlib import Path
from typing import Any

from starlette.requests import cookie_parser

from mpijob.api import names
from mpijob.api.core import tokens
from mpijob.api.core.errors import ApiError, unauthorized
from mpijob.api.core.rbac import User, service_account_user
from mpijob.api.core.resources import PODS, SERVICE_ACCOUNTS
from mpijob.server.http import SERVED, status_response
from mpijob.server.routes import dashboard, progress
from mpijob.server.sessions import Sessions
from mpijob.store.home import Home
from mpijob.store.users import HASH_PREFIX, TokenFile, authenticated, token_file

ADMIN_USER = "mpijob-admin"
ADMIN_GROUPS = (names.SYSTEM_MASTERS, names.SYSTEM_AUTHENTICATED)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

__all__ = ["ADMIN_USER", "BearerAuth", "TokenFile", "User", "ensure_admin_token", "token_file"]


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
    tf.replace(User(ADMIN_USER, ADMIN_USER, ADMIN_GROUPS), token)
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


def service_account_claims(store: Any, key: bytes, token: str, audience: str = tokens.AUDIENCE
                           ) -> tokens.Claims | None:
    """The claims of a valid ServiceAccount token for `audience` whose account (and pod) still exist."""
    claims = tokens.verify(key, token, audience=audience)
    if claims is None:
        return None
    sa = store.try_get(SERVICE_ACCOUNTS, claims.namespace, claims.name)
    if sa is None or (claims.uid and sa["metadata"].get("uid") != claims.uid):
        return None
    if claims.pod:
        pod = store.try_get(PODS, claims.namespace, claims.pod)
        if pod is None or (claims.pod_uid and pod["metadata"].get("uid") != claims.pod_uid):
            return None
    return claims


class BearerAuth:
    """ASGI middleware: every request except health probes and the dashboard's public paths needs a known
    bearer token or a dashboard session.

    The authenticated user (`mpijob.api.core.rbac.User`) is put in `scope["user"]` for later layers (RBAC, audit)."""

    def __init__(self, app: Any, tokens_file: Path, home: Home | None = None, sessions: Sessions | None = None) -> None:
        self.app = app
        self.sessions = sessions if sessions is not None else Sessions()
        self.tokens = token_file(tokens_file)
        self._home = home
        self._sa_key = home.service_account_key() if home is not None else None  # the kubelet signs with it too

    def _lookup(self, token: str, scope: Any) -> User | None:
        user = self.tokens.lookup(token)
        if user is not None:
            return authenticated(user)
        if token.count(".") == 2 and self._sa_key is not None:
            state = getattr(scope.get("app"), "state", None)
            cluster = getattr(state, "cluster", None)
            if cluster is None:
                return None
            claims = service_account_claims(cluster.store, self._sa_key, token)
            report = progress.target(scope["method"], scope["path"])
            if claims is None and report is not None:  # a job's status token, for its own job's endpoint only
                claims = service_account_claims(cluster.store, self._sa_key, token,
                                                names.trainjob_status_audience(*report))
                if claims is not None:
                    scope[progress.STATUS_POD] = claims.pod  # authorization asks whether it is that job's pod
            return None if claims is None else service_account_user(claims.namespace, claims.name, claims.uid)
        return None

    def _session_user(self, scope: Any, headers: dict[bytes, bytes]) -> User | ApiError | None:
        """The user of the dashboard's session cookie; a 403 for a write without its CSRF token or from
        another origin; None when there is no live session of a user who still exists."""
        cookie = cookie_parser(headers.get(b"cookie", b"").decode("latin-1")).get(names.SESSION_COOKIE, "")
        session = self.sessions.lookup(cookie) if cookie else None
        if session is None:
            return None
        user = session.user
        if not user.name.startswith(names.SERVICE_ACCOUNT_USER_PREFIX) and all(
                u.name != user.name for u in self.tokens.users()):
            self.sessions.end_user(user.name)
            return None
        if scope["method"] not in SAFE_METHODS:
            origin = headers.get(b"origin", b"").decode("latin-1")
            host = headers.get(b"host", b"").decode("latin-1")
            if origin and origin != f"https://{host}":
                return forbidden_write(f"a write from {origin} with the dashboard's session cookie is refused: "
                                       "only the dashboard's own page may write with it")
            if not session.csrf_matches(headers.get(names.CSRF_HEADER.lower().encode(), b"").decode("latin-1")):
                return forbidden_write(f"a write with the dashboard's session cookie needs the session's "
                                       f"{names.CSRF_HEADER} header: reload the dashboard")
        scope["session"] = session
        return authenticated(user)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (scope["type"] not in SERVED or scope["path"] in OPEN_PATHS
                or dashboard.is_public(scope["method"], scope["path"])):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        found: User | ApiError | None
        if scheme.lower() == "bearer" and token.strip():
            found = self._lookup(token.strip(), scope)
        else:
            found = self._session_user(scope, headers)
        if not isinstance(found, User):
            await status_response(found or unauthorized())(scope, receive, send)
            return
        scope["user"] = found
        await self.app(scope, receive, send)


def forbidden_write(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)
