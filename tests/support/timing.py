"""One factor for every test timeout: a slow machine sets `MPIJOB_TEST_SLOWDOWN` (e.g. 2) instead of editing
timeouts. The waits, the kubectl runner, server start-ups and pytest-timeout's limit all scale through it."""

from __future__ import annotations

import os

SLOWDOWN_ENV = "MPIJOB_TEST_SLOWDOWN"
SLOWDOWN = float(os.environ.get(SLOWDOWN_ENV) or 1)
assert SLOWDOWN > 0, f"{SLOWDOWN_ENV} must be a positive number, got {os.environ.get(SLOWDOWN_ENV)!r}"


def scaled(seconds: float) -> float:
    """A timeout as this machine needs it."""
    return seconds * SLOWDOWN
