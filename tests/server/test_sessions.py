"""Tickets and sessions on a clock of our own: one use, expiry, idle and absolute limits, a bound."""

from __future__ import annotations

from mpijob.api.core.rbac import User
from mpijob.server import sessions
from mpijob.server.sessions import Sessions

ALICE = User("alice", "u1", ("system:authenticated",))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_works_once_and_only_within_its_minute() -> None:
    clock = Clock()
    s = Sessions(clock)
    ticket = s.issue(ALICE)
    cookie, session = s.redeem(ticket) or ("", None)
    assert session is not None and session.user == ALICE and cookie != ticket
    assert s.redeem(ticket) is None
    late = s.issue(ALICE)
    clock.now += sessions.TICKET_SECONDS + 1
    assert s.redeem(late) is None


def test_sessions_end_when_idle_at_their_age_limit_and_for_a_removed_user() -> None:
    clock = Clock()
    s = Sessions(clock)
    cookie, _ = s.redeem(s.issue(ALICE)) or ("", None)
    clock.now += sessions.IDLE_SECONDS - 1
    assert s.lookup(cookie) is not None  # used: its idle time starts again
    clock.now += sessions.IDLE_SECONDS - 1
    assert s.lookup(cookie) is not None
    clock.now += sessions.MAX_SECONDS
    assert s.lookup(cookie) is None
    other, _ = s.redeem(s.issue(ALICE)) or ("", None)
    s.end_user("alice")
    assert s.lookup(other) is None


def test_only_hashes_are_kept_and_the_number_of_sessions_is_bounded() -> None:
    s = Sessions(Clock())
    cookies = [s.redeem(s.issue(ALICE)) for _ in range(sessions.MAX_SESSIONS + 5)]
    assert len(s._sessions) == sessions.MAX_SESSIONS
    kept = repr(s._sessions) + repr(s._tickets)
    assert all(c is not None and c[0] not in kept for c in cookies)
    assert s.lookup(cookies[0][0]) is None and s.lookup(cookies[-1][0]) is not None  # type: ignore[index]


def test_csrf_tokens_compare_exactly() -> None:
    s = Sessions(Clock())
    _, session = s.redeem(s.issue(ALICE)) or ("", None)
    assert session is not None
    assert session.csrf_matches(session.csrf)
    assert not session.csrf_matches(session.csrf[:-1]) and not session.csrf_matches("")
