"""Ages as kubectl prints them: one copy of apimachinery's `HumanDuration` and of RFC 3339 parsing,
for the server's `Table`s (api/core/tables.py) and for every client's tables alike.

The semantics are kubectl's to the letter (k8s.io/apimachinery/pkg/util/duration): whole seconds
truncated toward zero, up to a second in the future is `0s` (clock skew between machines), further in
the future is `<invalid>`, a missing or unparsable timestamp is `<unknown>`.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp (`2026-01-10T12:00:00Z`, fractions and offsets too) as an aware
    datetime; None when absent or not a timestamp. A timestamp without a zone is taken as UTC."""
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """kubectl's `HumanDuration`: 45s, 5m30s, 42m, 3h10m, 20h, 3d4h, 40d, 2y10d, 9y."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """How long ago `timestamp` was (kubectl's AGE column); `<unknown>` when there is none."""
    t = parse_time(timestamp)
    if t is None:
        return "<unknown>"
    return human_duration(((now or datetime.now(UTC)) - t).total_seconds())
