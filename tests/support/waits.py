"""Waiting is always a poll against a deadline; a deadline that passes fails the test with what was last seen."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from support.timing import scaled

T = TypeVar("T")


def wait_for(probe: Callable[[], T], what: str, timeout: float = 60, interval: float = 0.05,
             ignore: tuple[type[Exception], ...] = ()) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` and the last value. An exception
    of a type in `ignore` counts as "not yet" (a browser list re-rendered under the probe, say)."""
    limit = scaled(timeout)
    deadline = time.monotonic() + limit
    last: Any = None
    while True:
        try:
            last = probe()
        except ignore as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit:.0f}s waiting for {what}; last seen: {last!r}")
        time.sleep(interval)
