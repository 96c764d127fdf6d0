"""The dashboard's logins: one-time tickets and the browser sessions they open (docs/dashboard.md).

`mpijob dashboard` asks, with the kubeconfig's credentials, for a ticket (`issue`): 32 random bytes,
good once and for `TICKET_SECONDS`. The page trades it (`redeem`) for a session: a random id in an
`HttpOnly; Secure; SameSite=Strict` cookie, and a CSRF token that the page sends back in a header with
every write, which another site can neither read nor forge. A session ends at logout, after
`IDLE_SECONDS` unused or `MAX_SECONDS` in all, when its user is removed, and when the server restarts
(held in memory only: a restart logs everyone out, nothing to steal on disk).

Only hashes are kept (a memory dump shows no usable ticket or cookie); comparisons are by dictionary
look-up of the hash or `hmac.compare_digest`, so no timing reveals a prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mpijob.api.core.rbac import User

TICKET_SECONDS = 60.0  # a login link works once, within a minute of `mpijob dashboard`
IDLE_SECONDS = 8 * 3600.0  # a working day without a request ends a session
MAX_SECONDS = 24 * 3600.0  # and a day in all
MAX_SESSIONS = 1000  # the oldest go first beyond it: a client that logs in in a loop cannot grow memory


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Session:
    user: User
    csrf: str
    started: float
    used: float

    def csrf_matches(self, token: str) -> bool:
        return hmac.compare_digest(self.csrf.encode(), token.encode("utf-8", "surrogatepass"))


@dataclass
class Sessions:
    """Tickets and sessions of one server, in memory (see the module doc)."""

    clock: Callable[[], float] = time.monotonic
    _tickets: dict[str, tuple[User, float]] = field(default_factory=dict)
    _sessions: dict[str, Session] = field(default_factory=dict)

    def issue(self, user: User) -> str:
        """A one-time login ticket for `user`."""
        now = self.clock()
        self._tickets = {h: t for h, t in self._tickets.items() if t[1] > now}
        ticket = secrets.token_urlsafe(32)
        self._tickets[_hash(ticket)] = (user, now + TICKET_SECONDS)
        return ticket

    def redeem(self, ticket: str) -> tuple[str, Session] | None:
        """(cookie value, session) for a valid ticket, which is used up; None for any other."""
        found = self._tickets.pop(_hash(ticket), None)
        now = self.clock()
        if found is None or found[1] <= now:
            return None
        if len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda h: self._sessions[h].used)
            del self._sessions[oldest]
        cookie = secrets.token_urlsafe(32)
        session = Session(found[0], secrets.token_urlsafe(32), now, now)
        self._sessions[_hash(cookie)] = session
        return cookie, session

    def lookup(self, cookie: str) -> Session | None:
        """The live session of a cookie value, its last use now; None when there is none or it expired."""
        key = _hash(cookie)
        session = self._sessions.get(key)
        now = self.clock()
        if session is None:
            return None
        if now - session.used > IDLE_SECONDS or now - session.started > MAX_SECONDS:
            del self._sessions[key]
            return None
        session.used = now
        return session

    def end(self, cookie: str) -> None:
        self._sessions.pop(_hash(cookie), None)

    def end_user(self, name: str) -> None:
        """Ends every session of a user who no longer exists."""
        self._sessions = {h: s for h, s in self._sessions.items() if s.user.name != name}
