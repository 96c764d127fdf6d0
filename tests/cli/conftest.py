"""Fixtures for CLI tests: `mpijob(...)` in-process and `mpijob_proc(...)` as a subprocess."""

from cli_support import mpijob, mpijob_proc  # noqa: F401 — re-exported as fixtures
