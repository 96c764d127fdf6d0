"""Flag values the CLI parses itself (kubectl's durations), and which flag carries each parameter
of the client layer, so an error about a value names what the user typed."""

from __future__ import annotations

import re

from mpijob.client.errors import InvalidArgument

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

# A client-layer parameter → the flag that gives it (only where the value can only come from that flag).
FLAGS = {"timeout": "--timeout", "since": "--since", "pattern": "--grep", "rank": "--rank", "tail": "--tail",
         "for_": "--for"}


def parse_duration(text: str, flag: str = "--timeout") -> float:
    """Seconds in `30s`, `10m`, `1h`, `1h30m`, `250ms` or a bare number of seconds (kubectl's forms), or
    days (`7d`, as `mpijob history --since` takes them)."""
    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        parts = _DURATION.findall(t)
        if not parts or "".join(n + u for n, u in parts) != t:
            raise InvalidArgument(flag, text, "is not a duration", "use a number with a unit, e.g. 30s, 10m, 1h "
                                  "or 1h30m") from None
        value = sum(float(n) * _UNITS[u] for n, u in parts)
    if value < 0:
        raise InvalidArgument(flag, text, "is negative", "use a positive duration such as 10m")
    return value


def message(exc: BaseException) -> str:
    """An error's message, a client parameter named by its flag."""
    if isinstance(exc, InvalidArgument) and exc.param in FLAGS:
        return exc.describe(FLAGS[exc.param])
    return str(exc)
