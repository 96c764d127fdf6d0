"""The CLI's exit-code contract, so CI pipelines can branch on why a command failed.

The codes of failures are the client layer's categories (`mpijob.client.errors.category`), the same
table the SDK's exception classes come from; only success, a failed job and a wrong command line
are the CLI's own. Documented in README.md and in `mpijob --help` (main.EPILOG).
"""

from __future__ import annotations

from enum import IntEnum

from mpijob.client.errors import Category, category


class Exit(IntEnum):
    OK = 0  # success (for `run`/`wait`: the TrainJob Completed)
    JOB_FAILED = Category.JOB_FAILED  # the TrainJob ended Failed
    USAGE = 2  # the command line is wrong: unknown command/option, missing argument, a flag value outside its choices
    INVALID = Category.INVALID  # bad input: unparsable file or argument, bad kubeconfig/context, rejected object
    NOT_FOUND = Category.NOT_FOUND  # the named object does not exist (404)
    FORBIDDEN = Category.FORBIDDEN  # not allowed (401/403)
    QUOTA = Category.QUOTA  # quota exceeded (403 "exceeded quota", 429 with a quota message)
    TIMEOUT = Category.TIMEOUT  # a wait or request timed out (504, --timeout)
    UNAVAILABLE = Category.UNAVAILABLE  # the server could not be reached / is not running / internal error (5xx)


MEANINGS: dict[Exit, str] = {
    Exit.OK: "ok",
    Exit.JOB_FAILED: "job failed",
    Exit.USAGE: "usage error",
    Exit.INVALID: "invalid input",
    Exit.NOT_FOUND: "not found",
    Exit.FORBIDDEN: "forbidden",
    Exit.QUOTA: "quota exceeded",
    Exit.TIMEOUT: "timed out",
    Exit.UNAVAILABLE: "server unavailable",
}


def summary(per_line: int = 4) -> str:
    """The contract for `--help`: `0 ok · 1 job failed · …`, in short paragraphs (a terminal re-wraps
    a long line, which could split `4 not found` across two lines)."""
    items = [f"{int(e)} {MEANINGS[e]}" for e in Exit]
    rows = [" · ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "\n\n".join(["Exit codes:", *rows])


class UsageError(Exception):
    """A flag or argument value the command cannot take (exit 2, like click's own usage errors).

    Raised for values click cannot check by itself (`get widgets`, `-o xml`); the message names the
    value and the choices.
    """


def exit_code(exc: BaseException) -> Exit | None:
    """The exit code of a failure, None for an exception that is no failure the contract knows."""
    if isinstance(exc, UsageError):
        return Exit.USAGE
    found = category(exc)
    return None if found is None else Exit(found)


def for_exception(exc: BaseException) -> Exit:
    code = exit_code(exc)
    if code is None:
        raise TypeError(f"no exit code for {type(exc).__name__}")
    return code
