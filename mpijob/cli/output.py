"""Printing: tables with rich for people, raw JSON/YAML/names for machines, errors to stderr.

Machine formats go through plain `print` so no rich markup, wrapping or colour can reach them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mpijob.api.errors import ApiError
from mpijob.client.errors import CREDENTIALS_HINT

Obj = dict[str, Any]
FORMATS = ("json", "yaml", "wide", "name")


def stdout() -> Console:
    """A console on the current stdout; wide when piped so rows never wrap."""
    tty = sys.stdout.isatty()
    return Console(file=sys.stdout, highlight=False, soft_wrap=True, width=None if tty else 4096)


def stderr() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=True, stderr=True)


def info(message: str) -> None:
    """A progress/status line for people: stderr, so stdout stays the program's output."""
    print(message, file=sys.stderr, flush=True)


def error(exc: BaseException) -> None:
    """The message and, for API errors, one `* field: message` line per cause (kubectl's shape)."""
    lines = [f"error: {exc}"]
    if isinstance(exc, ApiError) and exc.code == 401:
        lines[0] += f" ({CREDENTIALS_HINT})"
    if isinstance(exc, ApiError) and exc.causes:
        if " is invalid: " in exc.message:  # the causes below repeat what follows, as kubectl prints it
            lines = [f"error: {exc.message.split(' is invalid: ')[0]} is invalid:"]
        for c in exc.causes:
            lines.append(f"* {c.field}: {c.message}" if c.field else f"* {c.message}")
    print("\n".join(lines), file=sys.stderr, flush=True)


def as_list(items: list[Obj]) -> Obj:
    """Several objects as kubectl prints them: a `v1 List`."""
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def dump(data: Any, fmt: str) -> None:
    """Print an object (or a List) as `json` or `yaml`, nothing else on stdout."""
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=4, sort_keys=False) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    sys.stdout.flush()


def table(columns: Sequence[str], rows: Sequence[Sequence[str]], console: Console | None = None) -> None:
    """A kubectl-like borderless table (upper-case headers, columns separated by 3 spaces)."""
    t = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 3, 0, 0), header_style="bold")
    for col in columns:
        t.add_column(col, no_wrap=True, overflow="ignore")
    for row in rows:
        t.add_row(*(Text(str(cell)) for cell in row))  # Text: no markup parsing of data
    console = console or stdout()
    if console.is_terminal:
        console.print(t)
        return
    with console.capture() as captured:
        console.print(t)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
